#!/usr/bin/env bash
# Builds every service binary and every tool into the folder given (default bin/).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-bin}
case "$OUT" in /*) ;; *) OUT=$ROOT/$OUT ;; esac
mkdir -p "$OUT"
cd "$ROOT"
pkgs=()
for d in services/* tools/cmd/*; do
  [ -d "$d" ] && ls "$d"/*.go >/dev/null 2>&1 && grep -qs '^package main' "$d"/*.go && pkgs+=("./$d")
done
CGO_ENABLED=0 go build -trimpath -o "$OUT/" "${pkgs[@]}"
