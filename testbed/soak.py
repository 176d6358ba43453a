#!/usr/bin/env python3
"""A seeded chaos soak of the installed bleadvd under systemd, in the test bed guest.

    soak.py --seed N --steps N

Draws a schedule of STEPS steps from SEED (printed first, so that a run can be repeated), then
runs it: bluetoothd restarted as `systemctl restart bluetooth` does (stopped gracefully, with
bus activation of org.bluez in place), killed with -9, restarted twice in a row, stopped and
started again later; hci0 powered off (and on again, or left to bleadvd); both controllers
removed and added; `on`, `off`, `set` and `reload` alone and interleaved with those faults;
bleadvd restarted and killed with -9. With --centrals (make soak; a third controller) half
the steps are connection cycles of two Bumble centrals on hci1 and hci2 (connect, read,
subscribe, notified of a set, write, leave), one in five during a fault, each followed by a scan
that must hear every advertisement wanted and a status that must show both values written.
After every step it waits for things to settle and checks the invariant, twice, 2.5 s apart (a
stray registration comes late):

- on hci0 (the adapter bleadvd uses), BlueZ's ActiveInstances equals the number of
  advertisements the schedule wants on; on hci1, 0 (unless a central holds it);
- `bleadvctl status --json` says on for exactly those, off for the rest, the GATT service on,
  and no mismatch;
- bleadvd exports one object per advertisement on air and one GATT application, nothing else.

A failure prints the seed and the shortest prefix of the schedule that fails (the steps up to
the first one after which the invariant did not hold: every shorter prefix held), with the
journal; `make soak SEED=N STEPS=K` runs that prefix again. The summary counts the steps,
each fault, the settle times (median, worst), strays (more registered than wanted) and
losses (fewer). Exit 0 when the invariant held after every step.
"""
import argparse
import json
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import time

CONFIG = "/etc/bleadvd/bleadvd.toml"
HERE = os.path.dirname(os.path.abspath(__file__))
# The dial: a service whose level and mode the centrals of make soak's connection cycles read,
# subscribe to and write; in both configs.
DIAL = """[service.dial]
uuid = "6e400010-b5a3-f393-e0a9-e50e24dcca9e"
[service.dial.characteristic.level]
uuid = "6e400011-b5a3-f393-e0a9-e50e24dcca9e"
format = "uint8"
flags = ["read", "write", "notify"]
security = "none"
value = 0
[service.dial.characteristic.mode]
uuid = "6e400012-b5a3-f393-e0a9-e50e24dcca9e"
format = "uint8"
flags = ["read", "write"]
security = "none"
value = 0
"""
# Two configs the schedule reloads between. "x" wants at most three advertisements on at once,
# as btvirt's LE 5.2 controllers hold three advertising sets; "y" wants six, more than either
# kind of controller holds (three sets, or the kernel's five instances without extended
# advertising): they take turns (#67), the sensor (priority 10) on air throughout.
CONFIGS = {
    "x": """power_on = true
[advertisement.alpha]
type = "broadcast"
manufacturer_data = { "0xFFFF" = "a1" }
[advertisement.beta]
enabled = false
type = "broadcast"
manufacturer_data = { "0xFFFF" = "b2" }
[advertisement.sensor]
[advertisement.sensor.bthome]
temperature = 21.5
[service.power.battery]
level = 87
""" + DIAL,
    "y": """power_on = true
[slots]
rotate_seconds = 4
[advertisement.alpha]
type = "broadcast"
manufacturer_data = { "0xFFFF" = "a1" }
[advertisement.gamma]
type = "broadcast"
manufacturer_data = { "0xFFFF" = "c3" }
[advertisement.delta]
type = "broadcast"
manufacturer_data = { "0xFFFF" = "d4" }
[advertisement.epsilon]
type = "broadcast"
manufacturer_data = { "0xFFFF" = "e5" }
[advertisement.zeta]
type = "broadcast"
manufacturer_data = { "0xFFFF" = "f6" }
[advertisement.sensor]
priority = 10
[advertisement.sensor.bthome]
temperature = 21.5
[service.power.battery]
level = 50
[service.lamp]
uuid = "6e400001-b5a3-f393-e0a9-e50e24dcca9e"
[service.lamp.characteristic.brightness]
uuid = "6e400002-b5a3-f393-e0a9-e50e24dcca9e"
format = "uint8"
flags = ["read", "notify"]
value = 10
""" + DIAL,
}
NAMES = {"x": ["alpha", "beta", "sensor"], "y": ["alpha", "delta", "epsilon", "gamma", "sensor", "zeta"]}
ENABLED = {"x": {"alpha", "sensor"}, "y": {"alpha", "delta", "epsilon", "gamma", "sensor", "zeta"}}
# Priorities other than 0, which keep their slots when the wanted outnumber them.
PRIORITY = {"y": {"sensor": 10}}
SERVICES = {"x": ["dial", "power"], "y": ["dial", "lamp", "power"]}
# The dial's characteristics, which the centrals read, subscribe to and write.
LEVEL = "6e400011-b5a3-f393-e0a9-e50e24dcca9e"
MODE = "6e400012-b5a3-f393-e0a9-e50e24dcca9e"
# What a scanner finds of each advertisement in its payload (hex): the manufacturer data
# (0xFF, company 0xFFFF, the byte) of the broadcasts and BTHome's service data (0x16, 0xFCD2).
PAYLOADS = {"alpha": "ffffffa1", "beta": "ffffffb2", "gamma": "ffffffc3", "delta": "ffffffd4", "epsilon": "ffffffe5",
            "zeta": "fffffff6", "sensor": "16d2fc"}

FAULTS = ["bluetooth-restart", "bluetooth-kill", "bluetooth-restart-twice", "bluetooth-stop-start",
          "power-cycle", "controllers-replug", "bleadvd-restart", "bleadvd-kill"]
# Faults that leave bleadvd running, so that a control call can overlap them.
OVERLAPPABLE = ["bluetooth-restart", "bluetooth-kill", "bluetooth-restart-twice", "bluetooth-stop-start", "power-cycle"]
CONTROLS = ["on", "off", "set", "reload"]
# The faults real radios show, made by Bumble's controllers at their HCI boundary (--hci-faults;
# testbed/controllers.py): advertising enable refused while a link is up (a connection cycle
# meanwhile), one advertising set reported (hci0 powered off and on and bluetoothd started
# again to read it, then the same without), advertising data refused, an enable left
# unanswered, a link that fails as it is made (a connection cycle meanwhile). Not the sets
# ended by the controller itself: bluetoothd ignores the kernel's word of it (scenario 77,
# docs/RELIABILITY.md), and nothing bleadvd is told can bring them back.
HCI_FAULTS = ["refuse-enable", "sets-1", "memory-full", "drop-enable", "fail-connection"]
LINK_HCI_FAULTS = ["refuse-enable", "fail-connection"]
CONTROL_SOCKET = "/run/testbed-controllers.sock"


def draw(seed, steps, centrals=False, hci=False):
    """The schedule: a list of steps, each a dict, from the seed (and whether centrals take part,
    and the controllers' faults) alone. With centrals, half the steps are connection cycles
    ("link"), one in five of them during a fault ("link-overlap"); the controllers are not
    replugged (the centrals own two of them). With hci, half the steps are instead a fault of the
    controller's ("hci"; those needing a link only with centrals)."""
    rng = random.Random(seed)
    schedule = []
    for _ in range(steps):
        if centrals:
            kind = rng.choices(["fault", "control", "overlap", "link", "link-overlap"], weights=[5, 3, 3, 9, 2])[0]
        else:
            kind = rng.choices(["fault", "control", "overlap"], weights=[5, 3, 3])[0]
        step = {"kind": kind, "pause": round(rng.uniform(0.0, 1.5), 2), "back": rng.random() < 0.5,
                "name": rng.choice(["alpha", "beta", "gamma", "sensor"]), "value": round(rng.uniform(-10, 40), 1),
                "control": rng.choice(CONTROLS)}
        if kind == "fault":
            step["fault"] = rng.choices(FAULTS, weights=[4, 3, 2, 2, 3, 0 if centrals else 1, 1, 1])[0]
        elif kind in ("overlap", "link-overlap"):
            step["fault"] = rng.choice(OVERLAPPABLE)
        if hci and rng.random() < 0.5:
            step["kind"] = "hci"
            step["fault"] = rng.choice([f for f in HCI_FAULTS if centrals or f not in LINK_HCI_FAULTS])
        schedule.append(step)
    return schedule


def describe(step):
    control = step["control"] + ("" if step["control"] == "reload" else " " + ("sensor" if step["control"] == "set" else step["name"]))
    if step["kind"] == "control":
        return control
    if step["kind"] == "overlap":
        return "%s during %s" % (control, step["fault"])
    if step["kind"] == "link":
        return "two centrals connect"
    if step["kind"] == "link-overlap":
        return "two centrals connect during %s" % step["fault"]
    if step["kind"] == "hci":
        return "the controller's %s" % step["fault"]
    return step["fault"]


def run(*command, timeout=60, check=False):
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise SoakError("%s exited %d: %s" % (" ".join(command), result.returncode, result.stderr.strip()))
    return result


class SoakError(Exception):
    pass


class Central:
    """A central on a host stack of its own (testbed/bumble_central.py, Bumble) on hciN, taken
    from bluetoothd: started once (its start takes 20-30 s under emulation), it then does one run
    at a time, each a line of steps; `start` hands it a run, `finish` waits for its lines."""

    def __init__(self, python, hci, peripheral, work):
        self.name, self.work, self.runs = "hci%d" % hci, work, 0
        # Taken from bluetoothd once it has set the controller up (powered), as lib.sh's free_hci.
        self.powered(hci, "true", 10)
        run("python3", os.path.join(HERE, "mgmt.py"), str(hci), "power", "off", check=True)
        if not self.powered(hci, "false", 10):
            raise SoakError("bluetoothd did not power %s off for the central" % self.name)
        self.errors = open(os.path.join(work, "central-hci%d.err" % hci), "w")
        self.process = subprocess.Popen([python, "-u", os.path.join(HERE, "bumble_central.py"), peripheral,
                                         "--transport", "hci-socket:%d" % hci],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors, text=True)
        ready = self.process.stdout.readline()
        if not ready.startswith("ready"):
            raise SoakError("the central on %s did not start: %s" % (self.name, open(self.errors.name).read()[-2000:]))
        self.out = None

    @staticmethod
    def powered(hci, value, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            out = run("busctl", "get-property", "org.bluez", "/org/bluez/hci%d" % hci, "org.bluez.Adapter1", "Powered").stdout
            if out.split()[-1:] == [value]:
                return True
            time.sleep(0.2)
        return False

    def notes(self):
        """The last lines the central wrote to its standard error (Bumble's warnings)."""
        self.errors.flush()
        return open(self.errors.name).read().splitlines()[-10:]

    def start(self, *words):
        self.runs += 1
        self.out = os.path.join(self.work, "%s-%d.lines" % (self.name, self.runs))
        self.process.stdin.write("\t".join((self.out,) + words) + "\n")
        self.process.stdin.flush()

    def finish(self, limit=90):
        """The run's lines (without its `exit N`) and whether it ended 0."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline and self.process.poll() is None:
            lines = open(self.out).read().splitlines() if os.path.exists(self.out) else []
            if lines and lines[-1].startswith("exit "):
                return lines[:-1], lines[-1] == "exit 0"
            time.sleep(0.1)
        raise SoakError("the central on %s did not finish its run in %d s (%s)" % (
            self.name, limit, "running" if self.process.poll() is None else "gone"))

    def stop(self):
        self.process.stdin.close()
        self.process.terminate()
        self.process.wait(timeout=10)


class Soak:
    def __init__(self):
        self.config = "x"
        self.wanted = set(ENABLED["x"])
        self.faults = {}
        self.settles = []
        self.strays = 0
        self.losses = 0
        self.centrals = None    # (A on hci1, B on hci2) when the schedule has connection cycles
        self.cycles = 0         # connection cycles whose links all did what they were asked
        self.cut = 0            # connection cycles during a fault whose links the fault cut
        self.heard = []         # per cycle: (seconds from the last link's end to the scan's start, to all heard)
        self.rss = []           # per cycle: (bleadvd's PID, its RSS, RssAnon, RssFile in KiB)
        self.lost_below = 0     # writes bleadvd took whose response a central never got
        self.hci = False        # the controllers are Bumble's, whose faults the schedule has (--hci-faults)

    # --- the system ------------------------------------------------------------------------
    def active_instances(self, adapter, which="ActiveInstances"):
        out = run("busctl", "get-property", "org.bluez", "/org/bluez/" + adapter,
                  "org.bluez.LEAdvertisingManager1", which).stdout.split()
        return int(out[1]) if len(out) == 2 else None

    def hci0_now(self):
        """What BlueZ says of hci0 now, for a failed step: Adapter1's Powered and PowerState, and
        its advertising manager's instances."""
        lines = []
        for name in ("Powered", "PowerState"):
            got = run("busctl", "get-property", "org.bluez", "/org/bluez/hci0", "org.bluez.Adapter1", name, timeout=10)
            lines.append("%s: %s" % (name, (got.stdout or got.stderr).strip()))
        return lines + ["%s: %s" % (which, self.active_instances("hci0", which))
                        for which in ("ActiveInstances", "SupportedInstances")]

    def slots(self):
        """hci0's advertising slots, free and active, read in one GetAll: two reads could straddle
        a turn (one unregistered, the next not yet registered) and count a slot twice."""
        out = run("busctl", "call", "org.bluez", "/org/bluez/hci0", "org.freedesktop.DBus.Properties", "GetAll", "s",
                  "org.bluez.LEAdvertisingManager1").stdout
        found = dict(re.findall(r'"(ActiveInstances|SupportedInstances)" y (\d+)', out))
        if len(found) != 2:
            return None
        return int(found["ActiveInstances"]) + int(found["SupportedInstances"])

    def on_air(self):
        """How many of the wanted hci0 holds: all of them, or as many as it has slots when they
        outnumber them (they take turns); None while BlueZ does not say."""
        slots = self.slots()
        return None if slots is None else min(len(self.wanted), slots)

    def rotating(self):
        """Whether the wanted outnumber hci0's slots, so that they take turns."""
        slots = self.slots()
        return slots is not None and len(self.wanted) > slots

    def expected_state(self, name):
        """A wanted advertisement's state: on, or rotating while the wanted outnumber the slots
        and its priority is not the highest wanted."""
        slots = self.slots() or 0
        if len(self.wanted) <= slots:
            return "on"
        priorities = PRIORITY.get(self.config, {})
        top = max(priorities.get(n, 0) for n in self.wanted)
        fixed = [n for n in self.wanted if priorities.get(n, 0) == top]
        return "on" if priorities.get(name, 0) == top and len(fixed) < slots else "rotating"

    def status(self):
        result = run("bleadvctl", "status", "--json")
        return json.loads(result.stdout) if result.returncode == 0 else None

    def exported(self):
        out = run("busctl", "--list", "tree", "org.bleadvd.Advertiser").stdout.split()
        advertisements = [p for p in out if re.fullmatch(r"/org/bleadvd/advertisement/\d+", p)]
        applications = [p for p in out if re.fullmatch(r"/org/bleadvd/gatt/app\d+", p)]
        return advertisements, applications

    def wait_active(self, unit, seconds=30):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if run("systemctl", "is-active", unit).stdout.strip() == "active":
                return
            time.sleep(0.2)
        raise SoakError("%s is not active after %d s" % (unit, seconds))

    def reset_failed(self):
        # systemd refuses a sixth start within 10 s (StartLimitBurst): the soak's pace is not a fault.
        run("systemctl", "reset-failed", "bluetooth", "bleadvd")

    # --- what a step does ------------------------------------------------------------------
    def fault(self, step):
        name = step["fault"]
        self.faults[name] = self.faults.get(name, 0) + 1
        if name == "bluetooth-restart":
            run("systemctl", "restart", "bluetooth", check=True)
        elif name == "bluetooth-kill":
            run("pkill", "-9", "-x", "bluetoothd")
            time.sleep(step["pause"])
            self.reset_failed()
            run("systemctl", "start", "bluetooth", check=True)
        elif name == "bluetooth-restart-twice":
            run("systemctl", "restart", "bluetooth", check=True)
            self.reset_failed()
            run("systemctl", "restart", "bluetooth", check=True)
        elif name == "bluetooth-stop-start":
            run("systemctl", "stop", "bluetooth", check=True)
            time.sleep(0.5 + step["pause"])
            # org.bluez is bus-activatable: a call from bleadvd to it would start bluetooth again.
            state = run("systemctl", "is-active", "bluetooth").stdout.strip()
            if state != "inactive":
                raise SoakError("bluetooth.service is %s while stopped: something activated org.bluez" % state)
            run("systemctl", "start", "bluetooth", check=True)
        elif name == "power-cycle":
            run("busctl", "set-property", "org.bluez", "/org/bluez/hci0", "org.bluez.Adapter1", "Powered", "b", "false", check=True)
            if step["back"]:
                time.sleep(step["pause"])
                run("busctl", "set-property", "org.bluez", "/org/bluez/hci0", "org.bluez.Adapter1", "Powered", "b", "true")
        elif name == "controllers-replug":
            self.replug()
        elif name == "bleadvd-restart":
            run("systemctl", "restart", "bleadvd", check=True)
            self.wanted = set(ENABLED[self.config])
        elif name == "bleadvd-kill":
            run("systemctl", "kill", "-s", "KILL", "bleadvd", check=True)
            self.wanted = set(ENABLED[self.config])
            time.sleep(0.5)
            self.wait_active("bleadvd", 30)

    def controller(self, *words):
        """One line to Bumble's controllers (testbed/controllers.py's control socket): a fault set on
        one, or "state"; their answer."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(10)
            sock.connect(CONTROL_SOCKET)
            sock.sendall((" ".join(words) + "\n").encode())
            answer = b""
            while chunk := sock.recv(4096):
                answer += chunk
        answer = answer.decode(errors="replace").strip()
        if answer.startswith("error:"):
            raise SoakError("the controllers refused %r: %s" % (" ".join(words), answer))
        return answer

    def sent(self, hci="hci0"):
        """How many advertising sets the controller hci sends now, by its own account."""
        for line in self.controller("state").splitlines():
            match = re.match(r"(hci\d+): faults .*; on air (\S+);", line)
            if match and match.group(1) == hci:
                return 0 if match.group(2) == "nothing" else len(match.group(2).split(","))
        raise SoakError("the controllers do not list %s" % hci)

    def hci_fault(self, step):
        name = step["fault"]
        self.faults["hci " + name] = self.faults.get("hci " + name, 0) + 1
        if name in LINK_HCI_FAULTS:
            self.controller("hci0", name, "on")
            try:
                self.link(step, during_fault=True, armed=True)
            finally:
                self.controller("hci0", name, "off")
        elif name == "memory-full":
            self.controller("hci0", "memory-full", "on")
            self.toggle(step)
            time.sleep(step["pause"])
            self.controller("hci0", "memory-full", "off")
        elif name == "drop-enable":
            self.controller("hci0", "drop-enable", "on")
            self.toggle(step)
            time.sleep(2.5)  # the kernel's command timeout, 2 s
            self.controller("hci0", "drop-enable", "off")
        elif name == "sets-1":
            self.controller("hci0", "sets", "1")
            self.power_cycle()
            time.sleep(1 + step["pause"])
            self.controller("hci0", "sets", "0")
            self.power_cycle()

    def toggle(self, step):
        """A wanted advertisement off and on again (its data and enable given to the controller anew)."""
        if not self.wanted:
            return
        name = step["name"] if step["name"] in self.wanted else sorted(self.wanted)[0]
        run("bleadvctl", "off", name)
        run("bleadvctl", "on", name)

    def power_cycle(self):
        """hci0 powered off and on (the kernel sets the controller up anew), then bluetooth.service
        restarted (bluetoothd reads the adapter's advertising features only as it takes it)."""
        for value in ("false", "true"):
            run("busctl", "set-property", "org.bluez", "/org/bluez/hci0", "org.bluez.Adapter1", "Powered", "b", value)
            Central.powered(0, value, 10)
        run("systemctl", "restart", "bluetooth", check=True)

    def replug(self):
        """Both virtual controllers removed (btvirt stopped) and made again, as a USB radio
        unplugged and plugged back, by the bed's own make_controllers (lib.sh), which makes them
        again when the kernel gave up on one's setup (under emulation)."""
        made = run("bash", "-c", '. "$TESTBED_ROOT/testbed/lib.sh" && remove_controllers && make_controllers', timeout=300)
        for line in made.stderr.splitlines():
            if line.startswith("testbed: "):
                print("    (the bed: %s)" % line[len("testbed: "):])
        if made.returncode != 0:
            raise SoakError("the bed could not make its controllers again")

    def control(self, step, background=False):
        name, kind = step["name"], step["control"]
        if kind in ("on", "off"):
            if name not in NAMES[self.config]:
                name = NAMES[self.config][0]
            command = ["bleadvctl", kind, name]
        elif kind == "set":
            command = ["bleadvctl", "set", "sensor", "temperature=%s" % step["value"]]
        else:
            new = "y" if self.config == "x" else "x"
            with open(CONFIG, "w") as f:
                f.write(CONFIGS[new])
            command = ["bleadvctl", "reload"]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        def finish():
            out, err = process.communicate(timeout=60)
            # 0: done; 1: bleadvd took it and said why it is not on air yet (it keeps trying).
            if process.returncode not in (0, 1) or (kind in ("set", "reload") and process.returncode != 0):
                raise SoakError("%s exited %d: %s" % (" ".join(command), process.returncode, err.strip()))
            if kind == "on":
                self.wanted.add(name)
            elif kind == "off":
                self.wanted.discard(name)
            elif kind == "reload":
                old, self.config = self.config, ("y" if self.config == "x" else "x")
                kept = set(NAMES[old]) & set(NAMES[self.config])
                self.wanted = (self.wanted & kept) | (ENABLED[self.config] - set(NAMES[old]))

        if background:
            return finish
        finish()

    def link(self, step, during_fault=False, armed=False):
        """A connection cycle of the two centrals: A connects, reads the dial's level and
        subscribes; B connects beside it, reads and subscribes; a `bleadvctl set` of the level
        reaches both as a notification; A writes the level, B the mode; both leave. Then a scan
        from hci2 must hear every advertisement wanted on (up to 8 s, ended once it has: without
        extended advertising the kernel shows three advertisements in turn, 2 s each), and
        status show both values written. During a fault the links may be cut: counted, and the
        invariant after the step is all that is asked."""
        a, b = self.centrals
        self.link_began = time.strftime("%H:%M:%S")
        if "sensor" not in self.wanted:
            # The centrals connect through the sensor's advertisement (BTHome goes out connectable).
            run("bleadvctl", "on", "sensor", check=True)
            self.wanted.add("sensor")
        number = a.runs + 1
        hold = os.path.join(a.work, "hold-%d" % number)
        os.makedirs(hold, exist_ok=True)
        told, a_value, b_value = number * 7 % 200 + 20, number * 7 % 200 + 21, number % 250
        a.start("read:" + LEVEL, "subscribe:" + LEVEL, "touch:%s/a" % hold, "await:%s/set" % hold,
                "notified:%s=%02x" % (LEVEL, told), "write:%s=%02x" % (LEVEL, a_value))
        if during_fault and not armed:
            time.sleep(step["pause"] * 2)
            self.fault(step)
        if self.await_file(os.path.join(hold, "a"), 20 if during_fault else 60):
            b.start("read:" + MODE, "subscribe:" + LEVEL, "touch:%s/b" % hold, "await:%s/set" % hold,
                    "notified:%s=%02x" % (LEVEL, told), "write:%s=%02x" % (MODE, b_value))
            b_linked = self.await_file(os.path.join(hold, "b"), 20 if during_fault else 60)
        else:
            b_linked = None
        if b_linked:
            set_result = run("bleadvctl", "set", "dial", "level=%d" % told)
            if set_result.returncode != 0 and not during_fault:
                raise SoakError("bleadvctl set dial level=%d exited %d: %s" % (told, set_result.returncode, set_result.stderr.strip()))
        open(os.path.join(hold, "set"), "w").close()
        a_lines, a_done = a.finish()
        b_lines, b_done = b.finish() if b_linked is not None else (["not started: A had no link"], False)
        lines = "A: %s; B: %s" % (" | ".join(a_lines), " | ".join(b_lines))
        # A write the central never saw answered, though bleadvd took it (its journal says so):
        # on Debian 12 in the bed a Write Response is now and then lost below bleadvd as the other
        # central's link ends (docs/RELIABILITY.md, "A soak of connections"). Counted, not failed.
        if self.lost_below_bleadvd(a_lines, LEVEL, a_value):
            a_done = True
        if self.lost_below_bleadvd(b_lines, MODE, b_value):
            b_done = True
        expected = ["notified %s: %02x" % (LEVEL, told), "wrote " + LEVEL]
        held = a_done and b_done and all(e in a_lines for e in expected) \
            and "notified %s: %02x" % (LEVEL, told) in b_lines and "wrote " + MODE in b_lines
        if not held:
            if during_fault:
                self.cut += 1
                return
            raise SoakError("the centrals' cycle did not hold: %s\n---- A's notes: %s\n---- B's notes: %s%s" % (
                lines, " | ".join(a.notes()), " | ".join(b.notes()), record_of_links(self.link_began)))
        self.cycles += 1
        status = self.status() or {}
        values = status.get("dial", {}).get("values", {})
        if values.get("level") != str(a_value) or values.get("mode") != str(b_value):
            raise SoakError("status shows the dial's values %s, not level %d and mode %d as written" % (values, a_value, b_value))
        ended = max(float(line.split()[-1]) for line in a_lines + b_lines if line.startswith("disconnected at "))
        self.scan(ended)
        pid = run("systemctl", "show", "-P", "MainPID", "bleadvd").stdout.strip()
        memory = resident(pid)
        if memory:
            self.rss.append((pid,) + memory)

    def scan(self, ended):
        """A scan from hci2 (B's controller) hears every advertisement wanted on; records how
        soon after `ended` (Unix time) the scan began and heard the last of them."""
        # Those on air now: one taking its turn off air is not to be heard.
        status = self.status() or {}
        names = [name for name in sorted(self.wanted) if status.get(name, {}).get("state") == "on" or "id" in status.get(name, {})]
        wanted = [PAYLOADS[name] for name in names]
        _, b = self.centrals
        b.start("--no-link", "scan:8/0.25/" + ",".join(wanted))
        lines, _ = b.finish()
        began = float(next(line.split()[-1] for line in lines if line.startswith("scanning from ")))
        firsts = {}
        for line in lines:
            words = line.split()
            if words[0] == "heard" and len(words) == 5:
                for payload in wanted:
                    if payload in words[2]:
                        firsts[payload] = min(firsts.get(payload, float(words[4])), float(words[4]))
        missing = [name for name in names if PAYLOADS[name] not in firsts]
        if missing:
            raise SoakError("an 8-s scan from hci2 after the links did not hear %s: %s" % (", ".join(missing), " | ".join(lines)))
        self.heard.append((began - ended, max(firsts.values()) - ended))

    def lost_below_bleadvd(self, lines, uuid, value):
        """Whether the central whose run printed `lines` timed out on its write of `value` to
        `uuid` though bleadvd took it; if so, counts it and makes `lines` say it was written."""
        if "write %s: ATT error TimeoutError: GATT timeout for ATT_WRITE_REQUEST" % uuid not in lines \
                or not self.bleadvd_took(lines, uuid, value):
            return False
        lines[:] = [line for line in lines if not line.startswith("write %s:" % uuid)] + ["wrote " + uuid]
        self.lost_below += 1
        # Where it was lost: whether hci0's host sent the Write Response, and whether the
        # central's host received it.
        print("soak: a Write Response to %s lost below bleadvd%s" % (
            uuid, record_of_links(self.link_began, WRITES, "ATT writes and their answers, sent and received")), flush=True)
        return True

    @staticmethod
    def bleadvd_took(lines, uuid, value):
        """Whether bleadvd's journal has the write of `value` to the dial by the central whose
        run printed `lines` (bleadvd logs it once it has taken a write, just before it answers
        bluetoothd)."""
        found = [re.search(r" from ([0-9A-F:]{17})", line) for line in lines if line.startswith("connected to ")]
        if not found or not found[0]:
            return False
        name = "level" if uuid == LEVEL else "mode"
        journal = run("journalctl", "-u", "bleadvd", "--no-pager", "-o", "cat", "--since", "@%d" % (time.time() - 120)).stdout
        return any(line.startswith("dial.%s: %s wrote %d" % (name, found[0].group(1), value)) for line in journal.splitlines())

    @staticmethod
    def await_file(path, seconds):
        deadline = time.monotonic() + seconds
        while not os.path.exists(path):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True

    def step(self, step):
        self.reset_failed()
        if step["kind"] == "fault":
            self.fault(step)
        elif step["kind"] == "control":
            self.control(step)
        elif step["kind"] == "link":
            self.link(step)
        elif step["kind"] == "link-overlap":
            self.link(step, during_fault=True)
        elif step["kind"] == "hci":
            self.hci_fault(step)
        else:
            finish = self.control(step, background=True)
            time.sleep(step["pause"] / 4)
            self.fault(step)
            finish()

    # --- the invariant ---------------------------------------------------------------------
    def violations(self):
        found = []
        want = self.on_air()
        hci0, hci1 = self.active_instances("hci0"), self.active_instances("hci1")  # hci1: the central A's when centrals take part
        if hci0 != want:
            found.append("hci0 has %s registered, %s wanted on air (%s)" % (hci0, want, ", ".join(sorted(self.wanted)) or "none"))
        if hci1 not in (0,) and not self.centrals:
            found.append("hci1 has %s registered, 0 wanted" % hci1)
        status = self.status()
        if status is None:
            found.append("bleadvctl status failed")
        else:
            for name in NAMES[self.config]:
                state = status.get(name, {})
                expected = self.expected_state(name) if name in self.wanted else "off"
                if state.get("state") != expected or state.get("desired") != (name in self.wanted):
                    found.append("status: %s is %s (desired %s), not %s" % (name, state.get("state"), state.get("desired"), expected))
                if "mismatch" in state:
                    found.append("status: %s: %s" % (name, state["mismatch"]))
            for service in SERVICES[self.config]:
                if status.get(service, {}).get("state") != "on":
                    found.append("status: service %s is %s" % (service, status.get(service, {}).get("state")))
            extra = set(status) - set(NAMES[self.config]) - set(SERVICES[self.config])
            if extra:
                found.append("status: unexpected names %s" % sorted(extra))
        if self.hci and want is not None:
            sent = self.sent()
            if sent != want:
                found.append("hci0's controller sends %d advertising sets, %s wanted on air" % (sent, want))
        advertisements, applications = self.exported()
        if len(advertisements) != want:
            found.append("bleadvd exports %d advertisement objects, %s wanted on air" % (len(advertisements), want))
        if len(applications) != 1:
            found.append("bleadvd exports %d GATT applications, not 1" % len(applications))
        return found

    def settle(self, limit=45):
        """Waits until the invariant holds, then checks it again 2.5 s later. Returns the time it
        took to hold; raises with what was wrong."""
        started = time.monotonic()
        while True:
            found = self.violations()
            if not found:
                break
            if time.monotonic() - started > limit:
                self.count(found)
                raise SoakError("not settled after %d s: %s" % (limit, "; ".join(found)))
            time.sleep(0.25)
        took = time.monotonic() - started
        time.sleep(2.5)
        found = self.violations()
        if found and self.rotating():
            # A turn takes one advertisement off air a few milliseconds before the next goes
            # on: a check in between is looked at again.
            time.sleep(0.5)
            found = self.violations()
        if found:
            self.count(found)
            raise SoakError("held, then 2.5 s later: %s" % "; ".join(found))
        return took

    def count(self, found):
        hci0, want = self.active_instances("hci0"), self.on_air()
        if hci0 is not None and want is not None and hci0 > want:
            self.strays += hci0 - want
        elif hci0 is not None and want is not None and hci0 < want:
            self.losses += want - hci0


def progress(line, live):
    """Prints a progress line, and to `live` too when given: make soak's long runs pass the
    guest's console, where the host sees it while the run goes on (the scenario's output is
    shown only once it ends)."""
    print(line)
    if live:
        try:
            with open(live, "w") as console:
                console.write(line + "\n")
        except OSError:
            pass


LINKS = re.compile(r"HCI (Command|Event).*(Advertis|Create Conn|Connection Complete|Disconnect|Scan)|Status: [^S]")
WRITES = re.compile(r"ATT: (Write (Request|Response)|Error Response)")


def record_of_links(since, wanted=LINKS, what="links, advertising, failed commands"):
    """The test bed's HCI record (btmon's capture, every controller) from `since` (HH:MM:SS) on,
    the lines that match `wanted`: by default the links asked for and made, advertising switched,
    and every command that failed. A line inside a packet (an ATT PDU) is shown after its
    packet's own line (controller, direction, time)."""
    capture = os.path.join(os.environ.get("TESTBED_WORK", "/tmp/testbed"), "hci.btsnoop")
    if not os.path.exists(capture):
        return ""
    decoded = run("btmon", "-T", "-C", "250", "-r", capture, timeout=120).stdout.splitlines()
    lines, on, packet = [], False, ""
    for line in decoded:
        stamp = re.search(r"(\d\d:\d\d:\d\d)\.\d+\s*$", line)
        if stamp:
            on = stamp.group(1) >= since
            packet = " ".join(line.split())
        if on and wanted.search(line):
            lines.append(" ".join(line.split()) if stamp else packet + " :: " + line.strip())
    return "\n---- the HCI record from %s on (%s):\n%s" % (since, what, "\n".join(lines[:120]))


def resident(pid):
    """A process's resident memory in KiB from /proc/PID/status: (VmRSS, RssAnon, RssFile), the
    whole, its heap and stacks, and the pages of files it maps (the binary's code among them,
    which grows as code runs for the first time); None when the process is gone."""
    try:
        with open("/proc/%s/status" % pid) as status:
            fields = dict(line.split(":", 1) for line in status if ":" in line)
        return tuple(int(fields[name].split()[0]) for name in ("VmRSS", "RssAnon", "RssFile"))
    except (OSError, KeyError, ValueError):
        return None


def slope(values):
    """The least-squares slope of values over their index: how much a cycle adds."""
    n = len(values)
    if n < 2:
        return 0.0
    mean_x, mean_y = (n + 1) / 2, sum(values) / n
    return sum((i + 1 - mean_x) * (y - mean_y) for i, y in enumerate(values)) / sum((i + 1 - mean_x) ** 2 for i in range(n))


def rss_summary(samples):
    """bleadvd's RSS after each connection cycle, samples of (PID, RSS, anonymous, file-backed,
    in KiB): the first and last, and over the longest stretch of one process (the schedule
    restarts bleadvd now and then) the first and last of each and their slopes (least squares,
    KiB a cycle)."""
    if not samples:
        return "no samples"
    stretches, current = [], []
    for sample in samples:
        if current and current[-1][0] != sample[0]:
            stretches.append(current)
            current = []
        current.append(sample)
    stretches.append(current)
    longest = max(stretches, key=len)
    columns = [[sample[k] for sample in longest] for k in (1, 2, 3)]
    return "%d KiB after the first cycle, %d after the last; over the longest run of one process (%d cycles) " \
           "%d to %d KiB, slope %.2f KiB a cycle (anonymous %d to %d, slope %.2f; files %d to %d, slope %.2f)" % (
               samples[0][1], samples[-1][1], len(longest),
               columns[0][0], columns[0][-1], slope(columns[0]),
               columns[1][0], columns[1][-1], slope(columns[1]),
               columns[2][0], columns[2][-1], slope(columns[2]))


def journal(since):
    return run("journalctl", "-u", "bleadvd", "-u", "bluetooth", "--no-pager", "-o", "short-unix",
               "--since", "@%d" % since).stdout.splitlines()[-80:]


def bus_record(path, offset):
    """The bus record's messages from `offset` (the failed step's start) on that concern hci0's
    power and registrations: signals about /org/bluez/hci0, Set calls, InterfacesAdded and
    Removed, errors; the last 150 lines."""
    kept, keep = [], False
    try:
        with open(path, errors="replace") as f:
            f.seek(offset)
            for line in f:
                if re.match(r"(signal|method call|method return|error) time=", line):
                    keep = (line.startswith("error") or "path=/org/bluez/hci0;" in line
                            or "member=Set" in line or "Interfaces" in line)
                if keep:
                    kept.append(line.rstrip("\n"))
                    del kept[:-150]
    except OSError as error:
        return ["(no bus record: %s)" % error]
    return kept


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--progress", help="where progress goes as it happens too (make soak: /dev/console)")
    parser.add_argument("--centrals", metavar="PYTHON",
                        help="connection cycles in the schedule: two Bumble centrals on hci1 and hci2, run by PYTHON "
                             "(Bumble's); needs a third controller")
    parser.add_argument("--work", default="/tmp", help="where the centrals' lines go")
    parser.add_argument("--hci-faults", action="store_true",
                        help="the controllers' faults in the schedule, half the steps (Bumble's controllers, "
                             "testbed/controllers.py), and what hci0's sends checked after each step")
    args = parser.parse_args()
    schedule = draw(args.seed, args.steps, centrals=bool(args.centrals), hci=args.hci_faults)
    again = "make %s SEED=%d STEPS=%%d%s" % ("soak-faults" if args.hci_faults else "soak", args.seed,
                                             "" if args.centrals else " CENTRALS=0")
    progress("soak: seed %d, %d steps%s (%s repeats it)" % (
        args.seed, args.steps, ", %d of them connection cycles" % sum(s["kind"].startswith("link") for s in schedule)
        if args.centrals else "", again % args.steps), args.progress)
    soak = Soak()
    soak.hci = args.hci_faults
    original = open(CONFIG).read()
    with open(CONFIG, "w") as f:
        f.write(CONFIGS["x"])
    run("systemctl", "restart", "bleadvd", check=True)
    # With the controllers' faults, what passes between BlueZ and its clients is recorded
    # throughout (what BlueZ sends, what is sent to it, errors: not the soak's own polling of
    # bleadvd), and a failure prints the failed step's part of it.
    record = os.path.join(args.work, "soak-bus.txt")
    monitor, offset, now_failed = None, 0, []
    started = time.time()
    failed = None
    try:
        if args.hci_faults:
            with open(record, "w") as out:
                monitor = subprocess.Popen(["dbus-monitor", "--system", "sender='org.bluez'", "destination='org.bluez'",
                                            "type='error'"], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        if args.centrals:
            address = run("busctl", "get-property", "org.bluez", "/org/bluez/hci0", "org.bluez.Adapter1", "Address",
                          check=True).stdout.split()[1].strip('"')
            soak.centrals = (Central(args.centrals, 1, address, args.work), Central(args.centrals, 2, address, args.work))
        soak.settle()
        for index, step in enumerate(schedule, 1):
            step_started = time.time()
            offset = os.path.getsize(record) if monitor else 0
            try:
                soak.step(step)
                took = soak.settle()
            except (SoakError, subprocess.TimeoutExpired) as error:
                failed = (index, step, error, step_started)
                if monitor:
                    now_failed = soak.hci0_now()  # before bleadvd is put back below
                break
            soak.settles.append(took)
            if index % 10 == 0 or index == len(schedule):
                progress("soak: %d/%d steps, last %s, settled in %.1f s" % (index, len(schedule), describe(step), took),
                         args.progress)
    finally:
        if monitor:
            monitor.terminate()
            monitor.wait(timeout=10)
        for central in soak.centrals or ():
            central.stop()
        with open(CONFIG, "w") as f:
            f.write(original)
        run("systemctl", "reset-failed", "bleadvd")
        run("systemctl", "restart", "bleadvd")
    done = len(soak.settles)
    print("soak: %d steps in %.0f s; faults: %s" % (done, time.time() - started,
          ", ".join("%s %d" % item for item in sorted(soak.faults.items())) or "none"))
    if soak.settles:
        print("soak: settle median %.2f s, worst %.2f s; strays %d, losses %d" % (
            statistics.median(soak.settles), max(soak.settles), soak.strays, soak.losses))
    if soak.centrals:
        print("soak: %d connection cycles of two centrals held (connected, read, subscribed, notified, wrote, left); "
              "%d during a fault had their links cut; %d writes bleadvd took whose response the central never got "
              "(lost below bleadvd)" % (soak.cycles, soak.cut, soak.lost_below))
        if soak.heard:
            began = sorted(h[0] for h in soak.heard)
            heard = sorted(h[1] - h[0] for h in soak.heard)
            print("soak: after the last link ended, the scanner on hci2 began in median %.2f s (worst %.2f s); from its "
                  "start it heard every advertisement wanted in median %.2f s, worst %.2f s, %d of %d within 1 s" % (
                      statistics.median(began), began[-1], statistics.median(heard), heard[-1],
                      sum(h <= 1 for h in heard), len(heard)))
        print("soak: bleadvd's RSS over connection cycles: %s" % rss_summary(soak.rss))
    if failed:
        index, step, error, step_started = failed
        print("soak: FAILED at step %d (%s): %s" % (index, describe(step), error), file=sys.stderr)
        print("soak: seed %d; the shortest failing prefix is its first %d steps (the invariant held after each "
              "shorter one): %s" % (args.seed, index, again % index), file=sys.stderr)
        for number, earlier in enumerate(schedule[:index], 1):
            print("    %3d %s" % (number, describe(earlier)), file=sys.stderr)
        print("---- journal of bleadvd and bluetooth since step %d" % index, file=sys.stderr)
        print("\n".join(journal(step_started)), file=sys.stderr)
        if monitor:
            print("---- hci0 by BlueZ when the step failed", file=sys.stderr)
            print("\n".join(now_failed), file=sys.stderr)
            print("---- the system bus since step %d: hci0's signals, Set calls, errors" % index, file=sys.stderr)
            print("\n".join(bus_record(record, offset)), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
