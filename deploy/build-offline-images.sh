#!/usr/bin/env bash
# Builds every image of the compose group on a machine that cannot pull images, FROM scratch,
# from local static binaries:
#   rmqha/namesrv, rmqha/master, rmqha/slave, rmqha/metasync   from scripts/build.sh's output
#   rmqha/consul, rmqha/nats                                   from scripts/deps.sh's binaries
# each with the static /bin/healthcheck probe. deploy/docker-compose.offline.yml uses them.
#
# Usage: deploy/build-offline-images.sh [BIN_DIR]
#   BIN_DIR   folder with the service binaries (default: $RMQHA_BIN_DIR, else bin/); they are
#             built there with scripts/build.sh when namesrv, master, slave, healthcheck or
#             secretinit is missing (the master and slave images carry secretinit, which the
#             compose files' one-shot secrets service runs). metasync is packed when its binary is there, skipped with a line otherwise.
#   RMQHA_OFFLINE_TAG   image tag (default offline)
#   RMQHA_CONSUL_BIN, RMQHA_NATS_SERVER_BIN   the Consul and nats-server binaries (default: what
#             scripts/deps.sh --env reports, installing them if needed)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-${RMQHA_BIN_DIR:-$ROOT/bin}}
case "$BIN" in /*) ;; *) BIN=$PWD/$BIN ;; esac
TAG=${RMQHA_OFFLINE_TAG:-offline}
log() { echo "build-offline-images: $*" >&2; }

for s in namesrv master slave healthcheck secretinit; do
  if [ ! -x "$BIN/$s" ]; then
    log "building the binaries into $BIN"
    "$ROOT/scripts/build.sh" "$BIN"
    break
  fi
done
if [ -z "${RMQHA_CONSUL_BIN:-}" ] || [ -z "${RMQHA_NATS_SERVER_BIN:-}" ]; then
  eval "$("$ROOT/scripts/deps.sh" --env)"
fi

# The classic builder sends the whole context: give each image a folder with only its files.
CTX=$(mktemp -d)
trap 'rm -rf "$CTX"' EXIT

image() { # image NAME DOCKERFILE TARGET CONF FILE... (CONF: a deploy/conf file or "")
  local name=$1 dockerfile=$2 target=$3 conf=$4 dir=$CTX/$1 f
  shift 4
  mkdir -p "$dir/deploy/prebuilt" "$dir/deploy/conf"
  [ -n "$conf" ] && cp "$ROOT/deploy/conf/$conf" "$dir/deploy/conf/"
  for f in "$@"; do
    [ -f "$f" ] || { log "missing $f"; exit 1; }
    f=$(readlink -f "$f") # the deps cache links to its binaries
    # Hard links are cheap; copy when the file is on another file system.
    ln "$f" "$dir/deploy/prebuilt/" 2>/dev/null || cp "$f" "$dir/deploy/prebuilt/"
  done
  local args=(-f "$ROOT/deploy/$dockerfile" -t "rmqha/$name:$TAG" -q)
  [ -n "$target" ] && args+=(--target "$target")
  log "rmqha/$name:$TAG"
  # The classic builder prints a deprecation notice on every build: keep only real errors.
  docker build "${args[@]}" "$dir" 2>&1 >/dev/null | { grep -v -e DEPRECATED -e 'Install the buildx' -e 'docs.docker.com/go/buildx' -e '^[[:space:]]*$' >&2 || true; }
  return "${PIPESTATUS[0]}"
}

image namesrv namesrv/Dockerfile prebuilt namesrv.conf "$BIN/namesrv" "$BIN/healthcheck"
image master master/Dockerfile prebuilt broker.conf "$BIN/master" "$BIN/healthcheck" "$BIN/secretinit"
image slave slave/Dockerfile prebuilt broker.conf "$BIN/slave" "$BIN/healthcheck" "$BIN/secretinit"
if [ -x "$BIN/metasync" ]; then
  image metasync metasync/Dockerfile prebuilt metasync.conf "$BIN/metasync" "$BIN/healthcheck"
else
  log "skipped rmqha/metasync:$TAG (no $BIN/metasync)"
fi
image consul consul/Dockerfile "" "" "$RMQHA_CONSUL_BIN" "$BIN/healthcheck"
image nats nats/Dockerfile "" "" "$RMQHA_NATS_SERVER_BIN" "$BIN/healthcheck"
