#!/usr/bin/env bash
# The project's run command (`make run`): installs what the group needs, builds every binary into
# bin/, and runs a whole local broker group on loopback (Consul, NATS, namesrv, a SYNC_MASTER
# master, a slave, metasync) with data under run/. Ctrl-C stops everything. The brokers
# authenticate each other with a random HA secret made on the first run (run/ha.secret, 0600,
# next to run/registration.secret) and reused afterwards.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
eval "$(scripts/deps.sh --env)"
scripts/build.sh bin
exec bin/localgroup -bin bin -data "${RMQHA_RUN_DIR:-run}" "$@"
