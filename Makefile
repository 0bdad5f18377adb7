# Trellis developer tasks. `make test` is the test command CI runs (see
# .ci/run, which also provides Postgres).

GO      ?= go
SQLC    ?= $(GO) run github.com/sqlc-dev/sqlc/cmd/sqlc@v1.30.0
TRELLIS ?= $(GO) run ./cmd/trellis
# golangci-lint, pinned, built from source by go run (cached after the
# first build), so that a fresh machine needs nothing but Go; v2.15.0
# needs Go 1.26, which GOTOOLCHAIN=auto fetches when the local Go is older.
GOLANGCI_LINT ?= $(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0

.PHONY: all bench-smoke help test test-short soak generate check-generated lint lint-examples example bench bench-peers bench-river test-peers screenshots ci

## all: the default: lint, lint-examples and test.
all: lint lint-examples test

## help: list every target with its description. The description is the
## first sentence of the "## target: text" comment above the target; a
## target without one fails, named (docs/docs_test.go runs make help).
help:
	@awk ' \
		/^## [A-Za-z0-9_-]+:/ { cur = $$2; sub(/:$$/, "", cur); t = $$0; sub(/^## [^:]*: */, "", t); doc[cur] = t; next } \
		/^## / && cur != "" { t = $$0; sub(/^## */, "", t); doc[cur] = doc[cur] " " t; next } \
		{ cur = "" } \
		/^[A-Za-z0-9_-]+:/ && !/:=/ { t = $$1; sub(/:.*/, "", t); if (!(t in seen)) { seen[t] = 1; targets[++n] = t } } \
		END { \
			bad = 0; \
			for (i = 1; i <= n; i++) { \
				t = targets[i]; \
				if (!(t in doc)) { printf "make help: target %s has no \"## %s: description\" comment\n", t, t > "/dev/stderr"; bad = 1; continue } \
				d = doc[t]; if (match(d, /\. /)) d = substr(d, 1, RSTART); gsub(/\$$\$$/, "$$", d); \
				printf "  %-16s %s\n", t, d \
			} \
			exit bad \
		}' $(firstword $(MAKEFILE_LIST))

## test: every test, with the race detector. Postgres tests use
## TRELLIS_DATABASE_URL (default: local server, database test); they skip
## without a database unless TRELLIS_REQUIRE_DB=1.
test:
	$(GO) test -race -count=1 ./...

## test-short: the tests without the race detector, for a quick loop.
test-short:
	$(GO) test -count=1 ./...

## soak: the fault suite at full size (3,000 runs, 20 kill -9s, 6 Postgres
## stops and crashes per test) on throwaway clusters; about 5 minutes.
soak:
	TRELLIS_SOAK=1 $(GO) test -count=1 -v -timeout 60m -run '^TestFault' ./runtime/store/pgstore/

## generate: regenerate all checked-in generated code: workflow code
## (go generate) and the Postgres queries (sqlc, pinned version).
generate:
	$(GO) generate ./... ./testdata/acceptance/... ./testdata/multiproc/... ./testdata/deploy/...
	$(SQLC) generate

## check-generated: fail when generated code in the tree is stale.
check-generated: generate
	@git diff --exit-code -- . || (echo "generated code is stale: run make generate and commit" >&2; exit 1)
	@test -z "$$(git status --porcelain --untracked-files=all -- '*.gen.go' '*.mmd' '*.dot' runtime/store/pgstore/internal/dbsqlc)" || \
		(echo "generate created untracked files:" >&2; git status --porcelain -- '*.gen.go' '*.mmd' '*.dot' runtime/store/pgstore/internal/dbsqlc >&2; exit 1)

## lint: formatting, vet and golangci-lint (.golangci.yml says which
## linters and why).
lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo "gofmt needed" >&2; exit 1)
	$(GO) vet ./... ./testdata/acceptance/... ./testdata/multiproc/... ./testdata/opswalk/... ./testdata/deploy/...
	$(GOLANGCI_LINT) run ./... ./testdata/acceptance/... ./testdata/multiproc/... ./testdata/opswalk/... ./testdata/deploy/...
	cd testdata/riverpeer && $(GO) vet ./...
	cd testdata/dbospeer && $(GO) vet ./...

## lint-examples: trellis lint over every workflow file in the repository
## that is meant to be valid, one application at a time: workflows linted
## together are checked as one deployment (an event that starts two of
## them must have one payload schema), and the examples and the test
## workflows are not deployed together.
lint-examples:
	$(TRELLIS) lint examples
	$(TRELLIS) lint testdata/acceptance
	$(TRELLIS) lint testdata/multiproc
	$(TRELLIS) lint testdata/deploy/v1
	$(TRELLIS) lint testdata/deploy/v2

## example: run the order-processing example (memory store, virtual clock).
example:
	$(GO) run ./examples/orders

## bench-smoke: every benchmark of the engine once, so that a benchmark
## whose own checks fail breaks CI instead of rotting (figures meaningless).
bench-smoke:
	$(GO) test -count=1 -run '^$$' -bench . -benchtime 1x ./runtime/

## test-peers: the benchmark peers' own tests, so that they keep building
## and working against the versions they pin: testdata/riverpeer burns down
## 200 jobs and testdata/dbospeer 50 workflows of each shape on
## TRELLIS_DATABASE_URL (a few seconds each).
test-peers:
	cd testdata/riverpeer && $(GO) test -count=1 ./...
	cd testdata/dbospeer && $(GO) test -count=1 ./...

## bench: the benchmark harness, trellis bench (docs/performance.md has
## its figures).
bench:
	$(TRELLIS) bench

## bench-peers: River's and DBOS's burn-downs beside trellis bench's chain-5
## and diamond-6 burn-downs, at equal concurrency, alternating PASSES times
## (default 2) on one database: BENCH_URL, default $$TRELLIS_DATABASE_URL,
## else the local server. River (testdata/riverpeer) and DBOS Transact
## (testdata/dbospeer) run from modules of their own, so that each is a
## dependency of this benchmark only. Each pass runs, at N = 100 and then
## N = 1,000 at once: River's no-op jobs with MaxWorkers N (its
## benchmark's fetch timing: FetchCooldown 2ms, FetchPollInterval 20ms);
## DBOS's chain-5 and diamond-6 workflows, DBOS_WORKFLOWS (5,000) of each, with
## checkpointed no-op steps, worker concurrency N and a 2 ms queue poll;
## Trellis with -concurrency N (claims of 200 at 1,000). Last, out of the
## box: River's default fetch timing (FetchCooldown 100ms,
## FetchPollInterval 1s) and DBOS's default 1 s poll, at 100. PASSES=2
## took 24 minutes on the development machine under other work's load
## (load average 12-26 on two cores), each engine 5-10x slower than on a
## quiet machine. Compare River's jobs/s and DBOS's steps/s with the
## burn-downs' tasks/s.
BENCH_URL ?= $(or $(TRELLIS_DATABASE_URL),postgres://postgres@127.0.0.1:5432/test?sslmode=disable)
PASSES ?= 2
DBOS_WORKFLOWS ?= 5000
bench-peers:
	@mkdir -p .bench
	cd testdata/riverpeer && $(GO) build -o ../../.bench/riverpeer .
	cd testdata/dbospeer && $(GO) build -o ../../.bench/dbospeer .
	$(GO) build -o .bench/trellis ./cmd/trellis
	@for i in $$(seq 1 $(PASSES)); do \
		echo "== pass $$i of $(PASSES)"; \
		for n in 100 1000; do \
			claims=100; [ $$n -ge 1000 ] && claims=200; \
			.bench/riverpeer -database-url '$(BENCH_URL)' -jobs 100000 -max-workers $$n || exit 1; \
			.bench/dbospeer -database-url '$(BENCH_URL)' -workflows $(DBOS_WORKFLOWS) -concurrency $$n || exit 1; \
			.bench/trellis bench -database-url '$(BENCH_URL)' -scenarios throughput -workers 1 -runs 20000 -steady-duration 2s \
				-concurrency $$n -claim-batch $$claims || exit 1; \
		done; \
	done
	.bench/riverpeer -database-url '$(BENCH_URL)' -jobs 20000 -max-workers 100 -fetch-cooldown 100ms -fetch-poll-interval 1s
	.bench/dbospeer -database-url '$(BENCH_URL)' -workflows 1000 -concurrency 100 -poll 1s -shapes chain-5

## bench-river: the former name of bench-peers, which runs River's
## burn-down beside DBOS's and trellis bench's.
bench-river: bench-peers

## screenshots: PNGs of the dashboard's main pages, shown in the docs,
## into runtime/dashboard/screenshots: headless chromium (Debian package
## chromium) over a day of order runs on Postgres, on a virtual clock.
screenshots:
	TRELLIS_SCREENSHOTS=$(CURDIR)/runtime/dashboard/screenshots TRELLIS_REQUIRE_CHROMIUM=1 TRELLIS_REQUIRE_DB=1 \
		$(GO) test -count=1 -run '^TestScreenshots$$' ./runtime/dashboard/

## ci: what .ci/run runs once Postgres is up.
ci: lint lint-examples check-generated test test-peers bench-smoke
