#!/usr/bin/env bash
# The project's test command (`make test`, also run by .ci/run): installs what the tests need,
# then checks formatting, vets every module and runs every test of every module.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
eval "$(scripts/deps.sh --env)"

mods=$(go list -m -f '{{.Dir}}')   # fails the script if go.work is broken
# Modules that hold Go packages (a freshly created module may have none yet).
pkgmods=""
for m in $mods; do
  if [ -n "$(find "$m" -name '*.go' -not -path '*/testdata/*' | head -1)" ]; then pkgmods="$pkgmods $m"; fi
done
echo "== gofmt"
unformatted=$(gofmt -l $mods)
if [ -n "$unformatted" ]; then echo "gofmt: these files need formatting:"; echo "$unformatted"; exit 1; fi

echo "== go vet"
for m in $pkgmods; do (cd "$m" && go vet ./...); done

echo "== build"
export RMQHA_BIN_DIR=$ROOT/bin
scripts/build.sh "$RMQHA_BIN_DIR"

echo "== go test"
patterns=$(for m in $pkgmods; do echo "$(awk '/^module /{print $2; exit}' "$m/go.mod")/..."; done)
[ -n "$patterns" ]
# -p 2: this runs on 2 cores; packages that start processes size themselves for that.
go test -count=1 -p 2 -timeout 30m ${GOTEST_FLAGS:-} $patterns

echo "== go test -race (role switching: request paths against promotions and demotions)"
(cd libs/broker && go test -count=1 -race -run 'Role|Promote|Demote|Fence|LearnMaster' ${GOTEST_FLAGS:-} .)
(cd libs/failover && go test -count=1 -race -run 'Role|Promote|Demote|Fence|LearnMaster' ${GOTEST_FLAGS:-} ./...)
echo "== go test -race (the CommitLog's tail cache, the index verifier and the recovery scan's read-ahead: reads beside appends, cuts and replacements)"
(cd libs/commitlog && go test -count=1 -race -run 'TailCache|FreshReads|IndexRebuild|IndexVerify|IndexDamaged|TestScan' ${GOTEST_FLAGS:-} .)
