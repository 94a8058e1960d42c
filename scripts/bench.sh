#!/usr/bin/env bash
# Runs every benchmark of every module (`make bench`). Each benchmark reports its result beside a
# baseline measured in the same run (disk write rate, fdatasync rate, loopback bandwidth or round
# trip, async vs sync) as extra columns; read the ratios, not the absolute numbers, on shared
# machines. BENCH selects benchmarks (default all), BENCHTIME their length (default 1s).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
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
