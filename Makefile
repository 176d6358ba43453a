# bleadvd: the one front door for people and CI. `make help` lists the targets.

SWIFT        ?= swift
PREFIX       ?= /usr/local
BUILD_FLAGS  ?= -c release --static-swift-stdlib

.PHONY: help deps build test unit-test testbed-test bench-dbus clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

deps: ## install the Debian packages the build and tests need (apt-get update first)
	@scripts/install-deps.sh

build: deps ## build release binaries (static Swift runtime)
	$(SWIFT) build $(BUILD_FLAGS)

unit-test: deps ## unit and bus tests (private dbus-daemon, no radio)
	$(SWIFT) test --disable-xctest

testbed-test: ## end-to-end scenarios in the VM test bed with a real bluetoothd
	testbed/setup.sh
	testbed/run.sh testbed/scenarios/*.sh

test: ## everything: unit, bus and end-to-end tests
	@scripts/test-all.sh

bench-dbus: deps ## D-Bus round trips: our layer against the same loop in C
	$(SWIFT) build -c release --product dbus-bench
	scripts/bench-dbus.sh

clean: ## remove build products (keeps the test bed cache)
	rm -rf .build
