# The README's two commands are `make run` (a whole local broker group) and
# `make test` (every test, installing what the tests need first).
SHELL := /bin/bash

.PHONY: run test deps build bench bench-all fmt vet clean

run:
	scripts/run.sh $(RUN_ARGS)

test:
	scripts/test.sh

deps:
	scripts/deps.sh

build:
	scripts/build.sh bin

bench:
	scripts/bench.sh

bench-all:
	BENCH_ALL=1 scripts/bench.sh

fmt:
	gofmt -w $$(git ls-files '*.go' | xargs -n1 dirname | sort -u)

vet:
	for m in $$(go list -m -f '{{.Dir}}'); do (cd $$m && go vet ./...) || exit 1; done

clean:
	rm -rf bin run
