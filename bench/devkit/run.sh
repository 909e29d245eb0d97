#!/usr/bin/env bash
# Run `python -m bench` on a bare machine with no network and no RabbitMQ.
#
#   bash bench/devkit/run.sh [BENCH ARGS...]   (as root is fine; .devkit/ filled by fetch.sh)
#   bash bench/devkit/run.sh --series bench/devkit/series.sh   (a series of runs, see there)
#
# 1. unpacks .devkit/debs (Erlang 25 + RabbitMQ 3.10, Debian bookworm) with `dpkg -x` into a
#    private prefix (never into /), points Erlang's `erl` script at that prefix;
# 2. starts RabbitMQ on 127.0.0.1:$DEVKIT_PORT with its data, logs and cookie under $DEVKIT_TMP,
#    and waits until it answers the AMQP handshake;
# 3. installs .devkit/whl into $DEVKIT_TMP/site (PYTHONPATH=$DEVKIT_TMP/site:$PWD);
# 4. runs `python3 -m bench "$@"` (output tee'd to $OUT/bench.txt when $OUT is set);
# 5. stops the broker (and the epmd it started) on exit.
#
# Knobs, for a test beside another broker (defaults are the device's):
#   DEVKIT_PORT=5672  DEVKIT_EPMD_PORT=4369  DEVKIT_NODE=rabbit  DEVKIT_TMP=/tmp
#   DEVKIT_PYTHON=python3   DEVKIT_SKIP_BENCH=1 (set up, check, stop)   DEVKIT_KEEP_BROKER=1
set -uo pipefail

cd "$(dirname "$0")/../.." || exit 2
[ -d bench ] && [ -d workflow_manager ] || { echo "devkit: run from the repo" >&2; exit 2; }
KIT=$PWD/.devkit
PORT=${DEVKIT_PORT:-5672}
EPMD_PORT=${DEVKIT_EPMD_PORT:-4369}
NODE=${DEVKIT_NODE:-rabbit}
T=${DEVKIT_TMP:-/tmp}
PY=$(command -v "${DEVKIT_PYTHON:-python3}") || { echo "devkit: no python3" >&2; exit 2; }
PREFIX=$T/devkit-root          # the debs' files: $PREFIX/usr/lib/{erlang,rabbitmq}
RBASE=$T/devkit-rabbit         # the broker's home, cookie, config, mnesia and logs
SITE=$T/site
BIN=$T/bin
ERLROOT=$PREFIX/usr/lib/erlang
RMQBIN=$PREFIX/usr/lib/rabbitmq/bin
T0=$SECONDS
say() { echo "[devkit +$((SECONDS - T0))s] $*"; }
die() { echo "[devkit] FAILED: $*" >&2; exit 1; }

# --- 1. Erlang and RabbitMQ into the prefix ------------------------------------------------
unpack_deb() {  # dpkg -x, or (no dpkg) the deb's data.tar.* read by Python
    if command -v dpkg-deb >/dev/null 2>&1; then
        dpkg -x "$1" "$PREFIX"
    else
        "$PY" - "$1" "$PREFIX" <<'EOF'
import io, sys, tarfile
data = open(sys.argv[1], "rb").read()
pos = 8  # "!<arch>\n", then 60-byte member headers
while pos < len(data):
    name, size = data[pos:pos + 16].decode().strip().rstrip("/"), int(data[pos + 48:pos + 58])
    body = data[pos + 60:pos + 60 + size]
    if name.startswith("data.tar"):
        tarfile.open(fileobj=io.BytesIO(body)).extractall(sys.argv[2])
    pos += 60 + size + (size & 1)
EOF
    fi
}
if [ ! -x "$ERLROOT/bin/erl" ] || [ ! -d "$RMQBIN" ]; then
    mkdir -p "$PREFIX"
    for deb in "$KIT"/debs/*.deb; do unpack_deb "$deb" || die "unpacking $deb"; done
fi
# Debian's erl hardcodes ROOTDIR=/usr/lib/erlang (whatever ERL_ROOTDIR says): point it here.
for f in "$ERLROOT/bin/erl" "$ERLROOT"/erts-*/bin/erl "$ERLROOT/bin/start" "$ERLROOT"/erts-*/bin/start; do
    [ -f "$f" ] && sed -i "s|=/usr/lib/erlang\b|=$ERLROOT|g; s|\"/usr/lib/erlang/|\"$ERLROOT/|g" "$f"
done
grep -q "ROOTDIR=$ERLROOT" "$ERLROOT/bin/erl" || die "could not rewrite $ERLROOT/bin/erl"

# Shared libraries this image lacks (epmd links libsystemd, crypto.so libcrypto.so.3): take
# only the missing ones from the carried bookworm copies, for the broker's processes alone.
EXTRA_LIB=$PREFIX/extra-lib
missing_libs() {
    LD_LIBRARY_PATH=$EXTRA_LIB ldd "$ERLROOT"/erts-*/bin/{beam.smp,epmd,erlexec,inet_gethost} \
        "$ERLROOT"/lib/crypto-*/priv/lib/crypto.so 2>/dev/null | awk '/not found/ {print $1}' | sort -u
}
if command -v ldd >/dev/null 2>&1; then
    mkdir -p "$EXTRA_LIB"
    for _ in 1 2 3 4; do  # a found lib can itself need a missing one: repeat
        libs=$(missing_libs)
        [ -z "$libs" ] && break
        mkdir -p "$PREFIX/fallback-libs"
        # Python's tarfile, not tar -J: a slim image may have no xz program.
        "$PY" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
            "$KIT/fallback-libs.tar.xz" "$PREFIX/fallback-libs" || die "unpacking fallback-libs"
        for l in $libs; do
            [ -f "$PREFIX/fallback-libs/$l" ] || die "$l is missing and not carried"
            cp "$PREFIX/fallback-libs/$l" "$EXTRA_LIB/"
            say "using the carried $l"
        done
    done
    [ -z "$(missing_libs)" ] || die "still missing: $(missing_libs | tr '\n' ' ')"
fi

# --- 2. The broker -----------------------------------------------------------------------
mkdir -p "$RBASE/home" "$RBASE/log" "$BIN"
rm -rf "$RBASE/mnesia"  # a fresh broker every run: no queues left from an earlier one
cat > "$RBASE/rabbitmq.conf" <<EOF
listeners.tcp.1 = 127.0.0.1:$PORT
loopback_users.guest = true
disk_free_limit.absolute = 50MB
log.console = false
log.file.level = info
EOF
echo '[].' > "$RBASE/enabled_plugins"
: > "$RBASE/rabbitmq-env.conf"  # so the system's /etc/rabbitmq/rabbitmq-env.conf is not read
[ -f "$RBASE/home/.erlang.cookie" ] || {
    "$PY" -c 'import secrets; print(secrets.token_hex(16).upper(), end="")' > "$RBASE/home/.erlang.cookie"
    chmod 400 "$RBASE/home/.erlang.cookie"
}
# Everything the server and its CLI need, in one file the rabbitmqctl shim sources too.
cat > "$RBASE/env.sh" <<EOF
export HOME=$RBASE/home
export PATH=$ERLROOT/bin:\$PATH
export LD_LIBRARY_PATH=$EXTRA_LIB\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export ERL_EPMD_PORT=$EPMD_PORT ERL_EPMD_ADDRESS=127.0.0.1
export RABBITMQ_NODENAME=$NODE@localhost RABBITMQ_USE_LONGNAME=false
export RABBITMQ_NODE_PORT=$PORT RABBITMQ_DIST_PORT=$((PORT + 20000))
export RABBITMQ_CTL_DIST_PORT_MIN=$((PORT + 40000)) RABBITMQ_CTL_DIST_PORT_MAX=$((PORT + 40010))
export RABBITMQ_CONF_ENV_FILE=$RBASE/rabbitmq-env.conf
export RABBITMQ_CONFIG_FILE=$RBASE/rabbitmq.conf
export RABBITMQ_ADVANCED_CONFIG_FILE=$RBASE/advanced.config
export RABBITMQ_ENABLED_PLUGINS_FILE=$RBASE/enabled_plugins
export RABBITMQ_MNESIA_BASE=$RBASE/mnesia RABBITMQ_LOG_BASE=$RBASE/log
export RABBITMQ_PID_FILE=$RBASE/rabbit.pid
export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
export ERL_INETRC=$RBASE/erl_inetrc
EOF
# The node is NODE@localhost: resolve localhost even where /etc/hosts lacks it.
printf '{host, {127,0,0,1}, ["localhost"]}.\n{lookup, [file, native]}.\n' > "$RBASE/erl_inetrc"
printf '#!/bin/sh\n. %s\nexec %s "$@"\n' "$RBASE/env.sh" "$RMQBIN/rabbitmqctl" > "$BIN/rabbitmqctl"
chmod +x "$BIN/rabbitmqctl"

epmd_was_up=0
(. "$RBASE/env.sh"; "$ERLROOT/bin/epmd" -names >/dev/null 2>&1) && epmd_was_up=1
amqp_answers() {  # the AMQP 0-9-1 handshake: the broker's first frame is connection.start
    "$PY" - "$PORT" <<'EOF'
import socket, sys
try:
    with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2) as s:
        s.sendall(b"AMQP\x00\x00\x09\x01")
        s.settimeout(5)
        sys.exit(0 if s.recv(7)[:1] == b"\x01" else 1)
except OSError:
    sys.exit(1)
EOF
}
amqp_answers && die "something already answers on 127.0.0.1:$PORT (set DEVKIT_PORT)"

BROKER_PID=
stop_broker() {
    [ -n "$BROKER_PID" ] || return 0
    if [ "${DEVKIT_KEEP_BROKER:-0}" = 1 ]; then say "broker left running (pid $BROKER_PID)"; return 0; fi
    say "stopping the broker"
    kill -TERM "$BROKER_PID" 2>/dev/null  # rabbitmq-server passes TERM on: a clean stop
    for _ in $(seq 60); do kill -0 "$BROKER_PID" 2>/dev/null || break; sleep 0.5; done
    kill -KILL -- "-$BROKER_PID" 2>/dev/null  # its process group (setsid), if anything is left
    if [ "$epmd_was_up" = 0 ]; then (. "$RBASE/env.sh"; "$ERLROOT/bin/epmd" -kill >/dev/null 2>&1); fi
    BROKER_PID=
}
broker_log() {
    echo "---- $RBASE/log (tail) ----" >&2
    tail -n 40 "$RBASE/log/stdout.log" "$RBASE"/log/*.log >&2 2>/dev/null
    [ -n "${OUT:-}" ] && cat "$RBASE"/log/*.log > "$OUT/rabbit.log" 2>/dev/null
}
trap stop_broker EXIT
trap 'exit 130' INT TERM

say "starting RabbitMQ on 127.0.0.1:$PORT (node $NODE@localhost, epmd port $EPMD_PORT)"
(. "$RBASE/env.sh"; exec setsid "$RMQBIN/rabbitmq-server" > "$RBASE/log/stdout.log" 2>&1 < /dev/null) &
BROKER_PID=$!
for i in $(seq 240); do
    amqp_answers && break
    kill -0 "$BROKER_PID" 2>/dev/null || { broker_log; die "the broker exited while starting"; }
    [ "$i" = 240 ] && { broker_log; die "the broker did not answer in 120 s"; }
    sleep 0.5
done
say "RabbitMQ answers on 127.0.0.1:$PORT"
"$BIN/rabbitmqctl" -q await_startup --timeout 60 >/dev/null 2>&1 ||
    say "warning: rabbitmqctl await_startup failed (the AMQP port answers; going on)"

# --- 3. Python packages --------------------------------------------------------------------
rm -rf "$SITE"
if ! "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" \
        "$KIT"/whl/*.whl; then
    say "pip failed: unzipping the wheels instead"
    "$PY" - "$SITE" "$KIT"/whl/*.whl <<'EOF' || die "installing the wheels"
import sys, zipfile
for wheel in sys.argv[2:]:
    zipfile.ZipFile(wheel).extractall(sys.argv[1])
EOF
fi
"$PY" -m compileall -q -j 0 "$SITE" workflow_manager pyworker amqp_outage bench >/dev/null 2>&1
export PYTHONPATH=$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}
export PATH=$BIN:$PATH
export AMQP_URL=amqp://guest:guest@127.0.0.1:$PORT/  # the manager's default, when no --amqp-url
for tool in "pyworker:pyworker" "workflow-manager:workflow_manager"; do
    printf '#!/bin/sh\nexec %s -m %s "$@"\n' "$PY" "${tool#*:}" > "$BIN/${tool%%:*}"
    chmod +x "$BIN/${tool%%:*}"
done
"$PY" - <<'EOF' || die "the Python packages do not import"
import importlib
for name in ("aio_pika", "aiosqlite", "pydantic", "fastapi", "fastapi_offline", "uvicorn",
             "orjson", "uvloop", "yaml", "httpx", "prometheus_client", "jmespath", "croniter",
             "jsonschema", "inflect", "workflow_manager.cli", "workflow_manager.server",
             "pyworker.cli", "bench.cli"):
    importlib.import_module(name)
try:
    import psycopg, psycopg_pool  # noqa: F401  (only for --db postgresql://...)
except ImportError as exc:
    print(f"[devkit] note: no PostgreSQL driver ({exc}); SQLite journals only")
EOF

echo "nproc: $(nproc)"
echo "python: $("$PY" -c 'import sys; print(sys.version.split()[0], sys.executable)')"
echo "rabbitmq: $("$BIN/rabbitmqctl" version 2>/dev/null | tail -n 1) ($(basename "$PREFIX"/usr/lib/rabbitmq/lib/rabbitmq_server-*)), erlang/otp $(cat "$ERLROOT"/releases/*/OTP_VERSION 2>/dev/null)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
say "setup done"

# --- 4. The bench --------------------------------------------------------------------------
[ "${DEVKIT_SKIP_BENCH:-0}" = 1 ] && { say "DEVKIT_SKIP_BENCH=1: not running the bench"; exit 0; }
export PYTHONUNBUFFERED=1
if [ "${1:-}" = "--series" ]; then
    bash "$2"
    rc=$?
elif [ -n "${OUT:-}" ]; then
    "$PY" -m bench "$@" 2>&1 | tee "$OUT/bench.txt"
    rc=${PIPESTATUS[0]}
else
    "$PY" -m bench "$@"
    rc=$?
fi
say "python -m bench exited $rc"
[ "$rc" = 0 ] || broker_log
exit "$rc"
