#!/usr/bin/python3
"""`make bench`: bleadvd side by side with `busctl call` (a C client of the same daemon),
bluetoothctl and BlueZ's example-advertisement, in one test-bed boot, against the real
bluetoothd. Runs inside the VM as root (testbed/bench/bench.sh); prints one table.

Every time comes from one clock (CLOCK_REALTIME): this script stamps a command's start just
before it spawns it and its exit when wait() returns; dbus-monitor (--profile, a monitor of
the whole system bus) stamps each message as it receives it. "Registered" is the moment the
method return of RegisterAdvertisement reaches the monitor, "unregistered" that of
UnregisterAdvertisement; ActiveInstances is then checked to be what it should be.

The commands a script runs (on, off, status, set) are timed against busctl's call of the same
method in BENCH_ROUNDS rounds (3) of BENCH_CLI_RUNS calls each (20), the tools alternating call
by call; the table gives each round's ratios, and the bench exits 1 (after printing everything)
when a ratio over all rounds, or bleadvd's RSS, is past its target (#82).

Usage, inside the test bed: bench.py  (BENCH_RUNS=N for another number of runs than 7 of the
rest; BENCH_IDLE=SECONDS for the idle window, 60 by default)
"""
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
import types

import dbus

from cli_ratio import TARGETS

RUNS = int(os.environ.get("BENCH_RUNS", "7"))
CLI_RUNS = int(os.environ.get("BENCH_CLI_RUNS", "20"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
# Targets (#82): bleadvctl against busctl's call of the same method (cli_ratio.py's, which
# measures the same natively), and bleadvd's RSS.
RSS_TARGET_KIB = 11_800
SETS = int(os.environ.get("BENCH_SETS", "100"))
IDLE = int(os.environ.get("BENCH_IDLE", "60"))
WORK = os.environ.get("TESTBED_WORK", "/tmp/testbed")
EXAMPLE = "/usr/share/doc/bluez-test-scripts/examples/example-advertisement"
BLUETOOTHD = "/usr/libexec/bluetooth/bluetoothd"
API = ("org.bleadvd.Advertiser", "/org/bleadvd/Advertiser", "org.bleadvd.Advertiser1")
MANAGER = "org.bluez.LEAdvertisingManager1"
CONFIG = """\
power_on = true
adapter = "hci0"
[advertisement.bench]
enabled = %s
type = "broadcast"
local_name = "Bench"
manufacturer_data = { "0xFFFF" = "0102" }

[advertisement.sensor]
enabled = false

[advertisement.sensor.bthome]
local_name = "Sensor"
temperature = 21.5
"""

bus = dbus.SystemBus()
# What a command that fails shows: the bus's messages around it, and the threads of this
# daemon (gdb). Set once they exist.
MONITOR = None
DEBUG_PID = None


# --- the bus, as a monitor sees it ------------------------------------------------------------

class Monitor:
    """dbus-monitor --profile of the system bus, read back as a list of messages."""

    def __init__(self):
        self.path = os.path.join(WORK, "bench-monitor.txt")
        self.out = open(self.path, "w")
        self.proc = subprocess.Popen(["stdbuf", "-oL", "dbus-monitor", "--system", "--profile"],
                                     stdout=self.out, stderr=subprocess.STDOUT)
        time.sleep(1.0)

    def messages(self):
        """Every message so far: dicts with type, ts, serial, sender, dest and, for calls and
        signals, path, interface, member; for replies and errors, reply_to."""
        self.out.flush()
        found = []
        with open(self.path) as f:
            for line in f:
                if line.startswith("#"):
                    continue
                fields = line.rstrip("\n").split("\t")
                if len(fields) < 6:
                    continue
                m = {"type": fields[0], "ts": float(fields[1]), "serial": fields[2],
                     "sender": fields[3], "dest": fields[4]}
                if m["type"] in ("mc", "sig"):
                    m.update(path=fields[5], interface=fields[6] if len(fields) > 6 else "",
                             member=fields[7] if len(fields) > 7 else "")
                else:
                    m.update(reply_to=fields[5], member="")
                found.append(m)
        return found

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def call_and_return(messages, since, member, sender=None):
    """The first call of `member` (from `sender`, if given) at or after `since`, and its reply:
    (call, reply), reply None when there is none."""
    for i, m in enumerate(messages):
        if m["ts"] < since or m["type"] != "mc" or m["member"] != member:
            continue
        if sender and m["sender"] != sender:
            continue
        for r in messages[i + 1:]:
            if r["type"] in ("mr", "err") and r["dest"] == m["sender"] and r["reply_to"] == m["serial"]:
                return m, r
        return m, None
    return None, None


# --- BlueZ -------------------------------------------------------------------------------------

def active_instances(adapter="hci0"):
    try:
        props = dbus.Interface(bus.get_object("org.bluez", "/org/bluez/" + adapter),
                               "org.freedesktop.DBus.Properties")
        return int(props.Get(MANAGER, "ActiveInstances"))
    except dbus.DBusException:
        return None


def wait_until(what, condition, seconds=30, step=0.01):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if condition():
            return time.time()
        time.sleep(step)
    raise SystemExit("bench: timed out after %ss waiting for %s" % (seconds, what))


def owner(name):
    return str(bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus")
               .GetNameOwner(name, dbus_interface="org.freedesktop.DBus"))


# --- processes ---------------------------------------------------------------------------------

def rss_kib(pid, field="VmRSS"):
    """A figure of /proc/PID/status in KiB: VmRSS, or its parts RssAnon, RssFile, RssShmem."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def rss_by_mapping(pid):
    """Resident KiB of `pid` by what is mapped: (name, rss, private dirty), largest first. Anonymous
    mappings are named by their size (malloc's arenas, thread stacks); the file mappings are shared, clean
    pages of binaries and libraries, save what relocation wrote."""
    totals, name = {}, None
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5 and not fields[0].endswith(":"):
                if len(fields) > 5:
                    name = os.path.basename(fields[5])
                else:
                    start, end = (int(x, 16) for x in fields[0].split("-"))
                    name = "[anon, mappings of %d KiB]" % ((end - start) // 1024)
            elif fields[0] in ("Rss:", "Private_Dirty:", "AnonHugePages:"):
                entry = totals.setdefault(name, [0, 0, 0])
                entry[("Rss:", "Private_Dirty:", "AnonHugePages:").index(fields[0])] += int(fields[1])
    return sorted(((n, r, d, h) for n, (r, d, h) in totals.items()), key=lambda e: -e[1])


def cpu_ticks(pid):
    """utime + stime of every thread of `pid`, in clock ticks."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def wakeups(pid):
    """Context switches of each thread of `pid`, by thread id: each is a wake-up (or a
    preemption)."""
    counts = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                counts[tid] = sum(int(line.split()[1]) for line in f
                                  if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")))
        except FileNotFoundError:
            pass
    return counts


def wakeups_between(before, after):
    """Context switches in between, of the threads alive at both ends, and how many threads
    came and went."""
    both = before.keys() & after.keys()
    return sum(after[t] - before[t] for t in both), len(before.keys() ^ after.keys())


def timed(argv):
    """Runs argv to its end: (start, exit) times; fails on a non-zero exit."""
    start = time.time()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    end = time.time()
    if done.returncode != 0:
        print("bench: %s exited %d: %s" % (" ".join(argv), done.returncode, done.stderr.strip()))
        if MONITOR:
            print("bench: what the bus carried from 4 s before its start on:")
            for m in MONITOR.messages():
                if m["ts"] >= start - 4:
                    print("  %.3f %s %s %s %s %s" % (m["ts"] - start, m["type"], m["sender"], m["dest"], m.get("member", ""), m.get("reply_to", m["serial"])))
        if DEBUG_PID:
            subprocess.run(["gdb", "-p", str(DEBUG_PID), "-batch", "-ex", "thread apply all bt"])
        raise SystemExit(1)
    return start, end


class Bleadvd:
    """bleadvd started by this script, with $NOTIFY_SOCKET pointing at a socket of ours."""

    def __init__(self, enabled):
        self.config = os.path.join(WORK, "bench.toml")
        with open(self.config, "w") as f:
            f.write(CONFIG % ("true" if enabled else "false"))
        self.notify_path = os.path.join(WORK, "bench-notify.sock")
        if os.path.exists(self.notify_path):
            os.unlink(self.notify_path)
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(self.notify_path)
        env = dict(os.environ, NOTIFY_SOCKET=self.notify_path)
        self.log = open(os.path.join(WORK, "bleadvd.log"), "a")
        self.started = time.time()
        self.proc = subprocess.Popen(["bleadvd", "--config", self.config, "--state-directory",
                                      os.path.join(WORK, "bench-state")],
                                     env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self.ready = None
        self.notify.settimeout(30)
        while self.ready is None:
            datagram = self.notify.recv(4096).decode()
            if "READY=1" in datagram.split("\n"):
                self.ready = time.time()
        self.pid = self.proc.pid
        self.name = owner(API[0])

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)
        self.notify.close()


# --- the measurements --------------------------------------------------------------------------

def cli(action):
    return [["bleadvctl", action.lower(), "bench"],
            ["busctl", "call", API[0], API[1], API[2], action, "as", "1", "bench"]]


def on_off_runs(monitor, daemon):
    """bleadvctl and busctl: ROUNDS × CLI_RUNS on+off each, alternating; the times and the split
    of an on."""
    rows = {"bleadvctl": {"on": [], "off": [], "split": []}, "busctl": {"on": [], "off": [], "split": []}}
    marks = []
    for _ in range(ROUNDS * CLI_RUNS):
        for tool, (on, off) in zip(("bleadvctl", "busctl"), zip(cli("On"), cli("Off"))):
            start, end = timed(on)
            if active_instances() != 1:
                raise SystemExit("bench: after %s, ActiveInstances is %s, not 1" % (" ".join(on), active_instances()))
            marks.append((tool, "on", start, end))
            time.sleep(0.3)
            start, end = timed(off)
            if active_instances() != 0:
                raise SystemExit("bench: after %s, ActiveInstances is %s, not 0" % (" ".join(off), active_instances()))
            marks.append((tool, "off", start, end))
            time.sleep(0.3)
    messages = monitor.messages()
    for tool, action, start, end in marks:
        member = "On" if action == "on" else "Off"
        request, reply = call_and_return(messages, start, member)
        bluez_member = "RegisterAdvertisement" if action == "on" else "UnregisterAdvertisement"
        register, registered = call_and_return(messages, request["ts"], bluez_member, sender=daemon.name)
        if not (reply and registered) or reply["type"] != "mr" or registered["type"] != "mr":
            raise SystemExit("bench: no successful %s / %s found for the %s run at %.3f" % (member, bluez_member, tool, start))
        rows[tool][action].append(1000 * (registered["ts"] - start))
        if action == "on":
            hello = next(m for m in messages if m["ts"] >= start and m["type"] == "mc"
                         and m["member"] == "Hello" and m["sender"] == request["sender"])
            rows[tool]["split"].append({
                "start → first bus message": hello["ts"] - start,
                "first message → On sent": request["ts"] - hello["ts"],
                "daemon: On received → Register sent": register["ts"] - request["ts"],
                "BlueZ: Register round trip": registered["ts"] - register["ts"],
                "daemon: registered → On reply": reply["ts"] - registered["ts"],
                "On reply → CLI exit": end - reply["ts"],
            })
        else:
            rows[tool].setdefault("off-split", []).append({
                "daemon: Off received → Unregister sent": register["ts"] - request["ts"],
                "BlueZ: Unregister round trip": registered["ts"] - register["ts"],
                "daemon: unregistered → Off reply": reply["ts"] - registered["ts"],
            })
    return rows, marks


def command_runs(argvs):
    """ROUNDS × CLI_RUNS of each tool's command, alternating: start → exit, ms."""
    times = {"bleadvctl": [], "busctl": []}
    for _ in range(ROUNDS * CLI_RUNS):
        for tool, argv in zip(("bleadvctl", "busctl"), argvs):
            start, end = timed(argv)
            times[tool].append(1000 * (end - start))
    return times


def status_runs():
    return command_runs((["bleadvctl", "status"], ["busctl", "call", API[0], API[1], API[2], "Status"]))


def set_runs():
    """A BTHome value set in place, by each tool (the sensor is off air: the call is the same)."""
    return command_runs((["bleadvctl", "set", "sensor", "temperature=21.5"],
                         ["busctl", "call", API[0], API[1], API[2], "Set", "sa{sv}", "sensor", "1", "temperature", "s", "21.5"]))


def bluetoothctl_runs(monitor):
    """bluetoothctl, started for each run: start → registered, `advertise off` → unregistered."""
    on, off, rss, procs = [], [], [], []
    for i in range(RUNS):
        out = open(os.path.join(WORK, "bench-bluetoothctl.out"), "w")
        start = time.time()
        proc = subprocess.Popen(["bluetoothctl"], stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT, text=True)
        # Commands typed before it has found the controller are refused: wait for it, as a user would.
        wait_until("bluetoothctl to find the controller", lambda: "Controller" in open(out.name).read())
        proc.stdin.write("menu advertise\nname Bench-CTL\nmanufacturer 0xffff 0x01 0x02\nback\nadvertise on\n")
        proc.stdin.flush()
        wait_until("bluetoothctl's advertisement", lambda: active_instances() == 1)
        time.sleep(0.3)
        rss.append(rss_kib(proc.pid))
        off_start = time.time()
        proc.stdin.write("advertise off\n")
        proc.stdin.flush()
        wait_until("bluetoothctl's advertisement to go", lambda: active_instances() == 0)
        time.sleep(0.3)
        procs.append((start, off_start))
        proc.stdin.write("quit\n")
        proc.stdin.flush()
        proc.wait(timeout=10)
    messages = monitor.messages()
    for start, off_start in procs:
        _, registered = call_and_return(messages, start, "RegisterAdvertisement")
        _, unregistered = call_and_return(messages, off_start, "UnregisterAdvertisement")
        on.append(1000 * (registered["ts"] - start))
        off.append(1000 * (unregistered["ts"] - off_start))
    return {"on": on, "off": off, "rss": rss, "cycle": procs[-1]}


def example_runs(monitor):
    """BlueZ's example-advertisement, started for each run: start → registered."""
    on, rss, starts = [], [], []
    for _ in range(RUNS):
        start = time.time()
        proc = subprocess.Popen(["python3", EXAMPLE, "--timeout", "600"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until("example-advertisement's advertisement", lambda: active_instances() == 1)
        time.sleep(0.3)
        rss.append(rss_kib(proc.pid))
        starts.append(start)
        proc.terminate()
        proc.wait(timeout=10)
        wait_until("example-advertisement's advertisement to go", lambda: active_instances() == 0)
    messages = monitor.messages()
    for start in starts:
        _, registered = call_and_return(messages, start, "RegisterAdvertisement")
        on.append(1000 * (registered["ts"] - start))
    return {"on": on, "rss": rss}


def idle_window(procs):
    """CPU ticks, wake-ups and RSS of each of `procs` (name: pid) left alone for IDLE seconds."""
    before = {k: (cpu_ticks(p), wakeups(p)) for k, p in procs.items()}
    time.sleep(IDLE)
    after = {k: (cpu_ticks(p), wakeups(p)) for k, p in procs.items()}
    return {k: (after[k][0] - before[k][0], wakeups_between(before[k][1], after[k][1]), rss_kib(p))
            for k, p in procs.items()}


def idle(daemon):
    """bleadvd (two advertisements) and bluetoothctl advertising at once, then
    example-advertisement (btvirt's controllers hold three advertising sets), each left alone for
    IDLE seconds: the CPU ticks and wake-ups of each."""
    ctl = subprocess.Popen(["bluetoothctl"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, text=True)
    ctl.stdin.write("menu advertise\nname Bench-CTL\nback\nadvertise on\n")
    ctl.stdin.flush()
    timed(cli("On")[0])
    timed(["bleadvctl", "on", "sensor"])
    wait_until("three advertisements", lambda: active_instances() == 3)
    time.sleep(2)
    figures = idle_window({"bleadvd": daemon.pid, "bluetoothctl": ctl.pid})
    ctl.stdin.write("advertise off\nquit\n")
    ctl.stdin.flush()
    ctl.wait(timeout=10)
    timed(cli("Off")[0])
    timed(["bleadvctl", "off", "sensor"])
    wait_until("the advertisements to go", lambda: active_instances() == 0)
    example = subprocess.Popen(["python3", EXAMPLE, "--timeout", str(IDLE + 60)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_until("example-advertisement's advertisement", lambda: active_instances() == 1)
    time.sleep(2)
    figures.update(idle_window({"example-advertisement": example.pid}))
    example.terminate()
    example.wait(timeout=10)
    wait_until("example-advertisement's advertisement to go", lambda: active_instances() == 0)
    return figures


def set_share():
    """bleadvd's own share of a `set` (testbed/bench/set_share.py), its sensor on air."""
    timed(["bleadvctl", "on", "sensor"])
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "set_share.py")
    done = subprocess.run([sys.executable, script, "--system", "sensor", "temperature", str(SETS)],
                          capture_output=True, text=True)
    timed(["bleadvctl", "off", "sensor"])
    return (done.stdout.strip() or done.stderr.strip()).splitlines()[-1]


def bluez_count(messages, names):
    """The messages bluetoothd sent, or the bus sent it (its AddMatch and RemoveMatch replies)."""
    bluez = [n for n, v in names.items() if v == "bluetoothd"]
    return sum(1 for m in messages
               if m["sender"] in bluez or (m["sender"] == "org.freedesktop.DBus" and m["dest"] in bluez))


def cycle_messages(messages, start, end):
    return [m for m in messages if start <= m["ts"] <= end]


def describe(m, names):
    who = lambda n: names.get(n, n)
    if m["type"] in ("mc", "sig"):
        return "%-4s %-14s → %-14s %s" % (m["type"], who(m["sender"]), who(m["dest"]), m["member"])
    return "%-4s %-14s → %-14s (reply)" % (m["type"], who(m["sender"]), who(m["dest"]))


def ready_runs():
    """exec → READY=1 with the advertisement enabled (so READY means registered)."""
    times = []
    for _ in range(RUNS):
        daemon = Bleadvd(enabled=True)
        times.append(1000 * (daemon.ready - daemon.started))
        if active_instances() != 1:
            raise SystemExit("bench: READY=1 but ActiveInstances is %s" % active_instances())
        daemon.stop()
        wait_until("the advertisement to go", lambda: active_instances() == 0)
    return times


def crash_runs(monitor, daemon):
    """kill -9 of bluetoothd, started again: its start → registered again, and manager answers →
    registered again."""
    from_start, from_manager = [], []
    timed(cli("On")[0])
    for _ in range(RUNS):
        subprocess.run(["pkill", "-9", "-x", "bluetoothd"], check=True)
        wait_until("org.bluez to vanish", lambda: not bus.name_has_owner("org.bluez"))
        time.sleep(0.3)
        start = time.time()
        subprocess.Popen([BLUETOOTHD, "-n", "-E"], stdout=open(os.path.join(WORK, "bluetoothd.log"), "a"),
                         stderr=subprocess.STDOUT)
        manager = wait_until("hci0's advertising manager", lambda: active_instances() is not None)
        wait_until("the advertisement registered again", lambda: active_instances() == 1)
        messages = monitor.messages()
        _, registered = call_and_return(messages, start, "RegisterAdvertisement", sender=daemon.name)
        from_start.append(1000 * (registered["ts"] - start))
        from_manager.append(1000 * (registered["ts"] - manager))
        time.sleep(0.5)
    # hci1 was left unpowered by the restarts; nothing here needs it.
    return from_start, from_manager


def rss_touched():
    """bleadvd's RSS by mapping with the kernel's fault-around off: on a page fault the kernel
    maps up to 16 neighbouring pages of a file that are in the page cache, so a file mapping's
    RSS counts pages never touched. With it off, RSS is what bleadvd touches. (None when the
    kernel does not let us set it.)"""
    knob = "/sys/kernel/debug/fault_around_bytes"
    if not os.path.exists(knob):
        subprocess.run(["mount", "-t", "debugfs", "none", "/sys/kernel/debug"], capture_output=True)
    try:
        with open(knob) as f:
            saved = f.read().strip()
        with open(knob, "w") as f:
            f.write("4096")
    except OSError:
        return None
    try:
        daemon = Bleadvd(enabled=True)
        time.sleep(1)
        # The unstripped build has the installed binary's addresses, and its symbols.
        by_module = subprocess.run(
            [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "touched.py"), str(daemon.pid),
             os.path.join(os.environ["TESTBED_ROOT"], ".build/release/bleadvd")],
            capture_output=True, text=True).stdout
        figures = (rss_kib(daemon.pid), rss_by_mapping(daemon.pid), by_module)
        daemon.stop()
        wait_until("the advertisement to go", lambda: active_instances() == 0)
        return figures
    finally:
        with open(knob, "w") as f:
            f.write(saved)


# --- the table ---------------------------------------------------------------------------------

def spread(values, unit=" ms"):
    if not values:
        return "—"
    return "%s%s [%s–%s]" % (fmt(statistics.median(values)), unit, fmt(min(values)), fmt(max(values)))


def fmt(v):
    return "{:,.0f}".format(v) if abs(v) >= 10 else "{:.1f}".format(v)


def ratio(a, b):
    return "%.2f×" % (statistics.median(a) / statistics.median(b))


def measure():
    """Runs every measurement, in the order the table needs them, and returns their figures."""
    global MONITOR, DEBUG_PID
    f = types.SimpleNamespace()
    monitor = MONITOR = Monitor()
    f.ready = ready_runs()
    daemon = Bleadvd(enabled=False)
    DEBUG_PID = daemon.pid
    f.bench_name = bus.get_unique_name()
    f.names = {daemon.name: "bleadvd", owner("org.bluez"): "bluetoothd", "org.freedesktop.DBus": "bus",
               "<none>": "(broadcast)"}
    f.rows, f.marks = on_off_runs(monitor, daemon)
    f.status = status_runs()
    f.set = set_runs()
    f.ctl = bluetoothctl_runs(monitor)
    f.example = example_runs(monitor)
    f.idle = idle(daemon)
    f.set_line = set_share()
    f.crash_start, f.crash_manager = crash_runs(monitor, daemon)
    f.daemon_rss = rss_kib(daemon.pid)
    f.daemon_rss_parts = [rss_kib(daemon.pid, part) for part in ("RssAnon", "RssFile", "RssShmem")]
    f.daemon_maps = rss_by_mapping(daemon.pid)
    f.messages = monitor.messages()
    daemon.stop()
    wait_until("the advertisement to go", lambda: active_instances() == 0)
    f.touched = rss_touched()
    monitor.stop()
    f.counts = cycles(f)
    return f


def cycles(f):
    """The messages of one on + off of each tool, from the bus monitor's record; names each
    tool's connection in f.names."""
    counts = {}
    for tool in ("bleadvctl", "busctl"):
        on = [m for m in f.marks if m[0] == tool and m[1] == "on"][-1]
        off = next(m for m in f.marks if m[0] == tool and m[1] == "off" and m[2] > on[2])
        # Up to the next command's start (0.3 s after this off's exit): bluetoothd's last
        # RemoveMatch can come after the off's reply, and counted only to the exit it was missed.
        until = min((m[2] for m in f.marks if m[2] > off[3]), default=off[3] + 0.3)
        cycle = [m for m in cycle_messages(f.messages, on[2], until) if f.bench_name not in (m["sender"], m["dest"])]
        for action in ("On", "Off"):
            request, _ = call_and_return(f.messages, on[2], action)
            f.names[request["sender"]] = tool
        counts[tool] = cycle
    ctl_cycle = cycle_messages(f.messages, f.ctl["cycle"][0], f.ctl["cycle"][1] + 1.0)
    counts["bluetoothctl"] = [m for m in ctl_cycle if f.bench_name not in (m["sender"], m["dest"])]
    return counts


def print_table(f):
    """The table of docs/BENCHMARKS.md, and the ratios against the targets."""
    b, c, ctl, example, idle_figures, counts = f.rows["bleadvctl"], f.rows["busctl"], f.ctl, f.example, f.idle, f.counts
    print()
    print("| figure | bleadvctl | `busctl call` (same daemon) | bluetoothctl | example-advertisement |")
    print("|---|---|---|---|---|")
    print("| on: command start → registered | %s | %s | %s | %s |" % (spread(b["on"]), spread(c["on"]), spread(ctl["on"]), spread(example["on"])))
    print("| off: command start → unregistered | %s | %s | %s | — |" % (spread(b["off"]), spread(c["off"]), spread(ctl["off"])))
    print("| status: command start → exit | %s | %s | — | — |" % (spread(f.status["bleadvctl"]), spread(f.status["busctl"])))
    print("| set: command start → exit | %s | %s | — | — |" % (spread(f.set["bleadvctl"]), spread(f.set["busctl"])))
    print("| RSS of the advertising process | %s KiB | (bleadvd) | %s KiB | %s KiB |" % (
        fmt(idle_figures["bleadvd"][2]), fmt(statistics.median(ctl["rss"])), fmt(statistics.median(example["rss"]))))
    print("| CPU ticks in %d s idle, advertising (bleadvd: two) | %d | — | %d | %d |" % (
        IDLE, idle_figures["bleadvd"][0], idle_figures["bluetoothctl"][0], idle_figures["example-advertisement"][0]))
    print("| context switches in %d s idle (threads started or ended) | %d (%d) | — | %d (%d) | %d (%d) |" % (
        (IDLE,) + idle_figures["bleadvd"][1] + idle_figures["bluetoothctl"][1] + idle_figures["example-advertisement"][1]))
    print("| system-bus messages for one on + off (of them bluetoothd's) | %d (%d) | %d (%d) | %d (%d) (its start to off) | — |" % (
        len(counts["bleadvctl"]), bluez_count(counts["bleadvctl"], f.names), len(counts["busctl"]), bluez_count(counts["busctl"], f.names),
        len(counts["bluetoothctl"]), bluez_count(counts["bluetoothctl"], f.names)))
    print("| exec → READY=1 (advertisement registered) | %s | — | — | — |" % spread(f.ready))
    print("| kill -9 bluetoothd: its start → registered again | %s | — | — | — |" % spread(f.crash_start))
    print("| kill -9 bluetoothd: manager answers → registered again | %s | — | — | — |" % spread(f.crash_manager))
    print("| bleadvd RSS at the end | %s KiB | — | — | — |" % fmt(f.daemon_rss))
    print("| of it anonymous; files' pages (page cache, shared) | %s KiB; %s KiB | — | — | — |" % (
        fmt(f.daemon_rss_parts[0]), fmt(f.daemon_rss_parts[1] + f.daemon_rss_parts[2])))
    print()
    print("bleadvctl / busctl, by round of %d calls (targets: on, off, set ≤ 1.10×; status ≤ 1.20×):" % CLI_RUNS)
    for number, (ours, theirs) in enumerate(zip(rounds(f.ratio_pairs()[0]), rounds(f.ratio_pairs()[1])), 1):
        print("  round %d: %s" % (number, "; ".join("%s %s" % (verb, ratio(ours[verb], theirs[verb])) for verb in TARGETS)))
    print("  all %d: %s" % (ROUNDS * CLI_RUNS, "; ".join("%s %s" % (verb, ratio(*pair)) for verb, pair in f.ratios().items())))
    print("bleadvctl on / bluetoothctl %s; / example-advertisement %s" % (ratio(b["on"], ctl["on"]), ratio(b["on"], example["on"])))


def print_splits(f):
    """Where the time of one on and one off goes, and the daemon's own share."""
    b, c = f.rows["bleadvctl"], f.rows["busctl"]
    print()
    print("One `bleadvctl on`, split (median [min–max] of %d):" % (ROUNDS * CLI_RUNS))
    for key in b["split"][0]:
        print("  %-40s %s" % (key, spread([1000 * s[key] for s in b["split"]])))
    own = [1000 * (s["daemon: On received → Register sent"] + s["daemon: registered → On reply"]) for s in b["split"]]
    print("  %-40s %s (target ≤ 5 ms)" % ("the daemon's own share", spread(own)))
    print("One `bleadvctl off`, split:")
    for key in b["off-split"][0]:
        print("  %-40s %s" % (key, spread([1000 * s[key] for s in b["off-split"]])))
    print("One `busctl call … On`, split:")
    for key in c["split"][0]:
        print("  %-40s %s" % (key, spread([1000 * s[key] for s in c["split"]])))
    own_off = [1000 * (s["daemon: Off received → Unregister sent"] + s["daemon: unregistered → Off reply"]) for s in b["off-split"]]
    print("  %-40s %s (target ≤ 5 ms)" % ("the daemon's own share", spread(own_off)))


def print_memory(f):
    """bleadvd's resident memory by mapping, and the same with fault-around off."""
    print()
    print("bleadvd's resident memory by mapping (KiB: resident, of which private dirty, of which huge pages):")
    for name, rss, dirty, huge in f.daemon_maps:
        if rss >= 64:
            print("  %-40s %6d %6d %6d" % (name, rss, dirty, huge))
    if f.touched:
        print()
        print("The same with the kernel's fault-around off (pages touched), %s KiB in all:" % fmt(f.touched[0]))
        for name, rss, dirty, huge in f.touched[1]:
            if rss >= 64:
                print("  %-40s %6d %6d %6d" % (name, rss, dirty, huge))
        print()
        print(f.touched[2].rstrip())


def print_messages(f):
    """A set's own share, and every message of one on + off."""
    print()
    print("bleadvd's own share of a set, %d calls 150 ms apart (native: make bench-set):" % SETS)
    print("  " + f.set_line)
    for tool in ("bleadvctl", "busctl"):
        print()
        print("Messages of one %s on + off (%d):" % (tool, len(f.counts[tool])))
        for m in f.counts[tool]:
            print("  " + describe(m, f.names))


def rounds(times):
    """{verb: [ms]} of all rounds → [{verb: [ms]}] a round each (the runs are in order)."""
    return [{verb: values[i * CLI_RUNS:(i + 1) * CLI_RUNS] for verb, values in times.items()} for i in range(ROUNDS)]


def attach_ratios(f):
    """The times the targets are about, by tool, and their ratios over all rounds."""
    def pairs():
        tool = lambda name: {"on": f.rows[name]["on"], "off": f.rows[name]["off"], "status": f.status[name], "set": f.set[name]}
        return tool("bleadvctl"), tool("busctl")
    f.ratio_pairs = pairs
    f.ratios = lambda: {verb: (pairs()[0][verb], pairs()[1][verb]) for verb in TARGETS}


def past_targets(f):
    """Each figure past its target, as a phrase."""
    failed = []
    for verb, (ours, theirs) in f.ratios().items():
        value = statistics.median(ours) / statistics.median(theirs)
        if value > TARGETS[verb]:
            failed.append("bleadvctl %s / busctl %.2f× > %.2f×" % (verb, value, TARGETS[verb]))
    rss = f.idle["bleadvd"][2]
    if rss > RSS_TARGET_KIB:
        failed.append("bleadvd's RSS %s KiB > %s KiB" % (fmt(rss), fmt(RSS_TARGET_KIB)))
    return failed


def main():
    kernel = os.uname().release
    version = subprocess.run([BLUETOOTHD, "--version"], capture_output=True, text=True).stdout.strip()
    print("bench: %d runs each (on, off, status and set: %d rounds of %d); medians [min–max]; BlueZ %s, kernel %s, %d CPUs" % (
        RUNS, ROUNDS, CLI_RUNS, version, kernel, os.cpu_count()))
    figures = measure()
    attach_ratios(figures)
    print_table(figures)
    print_splits(figures)
    print_memory(figures)
    print_messages(figures)
    failed = past_targets(figures)
    print()
    print("bench: FAILED, past the target: %s" % "; ".join(failed) if failed else "bench: every target met")
    sys.stdout.flush()
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
