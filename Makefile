# sexton — build, test and measure.
GO          ?= go
BIN         ?= bin/sexton
STATICCHECK ?= $(shell $(GO) env GOPATH)/bin/staticcheck
PKGS        := ./...
# Test machinery (crash points, the ack gate, the store's test hook) is
# compiled only with this tag: tests and the integration binary use it,
# `make build` does not.
TESTTAGS    := testhooks
# Fuzz targets: package:FuzzName. `make test` runs each for a number of
# executions (no wall-clock deadline to race); `make fuzz` for minutes each.
FUZZ_TARGETS := $(shell grep -rl --include='*_test.go' '^func Fuzz' . 2>/dev/null | xargs -r grep -H -o '^func Fuzz[A-Za-z0-9_]*' | sed -E 's|^\./([^:]*)/[^/:]*:func (Fuzz.*)|\1:\2|' | sort -u)
FUZZ_SHORT  ?= 40000x
FUZZ_LONG   ?= 2m
# The Python client's tests need msgpack and pytest; Debian's python3 has
# them as python3-msgpack and python3-pytest (.ci/run installs them).
PYTHON      ?= /usr/bin/python3

.PHONY: all build test lint fmt-check vet staticcheck unit release-check monitoring-check fuzz-short fuzz bench run soak clean python-test units-check model-short model durability jepsen image deploy-check deploy-render

all: build

# What `sexton version` reports for a build from this checkout; the
# -X values win over the build information Go embeds (internal/buildinfo).
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo "(devel)")
COMMIT      ?= $(shell git rev-parse HEAD 2>/dev/null)
BUILD_DATE  ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS     := -X 'sexton/internal/buildinfo.Version=$(VERSION)' -X 'sexton/internal/buildinfo.Commit=$(COMMIT)' -X 'sexton/internal/buildinfo.Date=$(BUILD_DATE)'

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/sexton

run: build
	$(BIN) dev

# deploy-check (the image and the Helm chart, a module of its own) runs
# in it too: under half a minute of CPU with a warm build cache; with a
# cold one it first compiles and analyses the Helm SDK and the Kubernetes
# types, about ten CPU-minutes.
test: lint monitoring-check unit release-check units-check deploy-check fuzz-short model-short python-test

lint: fmt-check vet staticcheck

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would rewrite:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)
	$(GO) vet -tags $(TESTTAGS) $(PKGS)

staticcheck:
	$(STATICCHECK) $(PKGS)
	$(STATICCHECK) -tags $(TESTTAGS) $(PKGS)

unit:
	$(GO) test -race -tags $(TESTTAGS) -count=1 -timeout 12m $(PKGS)

# The holder's durability audit (holder/DESIGN.md, "Durability audit"):
# each fsync left out in turn makes its power-loss test fail. `make test`
# proves two rows of it; this proves them all (about half a minute).
durability:
	SEXTON_DURABILITY_AUDIT=all $(GO) test -tags $(TESTTAGS) -count=1 -timeout 10m -run '^TestDurabilityAudit$$' -v ./holder/

# The release build's side of the tag: crash points and test hooks are
# inert there (SEXTON_CRASH_AT given to a release holder does not kill it).
release-check:
	$(GO) test -count=1 -run '^TestReleaseBuild' ./holder/...

# The Python client (clients/python) against the built binary: sexton dev,
# a three-master cluster, and one with mutual TLS whose certificates come
# from clients/python/tests/certgen. Skipped, saying why, when $(PYTHON)
# lacks msgpack or pytest.
CERTGEN     ?= bin/sexton-certgen
python-test: build
	@if ! $(PYTHON) -c 'import msgpack, pytest' >/dev/null 2>&1; then \
		echo "python-test: SKIPPED: $(PYTHON) cannot import msgpack and pytest (apt-get install python3-msgpack python3-pytest)"; \
	else \
		$(GO) build -o $(CERTGEN) ./clients/python/tests/certgen && \
		SEXTON_BIN=$(CURDIR)/$(BIN) SEXTON_CERTGEN=$(CURDIR)/$(CERTGEN) PYTHONDONTWRITEBYTECODE=1 $(PYTHON) -m pytest -q -p no:cacheprovider clients/python/tests; \
	fi

# The shipped alert rules: syntax, and every alert firing and not firing
# (deploy/monitoring/alerts_test.yml). promtool comes with Debian's
# prometheus package, which .ci/run installs.
PROMTOOL    ?= promtool
monitoring-check:
	@if ! command -v $(PROMTOOL) >/dev/null 2>&1; then \
		echo "monitoring-check: SKIPPED, promtool not found (apt-get install prometheus)"; exit 0; fi; \
	cd deploy/monitoring && $(PROMTOOL) check rules alerts.yml && $(PROMTOOL) test rules alerts_test.yml

# systemd-analyze verify of every unit in deploy/systemd (skipped where
# the tool does not exist), each with ExecStart at the built binary.
units-check: build
	@scripts/verify-units.sh $(BIN)

fuzz-short:
	@scripts/fuzz.sh $(FUZZ_SHORT) $(FUZZ_TARGETS)

fuzz:
	@scripts/fuzz.sh $(FUZZ_LONG) $(FUZZ_TARGETS)

# The Promela model of the deletion protocol and of the operator procedures
# (rebuild, prefix jobs, restore; model/README.md), checked with spin:
# exhaustively at a small bound in `make test`, at a bigger one here;
# both also prove that each weakened variant is caught. Skipped, saying so,
# when spin or gcc is missing.
model-short:
	@scripts/model.sh short

model:
	@scripts/model.sh long

bench:
	$(GO) test -run='^$$' -bench=. -benchmem -tags $(TESTTAGS) -count=1 -timeout 30m ./fsm ./snapshot ./holder ./transport

# Long soaks and drills that CI does not run.
soak: build
	SEXTON_DRILL_ROUNDS=12 $(GO) test -tags $(TESTTAGS) -count=1 -timeout 60m -v ./integration -run TestFailoverDrill

# The nemesis run for long: every fault kind for NEMESIS_DURATION against
# three masters and two holders, then porcupine's verdict and the deletion
# promise on disk. It prints the seed (SEXTON_NEMESIS_SEED=... replays a
# schedule) and a summary: operations, indeterminate ones, faults by kind,
# the verdict, acknowledged removes checked on disk. On a violation
# porcupine's HTML visualization is written to NEMESIS_OUT. `make test`
# runs the same test for 40 seconds.
NEMESIS_DURATION ?= 10m
NEMESIS_OUT      ?= $(CURDIR)/nemesis-out
jepsen:
	mkdir -p $(NEMESIS_OUT)
	SEXTON_NEMESIS_DURATION=$(NEMESIS_DURATION) SEXTON_PORCUPINE_DIR=$(NEMESIS_OUT) \
		$(GO) test -tags $(TESTTAGS) -count=1 -timeout 60m -v ./integration -run '^TestNemesisLinearizable$$'

# The container image as a tarball (`docker load -i bin/sexton-image.tar`),
# built without a Docker daemon by deploy/check/cmd/mkimage: one layer with
# a static binary, user 65532. deploy/check is a Go module of its own, so
# the Helm SDK and the Kubernetes types stay out of sexton's go.mod.
IMAGE       ?= bin/sexton-image.tar
IMAGE_TAG   ?= sexton:$(subst +,-,$(VERSION))
image:
	CGO_ENABLED=0 GOOS=linux $(GO) build -ldflags "$(LDFLAGS)" -o bin/sexton-image-bin ./cmd/sexton
	cd deploy/check && $(GO) run ./cmd/mkimage -bin ../../bin/sexton-image-bin -out ../../$(IMAGE) -tag '$(IMAGE_TAG)' -version '$(VERSION)' -commit '$(COMMIT)' -created '$(BUILD_DATE)'

# The image builder's test and the Helm chart's: rendered, linted and every
# object strict-decoded into its Kubernetes type, offline; deploy/kubernetes
# in sync with the chart's default render; the Dockerfile's rules; and
# deploy/README.md's walkthrough run offline. Part of `make test`.
deploy-check:
	CGO_ENABLED=0 GOOS=linux $(GO) build -o bin/sexton-static ./cmd/sexton
	cd deploy/check && $(GO) vet ./... && $(STATICCHECK) ./... && SEXTON_STATIC_BIN=$(CURDIR)/bin/sexton-static $(GO) test -count=1 -timeout 5m ./...

# Regenerates deploy/kubernetes/sexton.yaml from the chart's defaults.
deploy-render:
	cd deploy/check && SEXTON_DEPLOY_RENDER=1 $(GO) test -count=1 -run '^TestRenderedManifestsInSync$$' .

clean:
	rm -rf bin
