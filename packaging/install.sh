#!/bin/sh
# Installs OpsDeck as a hardened systemd service and starts it:
#   /usr/bin/opsdeck, /etc/systemd/system/opsdeck.service, /usr/lib/sysusers.d/opsdeck.conf (the
#   `opsdeck` user), /etc/opsdeck/opsdeck.env (kept when it exists); state in /var/lib/opsdeck.
#
# Usage (as root, from the repository):  packaging/install.sh [BINARY]
#   BINARY defaults to the static build (target/x86_64-unknown-linux-gnu/release/opsdeck), else
#   target/release/opsdeck.
#   DESTDIR=/some/root packaging/install.sh   only copies the files under that root (no user, no start).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
dest=${DESTDIR:-}
target=${CARGO_TARGET_DIR:-$root/target}

bin=${1:-}
if [ -z "$bin" ]; then
    for candidate in "$target/x86_64-unknown-linux-gnu/release/opsdeck" "$target/release/opsdeck"; do
        if [ -x "$candidate" ]; then bin=$candidate; break; fi
    done
fi
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
    echo "install.sh: no opsdeck binary found; build it first (see the README) or pass its path" >&2
    exit 1
fi
if [ -z "$dest" ] && [ "$(id -u)" -ne 0 ]; then
    echo "install.sh: run as root (or set DESTDIR to stage the files)" >&2
    exit 1
fi

install -D -m 0755 "$bin" "$dest/usr/bin/opsdeck"
install -D -m 0644 "$here/opsdeck.service" "$dest/etc/systemd/system/opsdeck.service"
install -D -m 0644 "$here/opsdeck.sysusers" "$dest/usr/lib/sysusers.d/opsdeck.conf"
if [ -e "$dest/etc/opsdeck/opsdeck.env" ]; then
    echo "keeping $dest/etc/opsdeck/opsdeck.env"
else
    install -D -m 0640 "$here/opsdeck.env.example" "$dest/etc/opsdeck/opsdeck.env"
fi
echo "installed $("$dest/usr/bin/opsdeck" --version) to $dest/usr/bin/opsdeck"

if [ -n "$dest" ]; then
    echo "DESTDIR set: not creating the user nor starting the service"
    exit 0
fi

if command -v systemd-sysusers >/dev/null 2>&1; then
    systemd-sysusers /usr/lib/sysusers.d/opsdeck.conf
elif ! getent passwd opsdeck >/dev/null; then
    useradd --system --user-group --home-dir /var/lib/opsdeck --no-create-home --shell /usr/sbin/nologin opsdeck
fi
systemctl daemon-reload
systemctl enable --now opsdeck.service
systemctl restart opsdeck.service
sleep 1
if /usr/bin/opsdeck healthcheck; then
    echo "OpsDeck is running: http://localhost:3005/ (settings: /etc/opsdeck/opsdeck.env)"
else
    echo "OpsDeck did not answer yet: systemctl status opsdeck; journalctl -u opsdeck" >&2
fi
echo "First start without AUTH_PASS? The generated admin password is in: journalctl -u opsdeck | grep -A3 'First run'"
