#!/bin/bash
# A series of bench runs on the device, after run.sh's set-up (broker up, wheels on
# PYTHONPATH): `bash bench/devkit/run.sh --series bench/devkit/series.sh`. It runs the bench of
# this tree ("new") and of .devkit/old (an earlier tree with today's bench, made here with
# `mkdir -p .devkit/old && git archive REV | tar -x -C .devkit/old && rm -r .devkit/old/bench
# && cp -r bench .devkit/old/`), alternating, unpinned and pinned. Output to $OUT/series.txt.
set -u
OUTF=${OUT:-/tmp}/series.txt
run() {
    label=$1; dir=$2; shift 2
    echo "=== $label: python -m bench $* ($(date -u +%H:%M:%S), load $(cut -d' ' -f1 /proc/loadavg))" | tee -a "$OUTF"
    (cd "$dir" && timeout 240 python3 -m bench "$@") 2>&1 | grep -v "^queues:" | tee -a "$OUTF"
}
for round in 1 2; do
    run new . --only throughput,latency
    run old .devkit/old --only throughput,latency
done
run new . --only throughput,latency --pin
run old .devkit/old --only throughput,latency --pin
run new . --only fanout,recovery

