#!/usr/bin/env bash
# Fill .devkit/ (ignored) with what bench/devkit/run.sh needs on a bare machine with no network
# and no RabbitMQ (the lent 16-core "device" of docs/operating/performance.md): RabbitMQ's and
# Erlang's Debian packages, the Python 3.12 wheels the manager, pyworker and the bench import
# (the versions this checkout's .venv has), and copies of the shared libraries epmd links that
# such a machine may lack. Run here, from the repo root, with network: bash bench/devkit/fetch.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
KIT=.devkit
rm -rf "$KIT/debs" "$KIT/whl" && mkdir -p "$KIT/debs" "$KIT/whl"

# RabbitMQ 3.10 and the Erlang applications it starts (Debian bookworm's).
(cd "$KIT/debs" && apt-get download -q rabbitmq-server erlang-base erlang-asn1 erlang-crypto \
    erlang-eldap erlang-ftp erlang-inets erlang-mnesia erlang-os-mon erlang-parsetools \
    erlang-public-key erlang-runtime-tools erlang-snmp erlang-ssl erlang-syntax-tools \
    erlang-tftp erlang-tools erlang-xmerl)

# Wheels for CPython 3.12 of every distribution the device's image lacks, at .venv's versions.
NEEDED="aio-pika aiormq pamqp yarl multidict propcache idna pydantic pydantic-core
annotated-types typing-inspection typing-extensions aiosqlite inflect fastapi starlette
annotated-doc uvicorn click fastapi-offline orjson jmespath croniter python-dateutil tzdata
jsonschema jsonschema-specifications referencing rpds-py attrs opentelemetry-api psycopg
psycopg-binary psycopg-pool"
FROZEN=$(.venv/bin/python -m pip freeze)
for name in $NEEDED; do
    pin=$(printf '%s\n' "$FROZEN" | grep -i "^${name//-/[-_]}==" || true)
    .venv/bin/python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 -d "$KIT/whl" "${pin:-$name}"
done

# epmd links libsystemd (and it the rest); run.sh uses these only where ldd finds one missing.
libs=$(mktemp -d)
for lib in libsystemd.so.0 libcap.so.2 libgcrypt.so.20 libgpg-error.so.0 liblz4.so.1 \
    liblzma.so.5 libzstd.so.1 libtinfo.so.6 libcrypto.so.3 libz.so.1; do
    cp -L "$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}')" "$libs/"
done
tar -cJf "$KIT/fallback-libs.tar.xz" -C "$libs" .
rm -rf "$libs"
du -sh "$KIT"
