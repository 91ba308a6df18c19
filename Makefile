# agentbox — see README.md. Every target works on a fresh Debian machine as root.
GO       ?= go
BIN      := bin/agentbox
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X main.version=$(VERSION)
STATICCHECK_VERSION := v0.8.2
PREFIX   ?= /usr/local
DESTDIR  ?=

export CGO_ENABLED := 0

.PHONY: build install test unit integration integration-backends integration-runsc engine images check bench demo clean

## build: the static agentbox binary (also the in-container init)
build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/agentbox

## install: the static binary as $(DESTDIR)$(PREFIX)/bin/agentbox (PREFIX defaults to /usr/local)
install: build
	install -d '$(DESTDIR)$(PREFIX)/bin'
	install -m 0755 $(BIN) '$(DESTDIR)$(PREFIX)/bin/agentbox'

# gotestsum prints each package (unit) or test (integration) as it ends,
# and the full output of failures, so a long run shows progress.
GOTESTSUM := $(GO) run gotest.tools/gotestsum@v1.12.3

## unit: tests that need no engine
unit:
	@echo "unit tests (one line per package as it finishes) ..."
	$(GOTESTSUM) --format pkgname --format-hide-empty-pkg -- -count=1 ./...

## test: the whole suite (unit tests, then integration tests against a real engine)
test: build unit integration

## engine: make sure an engine answers (starts a private dockerd if none does)
engine: build
	$(BIN) engine start

## images: build the sandbox images locally (no registry)
images: engine
	$(BIN) images build

## integration: end-to-end tests against the real engine; fail, never skip, without one
## (first the sandbox suites under Podman and gVisor, then everything under the default runtime)
integration: images integration-backends integration-runsc
	@echo "integration tests (one line per test as it finishes; test images are removed at the end) ..."
	AGENTBOX_BIN=$(CURDIR)/$(BIN) $(GOTESTSUM) --format testname -- -tags integration -count=1 -p 1 -timeout 30m ./integration/...

## integration-backends: the sandbox conformance, escape and egress suites under Podman's Docker API
BACKEND_TESTS := TestSandboxConformance|TestEscape|TestSandboxHardening|TestEgressAllowlist|TestEgressModeNoneFailsFast|TestEgressGitClone|TestEgressAttack|TestEgressProxyFailsToStartFailsClosed|TestEgressWorkspaceSocket|TestEgressToolchains
integration-backends: images
	AGENTBOX_SANDBOX_BACKEND=podman AGENTBOX_BIN=$(CURDIR)/$(BIN) $(GO) test -tags integration -count=1 -p 1 -timeout 20m -run '$(BACKEND_TESTS)' ./integration/

## integration-runsc: the same suites under gVisor (sandbox.runtime: runsc; `engine start` installs
## Debian's runsc if missing and registers it with the private engine, live). About 1.5 min.
integration-runsc: images
	AGENTBOX_SANDBOX_RUNTIME=runsc $(BIN) engine start >/dev/null
	AGENTBOX_SANDBOX_RUNTIME=runsc AGENTBOX_BIN=$(CURDIR)/$(BIN) $(GO) test -tags integration -count=1 -p 1 -timeout 20m -run '$(BACKEND_TESTS)' ./integration/

## check: formatting, vet and staticcheck
check: bin/staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags integration ./...
	bin/staticcheck ./...

bin/staticcheck:
	GOBIN=$(CURDIR)/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

## bench: benchmarks against peers on this machine, printed as ratios
bench: build
	@command -v bwrap >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && { apt-get install -y -q bubblewrap >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q bubblewrap >/dev/null; }; } ; } || echo "bench: bubblewrap not installed (apt-get install bubblewrap): no bwrap row"
	AGENTBOX_SANDBOX_RUNTIME=runsc $(BIN) engine start >/dev/null  # registers gVisor too: bench sandbox adds the agentbox-pool-runsc row
	$(BIN) bench sandbox
	$(GO) test -run '^$$' -bench . -benchmem -cpu 1 ./classifier/  # classifier: cmds/cpu-s = classifications per second per core; x-parse-only = ratio to the mvdan/sh parser alone
	$(GO) test -run '^$$' -bench '^BenchmarkEgress$$' -benchtime 3x ./sandbox/egress/  # egress: 32 MiB HTTPS downloads and small requests on new connections, directly vs through init's relay + the proxy, interleaved: x_proxy/direct (target >= 0.8) and added-p50-ms (target <= 2)
	$(GO) test -run '^$$' -bench SocketSet -benchtime 20x -cpu 1 ./sandbox/docker/  # socket masks at a hand-over, 20k directories: walk-ms (remembering walk) vs feed-ms (snapshot watcher's entry changes), x_walk/feed their ratio
	$(GO) test -run '^$$' -bench 'BatchReads|PipelineOverhead' -benchtime 50x ./tools/  # tools: x_serial/batch = speed-up of a parallel batch of 10 Reads; x_direct = pipeline cost over calling the tool directly
	@command -v rg >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && { apt-get install -y -q ripgrep >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q ripgrep >/dev/null; }; } ; } || echo "bench: ripgrep not installed (apt-get install ripgrep): search rows have no rg peer"
	$(BIN) bench tools  # built-in tools: Grep/Glob over the Go source tree vs rg (target <= 2x), 10 Reads parallel vs serial, Write/Edit through the pool (p50 target 10 ms)
	$(BIN) bench egress --n 10  # the same curl on the host and in a sandbox through init's relay + the egress proxy: 32 MiB HTTPS downloads (target sandbox >= 0.8x host) and new-connection p50 (target <= 2 ms added)
	$(BIN) bench toolchains  # agentbox's own go vet / go test ./classifier/ and two parallel busy loops through the Bash tool and the warm pool vs native, cold and warm (target warm <= 1.15x)
	$(BIN) bench load  # 8 MCP sessions x 100 mixed calls on one `agentbox mcp --http`, a 3 s shell in some: Write/Edit p50 <= 50 ms and p95 <= 500 ms, calls/s, containers/s, 0 leaked, journal and audit complete; again with snapshot.serial_calls: true for the serial/concurrent ratios
	$(BIN) bench snapshot  # snapshot store vs a shadow git repo on a copy of $$(go env GOROOT)/src: first <= 1/3 git, no-change and one-change <= 1/2, restore <= 1x, store <= 1.05x tree

## demo: the main job end to end (a scripted MCP client drives `agentbox mcp` on a sample project;
## its first step starts the engine and builds the images when needed, quietly)
demo: build
	@$(GO) run ./cmd/agentbox-demo -agentbox $(BIN)

clean:
	rm -rf bin
