#!/bin/sh
# Builds the statically linked release binary and checks that it is what we ship:
#   1. `file` and `ldd` say it is static, 2. it is under 25 MB,
#   3. it runs in an empty root (chroot: only the binary; no /dev, /proc, /etc, CA store or libc),
#      creates its database, hashes the first admin's password, answers `opsdeck healthcheck`,
#      signs in over HTTP, and stops with exit code 0 on SIGTERM,
#   4. the systemd unit verifies against it, and (when cargo-deb is installed) the .deb holds the binary,
#      the unit, the sysusers file and the env file.
# Needs root (chroot). Usage: packaging/check-static.sh   (CARGO_TARGET_DIR is honoured)
set -eu
cd "$(dirname "$0")/.."

target_dir=${CARGO_TARGET_DIR:-target}
triple=x86_64-unknown-linux-gnu
bin="$target_dir/$triple/release/opsdeck"
limit=$((25 * 1024 * 1024))

fail() { echo "FAIL: $*" >&2; exit 1; }

echo "== build"
RUSTFLAGS='-C target-feature=+crt-static --cfg getrandom_backend="linux_getrandom"' \
    cargo build --release --locked --target "$triple"

echo "== static"
file_out=$(file -b "$bin")
echo "file: $file_out"
echo "$file_out" | grep -Eq 'static-pie linked|statically linked' || fail "file does not say static"
ldd_out=$(ldd "$bin" 2>&1 || true)
echo "ldd:  $ldd_out"
echo "$ldd_out" | grep -Eq 'statically linked|not a dynamic executable' || fail "ldd lists shared libraries"

echo "== size"
size=$(stat -c %s "$bin")
echo "size: $size bytes ($(awk "BEGIN { printf \"%.1f\", $size / 1048576 }") MiB; limit 25 MiB)"
[ "$size" -lt "$limit" ] || fail "binary is $size bytes, over 25 MiB"

echo "== empty root"
[ "$(id -u)" -eq 0 ] || fail "run as root (chroot)"
chroot_bin=$(command -v chroot) || fail "chroot not found"
jail=$(mktemp -d /tmp/opsdeck-jail.XXXXXX)
pid=
cleanup() {
    [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true
    rm -rf "$jail"
}
trap cleanup EXIT INT TERM
cp "$bin" "$jail/opsdeck"
echo "contents: $(cd "$jail" && find . -mindepth 1 | tr '\n' ' ')"
port=$(awk 'BEGIN { srand(); print 20000 + int(rand() * 20000) }')
pass=check-static-password
jail_env="PORT=$port HOSTNAME=127.0.0.1 SVC_DATA_DIR=/data AUTH_PASS=$pass SVC_ARGON2_MEMORY_KIB=19456"
# shellcheck disable=SC2086
env -i $jail_env "$chroot_bin" "$jail" /opsdeck serve >"$jail.log" 2>&1 &
pid=$!
ok=
for _ in $(seq 1 100); do
    # shellcheck disable=SC2086
    if env -i $jail_env "$chroot_bin" "$jail" /opsdeck healthcheck 2>/dev/null; then ok=1; break; fi
    sleep 0.1
done
[ -n "$ok" ] || { cat "$jail.log"; fail "no answer to healthcheck in the empty root"; }
echo "healthcheck (run inside the empty root): ok"
grep -q 'bundled root certificates' "$jail.log" || { cat "$jail.log"; fail "the bundled CA roots were not used"; }
echo "outbound TLS: no system CA store, using the bundled root certificates"
login=$(curl -s -o /dev/null -w '%{http_code}' -H 'content-type: application/json' \
    -d "{\"username\":\"admin\",\"password\":\"$pass\"}" "http://127.0.0.1:$port/api/auth/login")
[ "$login" = 200 ] || fail "sign-in answered $login"
echo "sign-in (Argon2id, random session token, no /dev/urandom): 200"
[ -f "$jail/data/svc.db" ] || fail "no database in the empty root"
kill -TERM "$pid"
code=0
wait "$pid" || code=$?
pid=
[ "$code" -eq 0 ] || { cat "$jail.log"; fail "exit code $code after SIGTERM"; }
grep -q 'database closed' "$jail.log" || fail "the database was not closed"
echo "SIGTERM: exit code 0, database closed"
rm -f "$jail.log"

echo "== systemd unit"
unit_dir=$(mktemp -d)
sed "s|^ExecStart=/usr/bin/opsdeck|ExecStart=$(realpath "$bin")|" packaging/opsdeck.service >"$unit_dir/opsdeck.service"
if command -v systemd-analyze >/dev/null 2>&1; then
    systemd-analyze verify "$unit_dir/opsdeck.service" || fail "systemd-analyze verify"
    echo "systemd-analyze verify: ok"
else
    echo "systemd-analyze not installed: skipped"
fi
rm -rf "$unit_dir"

echo "== .deb"
if cargo deb --version >/dev/null 2>&1; then
    deb=$(cargo deb --no-build --target "$triple" 2>/dev/null | tail -n 1)
    contents=$(dpkg-deb -c "$deb")
    for path in ./usr/bin/opsdeck ./usr/lib/systemd/system/opsdeck.service ./usr/lib/sysusers.d/opsdeck.conf ./etc/opsdeck/opsdeck.env; do
        echo "$contents" | grep -q " $path\$" || fail "$path missing from $deb"
    done
    echo "$(basename "$deb"): $(stat -c %s "$deb") bytes; binary, unit, sysusers and env file present"
else
    echo "cargo-deb not installed (cargo install cargo-deb): skipped"
fi

echo "ALL CHECKS PASSED"
