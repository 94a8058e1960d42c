#!/usr/bin/env bash
# Installs what the group and its tests need, idempotently, into a cache outside the work tree:
#   - a Consul agent built from the Go module proxy (github.com/hashicorp/consul, pinned),
#   - nats-server (pinned) for the local group and container images,
#   - every Go module the workspace needs.
# Quick when everything is already there. Prints nothing but progress lines.
# Usage: scripts/deps.sh            (install)
#        scripts/deps.sh --env      (install, then print `export` lines for PATH and binaries)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${RMQHA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rmqha}
CONSUL_VERSION=1.14.11
NATS_VERSION=v2.12.1
CONSUL_BIN=$CACHE/consul-$CONSUL_VERSION/consul
NATS_BIN=$CACHE/nats-server-$NATS_VERSION/nats-server
mkdir -p "$CACHE/bin"
log() { echo "deps: $*" >&2; }

build_consul() {
  [ -x "$CONSUL_BIN" ] && return 0
  # One build at a time per machine (CI and a developer may start together).
  exec 9>"$CACHE/consul.lock"
  flock 9
  [ -x "$CONSUL_BIN" ] && return 0
  log "building consul $CONSUL_VERSION from the Go module proxy (about 10 CPU-minutes, once per machine)"
  local dir src
  dir=$(GOFLAGS=-mod=mod go mod download -json "github.com/hashicorp/consul@v$CONSUL_VERSION" \
        | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
  [ -d "$dir" ] || { log "could not download github.com/hashicorp/consul@v$CONSUL_VERSION"; return 1; }
  src=$CACHE/consul-src-$CONSUL_VERSION
  rm -rf "$src"; cp -r "$dir" "$src"; chmod -R u+w "$src"
  # Its go.mod points api, sdk and proto-public at folders the module zip lacks: use the published
  # versions instead (keep every other replace line).
  sed -i -E '/^replace github.com\/hashicorp\/consul\/(api|sdk|proto-public) => /d' "$src/go.mod"
  mkdir -p "$(dirname "$CONSUL_BIN")"
  (cd "$src" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -o "$CONSUL_BIN.tmp" .)
  mv "$CONSUL_BIN.tmp" "$CONSUL_BIN"
  rm -rf "$src"
  "$CONSUL_BIN" version | head -1 >&2
}

install_nats() {
  [ -x "$NATS_BIN" ] && return 0
  log "installing nats-server $NATS_VERSION"
  mkdir -p "$(dirname "$NATS_BIN")"
  CGO_ENABLED=0 GOBIN=$(dirname "$NATS_BIN") go install "github.com/nats-io/nats-server/v2@$NATS_VERSION"
}

modules() {
  local stamp=$CACHE/modules.stamp sum
  sum=$(cat "$ROOT"/go.work "$ROOT"/*/*/go.sum "$ROOT"/*/go.sum 2>/dev/null | sha256sum | cut -c1-16)
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ] && return 0
  log "downloading Go modules"
  local mods
  mods=$(cd "$ROOT" && go list -m -f '{{.Dir}}')
  for m in $mods; do (cd "$m" && go mod download); done
  echo "$sum" > "$stamp"
}

build_consul
install_nats
modules
ln -sf "$CONSUL_BIN" "$CACHE/bin/consul"
ln -sf "$NATS_BIN" "$CACHE/bin/nats-server"
if [ "${1:-}" = "--env" ]; then
  echo "export PATH=$CACHE/bin:\$PATH"
  echo "export RMQHA_CONSUL_BIN=$CONSUL_BIN"
  echo "export RMQHA_NATS_SERVER_BIN=$NATS_BIN"
fi
