#!/usr/bin/env python3
"""A seeded chaos soak of the installed bleadvd under systemd, in the test bed guest.

    soak.py --seed N --steps N [--btvirt "PROGRAM OPTIONS"]

Draws a schedule of STEPS steps from SEED (printed first, so that a run can be repeated), then
runs it: bluetoothd restarted as `systemctl restart bluetooth` does (stopped gracefully, with
bus activation of org.bluez in place), killed with -9, restarted twice in a row, stopped and
started again later; hci0 powered off (and on again, or left to bleadvd); both controllers
removed and added; `on`, `off`, `set` and `reload` alone and interleaved with those faults;
bleadvd restarted and killed with -9. After every step it waits for things to settle and
checks the invariant, twice, 2.5 s apart (a stray registration comes late):

- on hci0 (the adapter bleadvd uses), BlueZ's ActiveInstances equals the number of
  advertisements the schedule wants on; on hci1, 0;
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
import statistics
import subprocess
import sys
import time

CONFIG = "/etc/bleadvd/bleadvd.toml"
# Two configs the schedule reloads between. Each wants at most three advertisements on at once:
# btvirt's LE 5.2 controllers hold three advertising sets.
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
""",
    "y": """power_on = true
[advertisement.alpha]
type = "broadcast"
manufacturer_data = { "0xFFFF" = "a1" }
[advertisement.gamma]
type = "broadcast"
manufacturer_data = { "0xFFFF" = "c3" }
[advertisement.sensor]
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
""",
}
NAMES = {"x": ["alpha", "beta", "sensor"], "y": ["alpha", "gamma", "sensor"]}
ENABLED = {"x": {"alpha", "sensor"}, "y": {"alpha", "gamma", "sensor"}}
SERVICES = {"x": ["power"], "y": ["lamp", "power"]}

FAULTS = ["bluetooth-restart", "bluetooth-kill", "bluetooth-restart-twice", "bluetooth-stop-start",
          "power-cycle", "controllers-replug", "bleadvd-restart", "bleadvd-kill"]
# Faults that leave bleadvd running, so that a control call can overlap them.
OVERLAPPABLE = ["bluetooth-restart", "bluetooth-kill", "bluetooth-restart-twice", "bluetooth-stop-start", "power-cycle"]
CONTROLS = ["on", "off", "set", "reload"]


def draw(seed, steps):
    """The schedule: a list of steps, each a dict, from the seed alone."""
    rng = random.Random(seed)
    schedule = []
    for _ in range(steps):
        kind = rng.choices(["fault", "control", "overlap"], weights=[5, 3, 3])[0]
        step = {"kind": kind, "pause": round(rng.uniform(0.0, 1.5), 2), "back": rng.random() < 0.5,
                "name": rng.choice(["alpha", "beta", "gamma", "sensor"]), "value": round(rng.uniform(-10, 40), 1),
                "control": rng.choice(CONTROLS)}
        if kind == "fault":
            step["fault"] = rng.choices(FAULTS, weights=[4, 3, 2, 2, 3, 1, 1, 1])[0]
        elif kind == "overlap":
            step["fault"] = rng.choice(OVERLAPPABLE)
        schedule.append(step)
    return schedule


def describe(step):
    control = step["control"] + ("" if step["control"] == "reload" else " " + ("sensor" if step["control"] == "set" else step["name"]))
    if step["kind"] == "control":
        return control
    if step["kind"] == "overlap":
        return "%s during %s" % (control, step["fault"])
    return step["fault"]


def run(*command, timeout=60, check=False):
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise SoakError("%s exited %d: %s" % (" ".join(command), result.returncode, result.stderr.strip()))
    return result


class SoakError(Exception):
    pass


class Soak:
    def __init__(self, btvirt):
        self.btvirt = btvirt
        self.config = "x"
        self.wanted = set(ENABLED["x"])
        self.faults = {}
        self.settles = []
        self.strays = 0
        self.losses = 0

    # --- the system ------------------------------------------------------------------------
    def active_instances(self, adapter):
        out = run("busctl", "get-property", "org.bluez", "/org/bluez/" + adapter,
                  "org.bluez.LEAdvertisingManager1", "ActiveInstances").stdout.split()
        return int(out[1]) if len(out) == 2 else None

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

    def replug(self):
        """Both virtual controllers removed (btvirt stopped) and made again, as a USB radio
        unplugged and plugged back; the bed's own flakiness (a first reset that times out under
        emulation) is retried, as the bed's setup does."""
        for attempt in range(4):
            run("systemctl", "stop", "testbed-btvirt")
            deadline = time.monotonic() + 15
            while os.path.exists("/sys/class/bluetooth/hci0") and time.monotonic() < deadline:
                time.sleep(0.2)
            run("systemctl", "reset-failed", "testbed-btvirt")
            run("systemd-run", "--quiet", "--unit=testbed-btvirt", *self.btvirt.split(), check=True)
            deadline = time.monotonic() + 40
            while time.monotonic() < deadline:
                if all(self.active_instances(a) is not None for a in ("hci0", "hci1")):
                    return
                time.sleep(0.3)
            print("    (the bed: a virtual controller failed its setup, attempt %d; making both again)" % (attempt + 1))
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

    def step(self, step):
        self.reset_failed()
        if step["kind"] == "fault":
            self.fault(step)
        elif step["kind"] == "control":
            self.control(step)
        else:
            finish = self.control(step, background=True)
            time.sleep(step["pause"] / 4)
            self.fault(step)
            finish()

    # --- the invariant ---------------------------------------------------------------------
    def violations(self):
        found = []
        want = len(self.wanted)
        hci0, hci1 = self.active_instances("hci0"), self.active_instances("hci1")
        if hci0 != want:
            found.append("hci0 has %s registered, %d wanted (%s)" % (hci0, want, ", ".join(sorted(self.wanted)) or "none"))
        if hci1 not in (0,):
            found.append("hci1 has %s registered, 0 wanted" % hci1)
        status = self.status()
        if status is None:
            found.append("bleadvctl status failed")
        else:
            for name in NAMES[self.config]:
                state = status.get(name, {})
                expected = "on" if name in self.wanted else "off"
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
        advertisements, applications = self.exported()
        if len(advertisements) != want:
            found.append("bleadvd exports %d advertisement objects, %d wanted" % (len(advertisements), want))
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
        if found:
            self.count(found)
            raise SoakError("held, then 2.5 s later: %s" % "; ".join(found))
        return took

    def count(self, found):
        hci0 = self.active_instances("hci0")
        if hci0 is not None and hci0 > len(self.wanted):
            self.strays += hci0 - len(self.wanted)
        elif hci0 is not None and hci0 < len(self.wanted):
            self.losses += len(self.wanted) - hci0


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


def journal(since):
    return run("journalctl", "-u", "bleadvd", "-u", "bluetooth", "--no-pager", "-o", "short-unix",
               "--since", "@%d" % since).stdout.splitlines()[-80:]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--btvirt", default="btvirt -l2")
    parser.add_argument("--progress", help="where progress goes as it happens too (make soak: /dev/console)")
    args = parser.parse_args()
    schedule = draw(args.seed, args.steps)
    progress("soak: seed %d, %d steps (make soak SEED=%d STEPS=%d repeats it)" % (args.seed, args.steps, args.seed, args.steps),
             args.progress)
    soak = Soak(args.btvirt)
    original = open(CONFIG).read()
    with open(CONFIG, "w") as f:
        f.write(CONFIGS["x"])
    run("systemctl", "restart", "bleadvd", check=True)
    started = time.time()
    failed = None
    try:
        soak.settle()
        for index, step in enumerate(schedule, 1):
            step_started = time.time()
            try:
                soak.step(step)
                took = soak.settle()
            except (SoakError, subprocess.TimeoutExpired) as error:
                failed = (index, step, error, step_started)
                break
            soak.settles.append(took)
            if index % 10 == 0 or index == len(schedule):
                progress("soak: %d/%d steps, last %s, settled in %.1f s" % (index, len(schedule), describe(step), took),
                         args.progress)
    finally:
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
    if failed:
        index, step, error, step_started = failed
        print("soak: FAILED at step %d (%s): %s" % (index, describe(step), error), file=sys.stderr)
        print("soak: seed %d; the shortest failing prefix is its first %d steps (the invariant held after each "
              "shorter one): make soak SEED=%d STEPS=%d" % (args.seed, index, args.seed, index), file=sys.stderr)
        for number, earlier in enumerate(schedule[:index], 1):
            print("    %3d %s" % (number, describe(earlier)), file=sys.stderr)
        print("---- journal of bleadvd and bluetooth since step %d" % index, file=sys.stderr)
        print("\n".join(journal(step_started)), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
