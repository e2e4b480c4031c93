#!/usr/bin/env python3
"""SSE fan-out: N clients on /api/events; one change; time until each client has it (loopback only)."""
import asyncio, json, sys, time, urllib.request

HOST, PORT, KEY = "127.0.0.1", int(sys.argv[1]), "bench-key"
N = int(sys.argv[2]) if len(sys.argv) > 2 else 1000


async def client(ready, marker, arrivals):
    reader, writer = await asyncio.open_connection(HOST, PORT, limit=1 << 20)
    writer.write(f"GET /api/events HTTP/1.1\r\nHost: {HOST}\r\nx-api-key: {KEY}\r\nAccept: text/event-stream\r\n\r\n".encode())
    await writer.drain()
    seen_connected = False
    while True:
        line = await reader.readline()
        if not line:
            return
        if b'"connected"' in line and not seen_connected:
            seen_connected = True
            ready.release()
        if marker[0] and marker[0].encode() in line:
            arrivals.append(time.perf_counter())
            writer.close()
            return


async def main():
    ready = asyncio.Semaphore(0)
    marker, arrivals = [None], []
    tasks = [asyncio.create_task(client(ready, marker, arrivals)) for _ in range(N)]
    for _ in range(N):
        await asyncio.wait_for(ready.acquire(), 30)
    marker[0] = f"fanout-{time.time_ns()}"
    body = json.dumps({"action": "add", "message": marker[0]}).encode()
    req = urllib.request.Request(f"http://{HOST}:{PORT}/api/logs", data=body, method="POST",
                                 headers={"Content-Type": "application/json", "x-api-key": KEY})
    sent = time.perf_counter()
    await asyncio.get_running_loop().run_in_executor(None, lambda: urllib.request.urlopen(req).read())
    await asyncio.wait_for(asyncio.gather(*tasks), 30)
    lat = sorted((a - sent) * 1000 for a in arrivals)
    p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]
    print(f"RESULT clients={len(lat)} p50_ms={p(0.5):.2f} p99_ms={p(0.99):.2f} max_ms={lat[-1]:.2f}")


asyncio.run(main())
