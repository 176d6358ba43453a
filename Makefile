# bleadvd: the one front door for people and CI. `make help` lists the targets.

SWIFT        ?= swift
PREFIX       ?= /usr/local
DESTDIR      ?=
BUILD_FLAGS  ?= -c release --static-swift-stdlib
# The version is written once, in ControlAPI.swift (both programs' --version).
VERSION      ?= $(shell sed -n 's/^ *public static let version = "\(.*\)"$$/\1/p' Sources/AdvertiserControl/ControlAPI.swift)

# What the arm64 guest checks: the package installed with apt (READY, heard on hci1, the
# sandbox), BTHome decoded by bthome-ble, a set on air in place, bluetoothd killed, the unit's
# life (reload, restart of bluetooth, kill -9, watchdog, stop leaves nothing registered).
ARM64_SCENARIOS = testbed/scenarios/40-bthome.sh testbed/scenarios/50-crash-loop.sh testbed/scenarios/55-in-place.sh \
                  testbed/systemd-scenarios/60-install-deb.sh testbed/systemd-scenarios/61-lifecycle.sh

BINDIR       = $(PREFIX)/bin
SBINDIR      = $(PREFIX)/sbin
MANDIR       = $(PREFIX)/share/man
# Improv's join program for wpa_supplicant, and the unit drop-in it needs (an example).
LIBEXECDIR   = $(PREFIX)/libexec/bleadvd
EXAMPLEDIR   = $(PREFIX)/share/doc/bleadvd/examples
# The control interface's introspection, for readers and code generators.
IFACEDIR     = $(PREFIX)/share/dbus-1/interfaces
# Where systemd and the bus look, whatever PREFIX is.
UNITDIR      ?= /etc/systemd/system
SYSUSERSDIR  ?= /usr/lib/sysusers.d
DBUSDIR      ?= /usr/share/dbus-1/system.d
# D-Bus activation: the Improv join helper, started as root on bleadvd's request.
DBUSSERVICEDIR ?= /usr/share/dbus-1/system-services
CONFDIR      ?= /etc/bleadvd
BASHCOMPDIR  ?= /usr/share/bash-completion/completions
ZSHCOMPDIR   ?= /usr/share/zsh/vendor-completions
RELEASE      = .build/release

.PHONY: help deps build test testbed-sets-test testbed-bumble-test testbed-prepare testbed-packages figures test-matrix test-pairing test-improv test-wpa-roundtrip test-connections unit-test testbed-test testbed-systemd-test systemd-check docs demo install uninstall deb bench bench-address bench-observer bench-dbus bench-set bench-improv bench-notify bench-write bench-read bench-hostile bench-rotation bench-cli fuzz fuzz-smoke clean debian-swift deb-arm64 testbed-arm64-test soak soak-connections soak-faults

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  make %-20s %s\n", $$1, $$2}'

deps: ## install the Debian packages the build and tests need (apt-get update first)
	@scripts/install-deps.sh

build: deps ## build the release binary (static Swift runtime): .build/release/bleadvd, and bleadvctl a link to it
	$(SWIFT) build $(BUILD_FLAGS) --product bleadvd
	@# One executable for both commands: bleadvd runs as bleadvctl when called by that name.
	ln -sfn bleadvd $(RELEASE)/bleadvctl

unit-test: deps ## unit, bus, daemon and CLI tests (private dbus-daemon, no radio)
	$(SWIFT) test --disable-xctest

systemd-check: ## systemd-analyze verify and offline security score of the unit
	@scripts/check-unit.sh

docs: deps ## API documentation of the library products (DocC); fails on any warning or undocumented declaration
	@scripts/check-docs.sh

# 56 is a measurement for the docs (make bench-address; make test-matrix runs it on every stack).
# 40 and 41 (BTHome, Eddystone and iBeacon read by Home Assistant's and beacontools' parsers)
# run on Debian 12 under systemd in make test instead (testbed-homeassistant-test): on the
# host-root guest every Python start reads its modules through the 9p share, and beside make
# test's other lane they took up to 255 s and over 420 s there, against about 100 s on a disk
# image.
# 68, 69, 70, 72 and 74 need a third controller (testbed/run.sh --controllers 3), whose boots run
# the patched emulator (testbed/bluez): make test-connections. 72 (values read from a program)
# and 74 (centrals listed and disconnected), two centrals each, run in make test in the
# boots of testbed-systemd-test (72) and testbed-homeassistant-test (74), with three
# controllers, before the package is installed: a boot of their own cost lane 1 two minutes,
# and so the lanes take about as long. 71, the connection soak, runs 10 cycles in
# testbed-systemd-test's boot, and 1,000 in make soak-connections: 40 in make test took
# 1,267 s of lane 2 in a fresh clone's run (2026-12-02), more than any other scenario.
# 75 (a scan response's fields, long payloads) runs on Debian 12 in testbed-test (refused there)
# and on Debian 13 with extended advertising in testbed-sets-test (three controllers: the bed's
# patched emulator survives long extended data); 76 (more advertisements than slots) on Debian
# 13 without extended advertising, the 5-slot case, in testbed-stacks-test. 77 makes its faults
# with Bumble's controllers: testbed-bumble-test. 79 (GATT per central: three Bumble centrals)
# needs a fourth controller, and Bumble's controllers (neither btvirt encrypts a second LE link,
# which its bonded stranger needs): make test-connections.
SCENARIOS = $(filter-out testbed/scenarios/56-% testbed/scenarios/68-% testbed/scenarios/69-% testbed/scenarios/70-% testbed/scenarios/71-% testbed/scenarios/72-% testbed/scenarios/74-% testbed/scenarios/76-% testbed/scenarios/77-% testbed/scenarios/79-%,$(sort $(wildcard testbed/scenarios/*.sh)))
MAKE_TEST_SCENARIOS = $(filter-out testbed/scenarios/40-% testbed/scenarios/41-%,$(SCENARIOS))

# make test makes what its test bed lanes need once, before they start (testbed-prepare), and
# runs them with PREPARED=1: nothing is then built or installed while a guest runs.
PREPARED ?=
ifeq ($(PREPARED),)
TESTBED_BUILT = build
TESTBED_PACKAGED = deb
TESTBED_SETUP = testbed/setup.sh
NEWER_DEB = scripts/make-deb.sh $(VERSION) 2
else
TESTBED_SETUP = @:
NEWER_DEB = @:
endif

testbed-prepare: testbed-packages ## what make test's test bed lanes need, made before they start: the test bed for bookworm and trixie, the release build, the package and a newer build of it
	testbed/setup.sh bookworm trixie

testbed-packages: deb ## the release build, the package and a newer build of the same (for the upgrade scenario); make test makes the test bed beside its first steps, then these
	scripts/make-deb.sh $(VERSION) 2

testbed-test: $(TESTBED_BUILT) ## end-to-end scenarios in the VM test bed with a real bluetoothd, sharing this machine's root (all but 56, a measurement: make bench-address; 40, 41 and 74: make testbed-homeassistant-test; 68-72: make test-connections and testbed-systemd-test), then bleadvd on controllers without extended advertising
	$(TESTBED_SETUP)
	testbed/run.sh $(MAKE_TEST_SCENARIOS)
	testbed/run.sh --legacy testbed/scenarios/20-*.sh

# TIMES=N: each stack runs 65 N times in one boot, one stack after the other (#48's tally: 20).
test-pairing: deb ## scenario 65, pairing with Bumble as the central, on bookworm and on trixie without extended advertising (make test runs it once on each); TIMES=20 for a tally; 2 to 3 minutes a run
	testbed/setup.sh bookworm trixie
	testbed/run.sh $(foreach n,$(shell seq $(or $(TIMES),1)),testbed/scenarios/65-pairing.sh)
	testbed/run.sh --systemd --stack trixie --legacy $(foreach n,$(shell seq $(or $(TIMES),1)),testbed/scenarios/65-pairing.sh)

# COUNT=N cases (1,000 unless given), SEED=N another draw; make test runs the 1,000 (about 40 s).
test-wpa-roundtrip: deps ## every network Improv's join-wpa-supplicant saves read back by the real wpa_supplicant after a restart: 1,000 random SSIDs and passwords, #78's among them (root: a network namespace)
	$(SWIFT) build --product bleadvd
	python3 scripts/wpa-roundtrip.py .build/debug/bleadvd $(or $(COUNT),1000) $(or $(SEED),78)

test-connections: deb ## scenarios 68, 69, 70, 72 and 74 with three controllers and the patched emulator, and 79 with four of Bumble's: two and three centrals at once (Improv frames interleaved; what stays on air while centrals are connected; values read from a program; centrals listed, limited and disconnected; subscriptions, MTUs and notifications per central), the adapter by its address; on bookworm and on trixie without extended advertising; about 24 minutes
	testbed/setup.sh bookworm trixie
	testbed/run.sh --controllers 3 testbed/scenarios/68-*.sh testbed/scenarios/69-*.sh testbed/scenarios/70-*.sh testbed/scenarios/72-*.sh testbed/scenarios/74-*.sh
	testbed/run.sh --bumble --controllers 4 testbed/scenarios/79-*.sh
	testbed/run.sh --systemd --stack trixie --legacy --controllers 3 testbed/scenarios/68-*.sh testbed/scenarios/69-*.sh testbed/scenarios/70-*.sh testbed/scenarios/72-*.sh testbed/scenarios/74-*.sh
	testbed/run.sh --systemd --stack trixie --bumble --controllers 4 testbed/scenarios/79-*.sh

test-improv: deb ## scenarios 66 and 67, Improv Wi-Fi with Home Assistant's client against a hostapd access point, joining through NetworkManager (66) and through wpa_supplicant with join-wpa-supplicant in bleadvd's sandbox (67), on bookworm and on trixie without extended advertising; about 12 minutes
	testbed/setup.sh bookworm trixie
	testbed/run.sh --systemd testbed/systemd-scenarios/66-*.sh testbed/systemd-scenarios/67-*.sh
	testbed/run.sh --systemd --stack trixie --legacy testbed/systemd-scenarios/66-*.sh testbed/systemd-scenarios/67-*.sh

testbed-homeassistant-test: $(TESTBED_PACKAGED) ## Home Assistant's own libraries against bleadvd on Debian 12 under systemd: bthome-ble decodes BTHome, beacontools the beacon presets (40, 41), py-improv-ble-client puts the box on Wi-Fi through Improv against a hostapd access point (66); in the same boot (three controllers), centrals listed and disconnected (74)
	$(TESTBED_SETUP)
	@# 74 runs the release binaries: before 66 installs the package and its service.
	testbed/run.sh --systemd --controllers 3 testbed/scenarios/40-*.sh testbed/scenarios/41-*.sh testbed/scenarios/74-*.sh \
	  testbed/systemd-scenarios/66-*.sh

testbed-sets-test: $(TESTBED_BUILT) ## scenario 75 on trixie (BlueZ 5.82) with extended advertising, three controllers (the patched emulator): a scan response's own fields and 124 bytes of advertising data, btmon's bytes equal to preview's and heard by hci1, set on air
	$(TESTBED_SETUP) trixie
	testbed/run.sh --systemd --stack trixie --controllers 3 testbed/scenarios/75-*.sh

testbed-systemd-test: $(TESTBED_PACKAGED) ## the .deb and make install under systemd as PID 1 in the VM test bed, three controllers: 10 cycles of two centrals connecting (71; make soak-connections for 1,000), values read from programs (72), sandbox, control, 8 steps of the chaos soak, reload, watchdog, upgrade, removal
	$(TESTBED_SETUP)
	@# A newer build of the same binaries, for the upgrade over a running one.
	$(NEWER_DEB)
	@# 55 here too: Debian 12's bluetooth.service (no -E) ignores intervals, which status must say.
	@# 71, 10 cycles of two centrals, and 72, two centrals, need a third controller
	@# (so this boot runs the patched emulator); they run the release binaries, before 60
	@# installs the package and its service.
	BLEADVD_TESTBED_APPEND="bleadvd_connections.cycles=10 $${BLEADVD_TESTBED_APPEND:-}" testbed/run.sh --systemd --controllers 3 \
	  testbed/scenarios/55-*.sh testbed/scenarios/71-*.sh testbed/scenarios/72-*.sh testbed/systemd-scenarios/6[0-3]-*.sh

# The second controller implementation (#80): Bumble's controllers through testbed/controllers.py.
# 77 makes each fault of real radios once; the soak after it mixes them with its own (20 steps,
# without connection cycles: make soak-faults runs 200 with them). It installs the package itself.
# Not in make test, by choice: 962 s of a lane beside the other (2026-12-04), in a make test whose
# two lanes are busy to the end (docs/TESTING.md); run it with soak-faults before closing an
# issue that touches registration, the rotation or the retries.
testbed-bumble-test: $(TESTBED_PACKAGED) ## Bumble's controllers, a second controller implementation (testbed/controllers.py), under systemd on trixie (BlueZ 5.82): each fault of real radios made at the HCI boundary and judged by the controller's own record (77), then 20 steps of the chaos soak with those faults among its own (make soak-faults runs 200)
	$(TESTBED_SETUP) trixie
	BLEADVD_TESTBED_APPEND="bleadvd_soak.hci=1 bleadvd_soak.steps=20 $${BLEADVD_TESTBED_APPEND:-}" testbed/run.sh --systemd --stack trixie --bumble \
	  testbed/scenarios/77-*.sh testbed/systemd-scenarios/61-chaos-soak.sh

testbed-stacks-test: $(TESTBED_PACKAGED) ## the other stacks make test holds: trixie (BlueZ 5.82, kernel 6.12, the Raspberry Pi OS stack) under systemd with its bluetooth.service, on controllers without extended advertising, GATT and pairing included, with 10 restarts of bluetooth.service and 8 steps of the chaos soak
	$(TESTBED_SETUP) bookworm trixie
	@# 62 upgrades to a newer build of the same binaries.
	$(NEWER_DEB)
	BLEADVD_TESTBED_APPEND="bleadvd_repro.rounds=10" \
	testbed/run.sh --systemd --stack trixie --legacy testbed/scenarios/20-*.sh testbed/scenarios/30-*.sh \
	  testbed/scenarios/75-*.sh testbed/scenarios/76-*.sh testbed/scenarios/40-*.sh testbed/scenarios/41-*.sh testbed/scenarios/50-*.sh testbed/scenarios/55-*.sh testbed/scenarios/57-*.sh testbed/scenarios/58-*.sh testbed/scenarios/59-*.sh \
	  testbed/scenarios/65-*.sh testbed/systemd-scenarios/60-*.sh testbed/repro/bluetooth-restarts.sh testbed/systemd-scenarios/61-*.sh testbed/systemd-scenarios/62-*.sh

test-matrix: deb ## every scenario on every stack (bookworm, trixie, sid; both kinds of controllers; distro bluetooth.service and -E by hand), as a table; not in make test (sid moves daily); about two hours; RUNS="systemd-sid-legacy ..." for some
	testbed/setup.sh bookworm trixie sid
	scripts/make-deb.sh $(VERSION) 2
	scripts/test-matrix.sh $(RUNS)

test: ## everything: unit, bus, daemon, unit file and end-to-end tests; each step's time in .build/test-figures.tsv (it changes no tracked file)
	@scripts/test-all.sh

figures: ## write the figures of the last make test, if everything passed, into docs/TESTING.md (with the machine, and whether it began from a fresh clone)
	@scripts/test-figures.sh

demo: build ## boot the test bed and run bleadvd from the example config; see what hci1 hears
	testbed/setup.sh
	testbed/run.sh testbed/scenarios/30-demo.sh

install: ## install stripped binaries, units, D-Bus policy, interface and activation file, sysusers, example config, man pages, completions
	@# Nothing is written into .build: `sudo make install` leaves no root-owned files in your tree.
	install -Dm755 -s $(RELEASE)/bleadvd $(DESTDIR)$(SBINDIR)/bleadvd
	install -d $(DESTDIR)$(BINDIR)
	ln -sfr $(DESTDIR)$(SBINDIR)/bleadvd $(DESTDIR)$(BINDIR)/bleadvctl
	install -d $(DESTDIR)$(UNITDIR) $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR)
	sed 's|/usr/local/sbin/bleadvd|$(SBINDIR)/bleadvd|; s|/usr/local/bin/bleadvctl|$(BINDIR)/bleadvctl|' systemd/bleadvd.service > $(DESTDIR)$(UNITDIR)/bleadvd.service
	chmod 644 $(DESTDIR)$(UNITDIR)/bleadvd.service
	@# Improv's join helper: root for one join through NetworkManager, started by D-Bus activation.
	sed 's|/usr/local/sbin/bleadvd|$(SBINDIR)/bleadvd|' systemd/bleadvd-join.service > $(DESTDIR)$(UNITDIR)/bleadvd-join.service
	chmod 644 $(DESTDIR)$(UNITDIR)/bleadvd-join.service
	install -Dm644 systemd/org.bleadvd.Join.service $(DESTDIR)$(DBUSSERVICEDIR)/org.bleadvd.Join.service
	install -Dm644 systemd/bleadvd.sysusers $(DESTDIR)$(SYSUSERSDIR)/bleadvd.conf
	install -Dm644 systemd/org.bleadvd.Advertiser.conf $(DESTDIR)$(DBUSDIR)/org.bleadvd.Advertiser.conf
	install -Dm644 systemd/org.bleadvd.Advertiser1.xml $(DESTDIR)$(IFACEDIR)/org.bleadvd.Advertiser1.xml
	@# The config is the admin's: never overwrite one that exists.
	@# It may hold BTHome keys and secured values: root writes it, the daemon alone reads it
	@# (group bleadvd-config; below, scripts/config-layout.sh). The example holds none.
	test -e $(DESTDIR)$(CONFDIR)/bleadvd.toml || install -Dm644 systemd/bleadvd.toml $(DESTDIR)$(CONFDIR)/bleadvd.toml
	@# Improv's join program for wpa_supplicant: bleadvd itself, called by that name.
	install -d $(DESTDIR)$(LIBEXECDIR)
	ln -sfr $(DESTDIR)$(SBINDIR)/bleadvd $(DESTDIR)$(LIBEXECDIR)/join-wpa-supplicant
	install -Dm644 systemd/join-wpa-supplicant.conf $(DESTDIR)$(EXAMPLEDIR)/join-wpa-supplicant.conf
	install -Dm644 systemd/bluez-lockdown.conf $(DESTDIR)$(EXAMPLEDIR)/bluez-lockdown.conf
	install -Dm644 systemd/man/bleadvd.8 $(DESTDIR)$(MANDIR)/man8/bleadvd.8
	install -Dm644 systemd/man/bleadvctl.1 $(DESTDIR)$(MANDIR)/man1/bleadvctl.1
	install -Dm644 systemd/man/bleadvd.toml.5 $(DESTDIR)$(MANDIR)/man5/bleadvd.toml.5
	@# A completion is sourced, not run: no #! line.
	$(DESTDIR)$(BINDIR)/bleadvctl --generate-completion-script bash | sed '1{/^#!/d}' > $(DESTDIR)$(BASHCOMPDIR)/bleadvctl
	$(DESTDIR)$(BINDIR)/bleadvctl --generate-completion-script zsh > $(DESTDIR)$(ZSHCOMPDIR)/_bleadvctl
	chmod 644 $(DESTDIR)$(BASHCOMPDIR)/bleadvctl $(DESTDIR)$(ZSHCOMPDIR)/_bleadvctl
	@# On a live system (no DESTDIR): create the user and groups, lay the config out (as the
	@# package's postinst does: an older install's root:bleadvd 0640 too), reload the bus policy
	@# and systemd.
	if [ -z "$(DESTDIR)" ]; then \
	  . scripts/config-layout.sh && bleadvd_config_layout $(CONFDIR)/bleadvd.toml $(SYSUSERSDIR)/bleadvd.conf; \
	  busctl call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus ReloadConfig 2>/dev/null || true; \
	  systemctl daemon-reload 2>/dev/null || true; \
	fi

uninstall: ## stop and disable the service, remove what install put there (keeps the config and /var/lib/bleadvd)
	@# The state stays with the config: it holds encrypted BTHome's counters, which must never
	@# start again from 0 for a key the config still has.
	if [ -z "$(DESTDIR)" ]; then systemctl disable --now bleadvd.service 2>/dev/null || true; fi
	rm -f $(DESTDIR)$(SBINDIR)/bleadvd $(DESTDIR)$(BINDIR)/bleadvctl $(DESTDIR)$(UNITDIR)/bleadvd.service \
	  $(DESTDIR)$(UNITDIR)/bleadvd-join.service $(DESTDIR)$(DBUSSERVICEDIR)/org.bleadvd.Join.service \
	  $(DESTDIR)$(SYSUSERSDIR)/bleadvd.conf $(DESTDIR)$(DBUSDIR)/org.bleadvd.Advertiser.conf $(DESTDIR)$(IFACEDIR)/org.bleadvd.Advertiser1.xml \
	  $(DESTDIR)$(MANDIR)/man8/bleadvd.8 $(DESTDIR)$(MANDIR)/man1/bleadvctl.1 $(DESTDIR)$(MANDIR)/man5/bleadvd.toml.5 \
	  $(DESTDIR)$(BASHCOMPDIR)/bleadvctl $(DESTDIR)$(ZSHCOMPDIR)/_bleadvctl \
	  $(DESTDIR)$(LIBEXECDIR)/join-wpa-supplicant $(DESTDIR)$(EXAMPLEDIR)/join-wpa-supplicant.conf \
	  $(DESTDIR)$(EXAMPLEDIR)/bluez-lockdown.conf
	rmdir $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(EXAMPLEDIR) $(DESTDIR)$(PREFIX)/share/doc/bleadvd 2>/dev/null || true
	if [ -z "$(DESTDIR)" ]; then \
	  systemctl daemon-reload 2>/dev/null || true; \
	  busctl call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus ReloadConfig 2>/dev/null || true; \
	fi

deb: build ## a Debian package in .build/bleadvd_VERSION-1_ARCH.deb, checked by lintian
	@scripts/make-deb.sh $(VERSION)

debian-swift: ## build, unit-test and package bleadvd with Debian's own Swift (unstable's swiftlang 6.2.3) in a chroot of Debian's packages, linked for Debian 13 and later: .build/debian-amd64/ (about 6 min the first time)
	scripts/debian-swift.sh amd64

deb-arm64: ## the arm64 package for a Raspberry Pi (Debian 13 / Raspberry Pi OS 13 and later), built as make debian-swift builds, in an arm64 chroot under qemu-user: .build/debian-arm64/ (slow: see docs/GUIDE.md, "Install")
	scripts/debian-swift.sh arm64 build deb

testbed-arm64-test: ## the arm64 package on a Debian 13 arm64 guest (qemu-system-aarch64), with and without extended advertising; run make deb-arm64 first
	testbed/setup.sh trixie-arm64
	testbed/run.sh --systemd --stack trixie-arm64 $(ARM64_SCENARIOS)
	testbed/run.sh --systemd --stack trixie-arm64 --legacy $(ARM64_SCENARIOS)

fuzz: deps ## libFuzzer on the config parser, AD encoder and D-Bus message reader, 1,000,000 runs each (RUNS=N); crashes sorted by site
	scripts/fuzz.sh $(or $(RUNS),1000000)

fuzz-smoke: deps ## a short run of each fuzz target (make test runs it)
	scripts/fuzz.sh --smoke $(or $(RUNS),20000)

soak-connections: deb ## CYCLES=N (default 1000) cycles of two centrals connecting, reading, subscribing, notified, writing and leaving (scenario 71, four controllers: a scanner on hci3 kept on across each cycle's end) on each of STACKS (default "trixie-legacy bookworm"); after each, both advertisements heard again, timed from the links' end, values intact, no stray; RSS slope printed
	testbed/setup.sh bookworm trixie
	for stack in $(or $(STACKS),trixie-legacy bookworm); do \
	  options="--systemd --controllers 4 --stack $${stack%-legacy}"; case $$stack in *-legacy) options="$$options --legacy" ;; esac; \
	  BLEADVD_TESTBED_APPEND="bleadvd_connections.cycles=$(or $(CYCLES),1000) bleadvd_testbed.timeout=$$(( $(or $(CYCLES),1000) * 30 + 600 ))" \
	    testbed/run.sh $$options testbed/scenarios/71-connection-soak.sh || exit 1; \
	done

soak: deb ## the seeded chaos soak for long runs: SEED=N (default drawn, printed) STEPS=N (default 1000) on each of STACKS (default "trixie-legacy bookworm"), half of the steps connection cycles of two centrals (three controllers; CENTRALS=0 for the schedule of make test's 61); about 10 s a step; docs/RELIABILITY.md
	testbed/setup.sh bookworm trixie
	SEED="$(SEED)" STEPS="$(STEPS)" STACKS="$(STACKS)" CENTRALS="$(CENTRALS)" scripts/soak.sh

soak-faults: deb ## the chaos soak on Bumble's controllers with their faults (testbed/controllers.py) in half the steps: enable refused while linked, one set reported, data refused, an enable unanswered, a link that fails; after each step what hci0's controller sends agrees with what is wanted; SEED=N, STEPS=N (default 200), STACKS (default "trixie bookworm"), CENTRALS=0 without the link faults; docs/RELIABILITY.md
	testbed/setup.sh bookworm trixie
	HCI_FAULTS=1 SEED="$(SEED)" STEPS="$(or $(STEPS),200)" STACKS="$(or $(STACKS),trixie bookworm)" CENTRALS="$(CENTRALS)" scripts/soak.sh

bench: build ## bleadvd side by side with busctl, bluetoothctl and BlueZ's example in the test bed: the table of docs/BENCHMARKS.md; fails when bleadvctl on, off, set (1.10x) or status (1.20x) against busctl, or bleadvd's RSS (11,800 KiB), is past its target
	testbed/setup.sh
	testbed/run.sh testbed/bench/bench.sh

bench-cli: build ## bleadvctl on, off, status and set against busctl's call of the same method, natively (three rounds of 20) against BlueZ's stand-in; fails when a ratio is past its target
	scripts/bench-cli.sh

bench-address: build ## the address a scanner on hci1 hears across 10 sets, broadcast and peripheral (scenario 56): docs/GUIDE.md, "Broadcast a sensor"
	testbed/setup.sh
	testbed/run.sh testbed/scenarios/56-address.sh

bench-observer: ## how quickly the test bed's scanner on hci1 hears an advertisement: docs/RELIABILITY.md "The observer"
	testbed/setup.sh
	testbed/run.sh testbed/bench/observer.sh

bench-dbus: deps ## D-Bus round trips: our layer against the same loop in C
	$(SWIFT) build -c release --product dbus-bench
	scripts/bench-dbus.sh

bench-set: build ## bleadvd's own share of a set (Set received -> PropertiesChanged sent), natively, against BlueZ's stand-in
	scripts/bench-set.sh

bench-improv: build ## what a central's flood of Improv frames costs bleadvd (programs started, NetworkManager calls, notifications, journal lines, CPU, RSS), natively against stand-ins of BlueZ and NetworkManager
	scripts/bench-improv.sh

bench-notify: build ## what notifications cost bleadvd: Set (every subscriber, Value) against Notify (one central, through its socket) to one and three centrals, and one socket never read (CPU per notification, calls a second, what each central got, what was dropped), natively against BlueZ's stand-in playing 5.82
	scripts/bench-notify.sh

bench-write: build ## what a central's GATT writes cost bleadvd (CPU per write, writes a core can take, journal lines, RSS), natively against BlueZ's stand-in
	scripts/bench-write.sh

bench-read: build ## what a central's GATT reads cost bleadvd: a value held against one read from a program and served from its last answer, and a stranger's flood of 1,000 reads a second (program runs, CPU, journal lines, RSS), natively against BlueZ's stand-in
	scripts/bench-read.sh

bench-rotation: build ## what sharing the slots costs bleadvd: bus messages, CPU ticks and wake-ups with everything fitting and with 8 advertisements taking turns through 5 slots, natively against BlueZ's stand-in; SECONDS=N (default 60) each
	scripts/bench-rotation.sh $(or $(SECONDS),60)

bench-hostile: build ## what hostile input costs bleadvd: RSS over refused reloads, RSS and time for 30 MB calls, the BlueZ reads 1,000 Centrals calls cause (dbus-monitor)
	scripts/bench-hostile.sh

clean: ## remove build products (keeps the test bed cache)
	rm -rf .build
