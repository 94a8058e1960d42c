#!/usr/bin/env bash
# `make bench`: one table of the performance goals (tools/cmd/bench TestBenchTable), each row a
# broker number beside its anchor measured in the same run (disk write and fdatasync rates,
# loopback TCP bandwidth and round trip, JetStream R1/R3 on in-process nats-servers), the ratio,
# and the CPU µs per message of master, slave and client. About two minutes on 2 cores; read the
# ratios, not the absolute numbers, on shared machines.
#
# BENCH_ALL=1 (`make bench-all`) also runs every module's go benchmarks (BENCH selects them,
# default all; BENCHTIME their length, default 1s), the bench matrix and the failover
# leadership-cost benchmark, each with its own same-run baseline.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
RMQHA_BENCH=1 go test -count=1 -run '^TestBenchTable$' -v -timeout 30m ./tools/cmd/bench |
  grep -vE '^(=== RUN|--- PASS|PASS$|ok )'
[ -n "${BENCH_ALL:-}" ] || exit 0
eval "$(scripts/deps.sh --env)"
patterns=$(for m in $(go list -m -f '{{.Dir}}'); do
  [ -n "$(find "$m" -name '*_test.go' | head -1)" ] && echo "$(awk '/^module /{print $2; exit}' "$m/go.mod")/..."
done)
go test -run '^$' -bench "${BENCH:-.}" -benchtime "${BENCHTIME:-1s}" -benchmem -p 1 -timeout 60m $patterns
# End to end: the bench tool against a group of real processes (SYNC/ASYNC master, 1 and 64
# producers, Go client and raw frames, consume from master and slave), beside the store-level rates
# of libs/commitlog measured in the same run.
RMQHA_BENCH=1 go test -count=1 -run TestBenchMatrix -v -timeout 30m ./tools/cmd/bench | grep -vE '^=== RUN'
# Automatic failover: SYNC sends to a failover group's elected master against a statically
# configured group, same binaries (the cost of leadership on the send path).
RMQHA_BENCH=1 go test -count=1 -run TestLeadershipCostBench -v -timeout 30m ./tools/failovertest | grep -vE '^=== RUN'
