# provider-terdut. The two commands that matter:
#   make dev    local control plane + terdut-server test double + provider + examples
#   make test   everything CI checks: generated code, lint, unit, contract and e2e tests

SHELL := /usr/bin/env bash
GO ?= go
# Every go command here builds as the runtime images are built (static, no
# build paths), so a package compiled once serves the tools, the tests and the
# images alike: cold, the images' compile of the provider is then half done by
# the time `make dev` reaches it.
export CGO_ENABLED := 0
export GOFLAGS += -trimpath
# golangci-lint runs every linter .golangci.yml does not disable (govet and
# staticcheck among them) and checks the formatting.
GOLANGCI_LINT := $(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.12.2
# Its result cache lives in the checkout: a cache shared between clones
# replays another clone's issues under that clone's absolute paths, which the
# path rules of .golangci.yml (relative, anchored) then fail to exclude.
export GOLANGCI_LINT_CACHE ?= $(CURDIR)/_output/golangci-lint-cache
OUT := _output/bin
# A semantic version (package dependencies are constraints on it): the
# latest v* tag as git describe says, or v0.0.0-COMMITS-gHASH before any tag.
VERSION ?= $(shell git describe --tags --match 'v*' --dirty 2>/dev/null || echo v0.0.0-$$(git rev-list --count HEAD)-g$$(git rev-parse --short HEAD))
# Where packages are published and depend on each other (make publish).
REGISTRY ?= xpkg.example.com/ryuvia
PLATFORMS ?= linux/amd64,linux/arm64
LDFLAGS := -X git.ryuvia.com/niklas/provider-terdut/internal/version.Version=$(VERSION)

.PHONY: all build generate check-generate check lint unit fuzz render images packages publish e2e chaos chaos-model test bench bench-scale dev dev-down cluster-build

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(OUT)/provider ./cmd/provider
	$(GO) build -o $(OUT)/terdut-double ./cmd/terdut-double
	$(GO) build -o $(OUT)/function ./cmd/function
	$(GO) build -ldflags "$(LDFLAGS)" -o $(OUT)/discover ./cmd/discover

## generate: deepcopy, managed methods and CRDs (package/provider/crds) from
## apis/, and the XRDs (package/configuration/apis) from apis/platform.
generate:
	$(GO) generate ./...

## check-generate: fail when the committed generated code is stale.
check-generate: generate
	@if [ -n "$$(git status --porcelain -- apis package/provider/crds package/configuration/apis)" ]; then \
		echo "Generated code is stale; run 'make generate' and commit:"; \
		git status --porcelain -- apis package/provider/crds package/configuration/apis; exit 1; \
	fi
	@go mod tidy -diff >/dev/null || { echo "go.mod/go.sum are not tidy; run 'go mod tidy' and commit:"; go mod tidy -diff; exit 1; }
	@echo "generated code is up to date, go.mod tidy"

## lint: golangci-lint with .golangci.yml (modelled on crossplane-runtime's),
## over every package and build tag (e2e, render).
lint:
	$(GOLANGCI_LINT) run ./...
	$(GO) vet -tags bench ./cmd/provider/ ./internal/controller/generic/

## unit: unit tests and the contract tests against the terdut-server double
## (set TERDUT_URL and TERDUT_TOKEN to run the contract tests against a real one).
unit:
	$(GO) test -count=1 ./...

## render: `crossplane render` of the Compositions against the composition
## function, compared with golden files (test/render/testdata/*/want.yaml;
## `make render UPDATE=1` rewrites them).
render: cluster-build
	CRANK=$$($(GO) run ./cluster/local/stackctl path crank) $(GO) test -tags render -count=1 ./test/render/... $(if $(UPDATE),-args -update)

## images: the provider's and the function's runtime images, without Docker
## (cluster/images): static binaries on an empty base, CA certificates,
## user 65532, OCI labels, for PLATFORMS; an index in _output/images/NAME and
## a tarball per platform. The same commit gives the same digests.
images:
	$(GO) run ./cluster/images build -version $(VERSION) -platforms $(PLATFORMS)

## packages: the provider and function packages with their runtime image
## embedded (one per platform), and the Configuration package depending on
## $(REGISTRY)/{provider,function}-terdut >= $(VERSION); in _output/xpkg.
packages: images
	$(GO) run ./cluster/images package -version $(VERSION) -registry $(REGISTRY) -platforms $(PLATFORMS)
	@ls -l _output/xpkg

## publish: push the three packages to $(REGISTRY) (REGISTRY=host/org),
## refusing a provider or function package without its runtime image.
publish: packages
	$(GO) run ./cluster/images publish -version $(VERSION) -registry $(REGISTRY) -platforms $(PLATFORMS)

## e2e: the end-to-end suite against a real kube-apiserver + Crossplane core
## (with 10 crash trials, the fault storm and the tenancy escapes); then no
## secret the doubles issued may appear in its output.
e2e: cluster-build
	@mkdir -p _output
	set -o pipefail; E2E_ISSUED_HASHES=$(CURDIR)/_output/e2e-issued.sha256 $(GO) test -tags e2e -count=1 -timeout 80m -v ./test/e2e/... 2>&1 | tee _output/e2e.log
	$(GO) run ./internal/tools/leakcheck -hashes _output/e2e-issued.sha256 _output/e2e.log

## chaos: the crash trials alone, TRIALS of them (default 100).
TRIALS ?= 100
chaos: cluster-build
	@mkdir -p _output
	set -o pipefail; CHAOS_TRIALS=$(TRIALS) E2E_ISSUED_HASHES=$(CURDIR)/_output/chaos-issued.sha256 $(GO) test -tags e2e -count=1 -timeout 240m -v -run 'TestChaos$$|TestNoKeyLeaked' ./test/e2e/... 2>&1 | tee _output/chaos.log
	$(GO) run ./internal/tools/leakcheck -hashes _output/chaos-issued.sha256 _output/chaos.log

## chaos-model: the model-based test of the external clients (a numbered,
## reproducible random walk of spec changes, crashes and server faults,
## checked after every step) for STEPS steps from walk number WALK (WALKS
## walks); `make unit` runs 3 walks of 1,500 steps. A failure prints the
## walk's number and the shortest failing walk.
WALK ?= 1
WALKS ?= 1
STEPS ?= 100000
chaos-model:
	MODEL_WALK=$(WALK) MODEL_WALKS=$(WALKS) MODEL_STEPS=$(STEPS) $(GO) test -count=1 -timeout 240m -v -run '^TestModel$$' ./internal/controller/model/

## fuzz: every fuzz target for FUZZTIME (short and bounded; the committed
## seed corpora in testdata/fuzz also run in every `make unit`). FUZZTIME is
## a count of inputs (Go's "Nx"), not a time: on a loaded machine a time ran
## out while the fuzzer still replayed its corpus, and the target failed with
## "context deadline exceeded". A failing target prints the last 40 lines of
## its output (the failing input, or why the fuzzer stopped).
FUZZTIME ?= 20000x
FUZZ_TARGETS := FuzzAnswers:./internal/clients/terdut FuzzHeaders:./internal/clients/terdut \
	FuzzCanonicalMatcher:./internal/clients/terdut FuzzHandlers:./internal/terdutdouble \
	FuzzSameDuration:./internal/controller/extclient
fuzz:
	@set -eo pipefail; for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t%%:*} ($(FUZZTIME))"; \
		out=$$($(GO) test -run '^$$' -fuzz "^$${t%%:*}$$" -fuzztime $(FUZZTIME) $${t#*:} 2>&1) || { echo "$$out" | tail -40; exit 1; }; \
		echo "$$out" | tail -2; \
	done

## check: the inner loop, before every commit (a few minutes on two cores):
## generated code up to date, lint, unit and contract tests (with the docs'
## links). `make test` is the whole suite.
check: check-generate lint unit

test: check-generate lint unit fuzz render packages e2e

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./internal/...

## bench-scale: provider-terdut with 100, 300, 1,000 and 5,000 managed
## resources (and teams of 50 switches, --naive, foreign Secrets, a noisy
## neighbour) and crossplane-contrib's provider-http (built from its module,
## cached) on the same 1,000, on the local control plane against the double at
## +20 ms; prints tables, writes _output/bench/scale.{json,svg}. BENCH_ARGS
## adds flags (see test/scale).
bench-scale: cluster-build
	$(GO) run ./test/scale $(BENCH_ARGS)

## cluster-build: every binary the local control plane and the suite run
## (crank and Alertmanager only the tests do), built once from the Go module
## proxy, two at a time with kube-apiserver first, and cached in
## ~/.cache/provider-terdut/bin. `make dev` builds only what it runs.
cluster-build:
	$(GO) run ./cluster/local/stackctl build

## dev: the control plane, the double, the provider installed through the
## package manager, the examples (Ready as soon as the API server, Crossplane
## and the provider run), then the nodes and the claims; stays up until Ctrl-C.
dev:
	$(GO) run ./cluster/local/stackctl dev

dev-down:
	$(GO) run ./cluster/local/stackctl down -name dev
