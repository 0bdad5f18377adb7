# Trellis developer tasks. `make test` is the test command CI runs (see
# .ci/run, which also provides Postgres).

GO      ?= go
SQLC    ?= $(GO) run github.com/sqlc-dev/sqlc/cmd/sqlc@v1.30.0
TRELLIS ?= $(GO) run ./cmd/trellis
# golangci-lint, pinned, built from source by go run (cached after the
# first build), so that a fresh machine needs nothing but Go; v2.15.0
# needs Go 1.26, which GOTOOLCHAIN=auto fetches when the local Go is older.
GOLANGCI_LINT ?= $(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0

.PHONY: all bench-smoke help test test-short soak generate check-generated lint lint-examples example bench bench-river screenshots ci

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
	$(GO) generate ./... ./testdata/acceptance/... ./testdata/multiproc/...
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
	$(GO) vet ./... ./testdata/acceptance/... ./testdata/multiproc/... ./testdata/opswalk/...
	$(GOLANGCI_LINT) run ./... ./testdata/acceptance/... ./testdata/multiproc/... ./testdata/opswalk/...
	cd testdata/riverpeer && $(GO) vet ./...

## lint-examples: trellis lint over every workflow file in the repository
## that is meant to be valid, one application at a time: workflows linted
## together are checked as one deployment (an event that starts two of
## them must have one payload schema), and the examples and the test
## workflows are not deployed together.
lint-examples:
	$(TRELLIS) lint examples
	$(TRELLIS) lint testdata/acceptance
	$(TRELLIS) lint testdata/multiproc

## example: run the order-processing example (memory store, virtual clock).
example:
	$(GO) run ./examples/orders

## bench-smoke: every benchmark of the engine once, so that a benchmark
## whose own checks fail breaks CI instead of rotting (figures meaningless).
bench-smoke:
	$(GO) test -count=1 -run '^$$' -bench . -benchtime 1x ./runtime/

## bench: the benchmark harness, trellis bench (docs/performance.md has
## its figures).
bench:
	$(TRELLIS) bench

## bench-river: River's no-op burn-down beside trellis bench's chain-5 and
## diamond-6 burn-downs. River runs from testdata/riverpeer, a module of
## its own, so that River is a dependency of this benchmark only; they
## alternate twice on the same database: BENCH_URL, default $$TRELLIS_DATABASE_URL, else the
## local server. Compare River's jobs/s with the burn-down tasks/s. Each
## pass runs River with its benchmark's settings (MaxWorkers 2,000,
## FetchCooldown 2ms, FetchPollInterval 20ms) and with MaxWorkers 100, as
## many jobs at once as a Trellis engine runs steps by default; then
## Trellis at the engine's defaults (100 steps at once) and with 1,000
## steps at once (claims of 200). Last, on 20,000 jobs, River out of the
## box: its default fetch timing (FetchCooldown 100ms, FetchPollInterval
## 1s), with MaxWorkers 100 (River has no default; its package doc uses 100).
BENCH_URL ?= $(or $(TRELLIS_DATABASE_URL),postgres://postgres@127.0.0.1:5432/test?sslmode=disable)
bench-river:
	@mkdir -p .bench
	cd testdata/riverpeer && $(GO) build -o ../../.bench/riverpeer .
	$(GO) build -o .bench/trellis ./cmd/trellis
	@for i in 1 2; do \
		.bench/riverpeer -database-url '$(BENCH_URL)' -jobs 100000 || exit 1; \
		.bench/riverpeer -database-url '$(BENCH_URL)' -jobs 100000 -max-workers 100 || exit 1; \
		.bench/trellis bench -database-url '$(BENCH_URL)' -scenarios throughput -workers 1 -runs 20000 -steady-duration 2s || exit 1; \
		.bench/trellis bench -database-url '$(BENCH_URL)' -scenarios throughput -workers 1 -runs 20000 -steady-duration 2s \
			-concurrency 1000 -claim-batch 200 || exit 1; \
	done
	.bench/riverpeer -database-url '$(BENCH_URL)' -jobs 20000 -max-workers 100 -fetch-cooldown 100ms -fetch-poll-interval 1s

## screenshots: PNGs of the dashboard's main pages, shown in the docs,
## into runtime/dashboard/screenshots: headless chromium (Debian package
## chromium) over a day of order runs on Postgres, on a virtual clock.
screenshots:
	TRELLIS_SCREENSHOTS=$(CURDIR)/runtime/dashboard/screenshots TRELLIS_REQUIRE_CHROMIUM=1 TRELLIS_REQUIRE_DB=1 \
		$(GO) test -count=1 -run '^TestScreenshots$$' ./runtime/dashboard/

## ci: what .ci/run runs once Postgres is up.
ci: lint lint-examples check-generated test bench-smoke
