-- GET with the API key; the path comes from the command line.
wrk.headers["x-api-key"] = "bench-key"
