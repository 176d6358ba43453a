#!/usr/bin/env python3
"""Every network Improv's join through wpa_supplicant saves survives a restart of wpa_supplicant.

    scripts/wpa-roundtrip.py BLEADVD [COUNT] [SEED]

Runs the real wpa_supplicant (Debian's wpasupplicant) on a veth in a network
namespace of its own, with an admin's network in its config and update_config=1, and joins
COUNT (default 1000) random networks through BLEADVD called as join-wpa-supplicant, exactly as
bleadvd runs it: the SSID in IMPROV_SSID_HEX, the password on standard input. With no access
point there, each join waits for a connection once it has selected its network: the config is
saved then (as a completed join saves it) and the program killed, so the network stays as the
join left it. Every 25 joins, wpa_supplicant is restarted on the file it saved, as at the next
boot, and must start, keep the admin's network, and hold each network with the SSID it was given
and the password it was given: what wpa_supplicant then holds is read back by its GET_NETWORK
(the SSID) and by saving its config once more (a key: GET_NETWORK hides it), and must be the
passphrase itself or the key WPA derives from it (hashlib's PBKDF2, not bleadvd's).

A join whose SSID the program refuses (a quote and a '#' in an SSID wpa_supplicant would save in
quotes) must add no network. The first cases are the ones #78 measured.

Needs root (a network namespace) and wpa_supplicant. Exit status 0 when every case held; the
last line is `wpa-roundtrip: N passed, N failed`.
"""
import hashlib
import os
import random
import socket
import subprocess
import sys
import tempfile
import time

BATCH = int(os.environ.get("WPA_ROUNDTRIP_BATCH", "25"))
ADMIN_SSID = b"admins-own-network"
ADMIN_PSK = "the-admins-passphrase"
PRINTABLE = bytes(range(0x20, 0x7F))
AWKWARD = b'"#\\ \'$`'

# #78's measured cases: a passphrase with a quote then a '#', and an SSID of the same kind.
FIRST = [
    (b"home", b'7k"Q#p2!xZ'),
    (b"home", b'abcdefgh"#zzz'),
    (b'a"b#c', b"correct-horse"),
    (b'say "hi" #1', b'pass"word#1"'),
    (b"home", b"#leading-hash"),
    (b"cafe", b""),
    (b"lab", b"0123456789abcdef" * 4),
]


def refused(ssid):
    """The program's rule: an SSID of printable ASCII (saved in quotes) with a quote and a '#'."""
    return all(0x20 <= b <= 0x7E for b in ssid) and b'"' in ssid and b"#" in ssid


def pick(rng, length, awkward):
    return bytes(rng.choice(AWKWARD) if rng.random() < awkward else rng.choice(PRINTABLE) for _ in range(length))


def random_case(rng):
    kind = rng.random()
    if kind < 0.5:
        ssid = pick(rng, rng.randint(1, 32), 0.25)
    elif kind < 0.75:
        ssid = bytes(rng.randrange(256) for _ in range(rng.randint(1, 32)))
    else:
        ssid = pick(rng, rng.randint(1, 31), 0.25)
        at = rng.randint(0, len(ssid))
        ssid = ssid[:at] + bytes([rng.choice([0x00, 0x0A, 0x7F, 0xC3, 0xFF])]) + ssid[at:]
    if rng.random() < 0.03:
        return ssid, b""
    if rng.random() < 0.03:
        return ssid, bytes(rng.choice(b"0123456789abcdefABCDEF") for _ in range(64))
    return ssid, pick(rng, rng.randint(8, 63), 0.2)


def expected_key(ssid, password):
    if not password:
        return None
    if len(password) == 64:
        return password.decode().lower()
    return hashlib.pbkdf2_hmac("sha1", password, ssid, 4096, 32).hex()


class Control:
    """wpa_supplicant's control socket: one request a datagram, as the join program sends them."""

    def __init__(self, server, folder):
        self.path = os.path.join(folder, "harness-%d" % os.getpid())
        if os.path.exists(self.path):
            os.unlink(self.path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.connect(server)
        self.sock.settimeout(5)

    def request(self, command):
        self.sock.send(command.encode())
        return self.sock.recv(65536).decode(errors="replace")

    def close(self):
        self.sock.close()
        os.unlink(self.path)


class Supplicant:
    def __init__(self, folder, namespace):
        self.folder = folder
        self.namespace = namespace
        self.config = os.path.join(folder, "wpa_supplicant.conf")
        self.ctrl = os.path.join(folder, "ctrl")
        self.log = os.path.join(folder, "wpa_supplicant.log")
        self.process = None
        self.control = None

    def fresh_config(self):
        with open(self.config, "w") as file:
            file.write('ctrl_interface=DIR=%s\nupdate_config=1\n\nnetwork={\n\tssid="%s"\n\tpsk="%s"\n}\n'
                       % (self.ctrl, ADMIN_SSID.decode(), ADMIN_PSK))

    def start(self):
        """Starts on the config file; False (its log kept) when it does not come up in 10 s."""
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(
                ["ip", "netns", "exec", self.namespace, "wpa_supplicant", "-D", "wired", "-i", "d0", "-c", self.config],
                stdout=log, stderr=subprocess.STDOUT)
        server = os.path.join(self.ctrl, "d0")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            if os.path.exists(server):
                try:
                    self.control = Control(server, self.folder)
                    if self.control.request("PING").strip() == "PONG":
                        return True
                except OSError:
                    pass
            time.sleep(0.02)
        return False

    def stop(self):
        if self.control:
            self.control.close()
            self.control = None
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def networks(self):
        rows = self.control.request("LIST_NETWORKS").splitlines()[1:]
        return {int(row.split("\t")[0]): row.split("\t")[3] if row.count("\t") >= 3 else "" for row in rows if row}

    def log_tail(self):
        with open(self.log, errors="replace") as log:
            return [line.rstrip() for line in log.readlines()[-6:]]


def join(program, folder, ssid, password, supplicant):
    """Runs the join until it has selected its network (or exits); the new network's id or None, and what it said."""
    before = set(supplicant.networks())
    environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "IMPROV_SSID_HEX": ssid.hex(),
                   "BLEADVD_WPA_CTRL": supplicant.ctrl, "BLEADVD_WPA_INTERFACE": "d0", "RUNTIME_DIRECTORY": folder}
    process = subprocess.Popen([program], env=environment, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
    process.stdin.write(password)
    process.stdin.close()
    deadline = time.monotonic() + 10
    new = None
    while time.monotonic() < deadline and process.poll() is None:
        added = {id: flags for id, flags in supplicant.networks().items() if id not in before}
        # Selected: SELECT_NETWORK enables it (ADD_NETWORK adds it disabled).
        new = next((id for id, flags in added.items() if "DISABLED" not in flags), None)
        if new is not None:
            break
        time.sleep(0.01)
    if process.poll() is None:
        process.kill()
    said = process.stdout.read().decode(errors="replace").strip()
    process.wait()
    if new is None:
        added = [id for id in supplicant.networks() if id not in before]
        new = added[0] if added else None
    return new, said


def shown_ssid(ssid):
    """GET_NETWORK's answer for an SSID: in quotes when printable, else hex (wpa_supplicant's rule)."""
    return '"%s"' % ssid.decode() if all(0x20 <= b <= 0x7E for b in ssid) else ssid.hex()


def holds(key, ssid, password):
    """Whether a psk line's value, as wpa_supplicant saved it, is the password given: its key in
    64 hex digits, or the passphrase itself in quotes; no line for an open network."""
    if key is not None and len(key) >= 2 and key.startswith('"') and key.endswith('"'):
        return key[1:-1].encode() == password
    return key == expected_key(ssid, password)


def saved_keys(config):
    """Each network block's psk line, in order, as the file has them."""
    keys, current = [], None
    with open(config, errors="replace") as file:
        for line in file:
            line = line.strip()
            if line == "network={":
                current = None
            elif line.startswith("psk="):
                current = line[4:]
            elif line == "}":
                keys.append(current)
    return keys


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = os.path.abspath(sys.argv[1])
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 78
    rng = random.Random(seed)
    cases = (FIRST + [random_case(rng) for _ in range(max(0, count - len(FIRST)))])[:count]
    folder = tempfile.mkdtemp(prefix="bleadvd-wpa-")
    os.chmod(folder, 0o755)
    program = os.path.join(folder, "join-wpa-supplicant")
    os.symlink(binary, program)
    namespace = "bleadvd-wpa-%d" % os.getpid()
    subprocess.run(["ip", "netns", "add", namespace], check=True)
    supplicant = Supplicant(folder, namespace)
    passed = failed = joined = refusals = restarts = 0
    started = time.monotonic()
    try:
        subprocess.run(["ip", "-n", namespace, "link", "add", "d0", "type", "veth", "peer", "name", "d1"], check=True)
        subprocess.run(["ip", "-n", namespace, "link", "set", "d0", "up"], check=True)
        print("wpa-roundtrip: %s, %d cases (seed %d), a restart every %d" %
              (subprocess.run(["wpa_supplicant", "-v"], capture_output=True, text=True).stdout.splitlines()[0], len(cases), seed, BATCH))
        for first in range(0, len(cases), BATCH):
            batch = cases[first:first + BATCH]
            supplicant.fresh_config()
            if not supplicant.start():
                sys.exit("wpa-roundtrip: wpa_supplicant did not start on a fresh config: %s" % supplicant.log_tail())
            made = []  # (case number, ssid, password, network id)
            for number, (ssid, password) in enumerate(batch, start=first + 1):
                new, said = join(program, folder, ssid, password, supplicant)
                if refused(ssid):
                    if new is None and "cannot hold" in said:
                        refusals += 1
                        passed += 1
                    else:
                        failed += 1
                        print("FAIL case %d: SSID %s should be refused with no network added; network %s, it said %r"
                              % (number, ssid.hex(), new, said))
                elif new is None:
                    failed += 1
                    print("FAIL case %d: SSID %s: no network selected; it said %r" % (number, ssid.hex(), said))
                else:
                    made.append((number, ssid, password, new))
            if supplicant.control.request("SAVE_CONFIG").strip() != "OK":
                sys.exit("wpa-roundtrip: SAVE_CONFIG failed")
            supplicant.stop()
            restarts += 1
            if not supplicant.start():
                failed += len(made)
                print("FAIL cases %d-%d: wpa_supplicant does not start on the config it saved: %s"
                      % (first + 1, first + len(batch), " / ".join(supplicant.log_tail())))
                supplicant.stop()
                continue
            networks = supplicant.networks()
            # What wpa_supplicant read: GET_NETWORK hides a key ("*"), so it saves again what it
            # now holds, and that is compared with what was given (a passphrase the reader cut at
            # a '#' comes out cut).
            if supplicant.control.request("SAVE_CONFIG").strip() != "OK":
                sys.exit("wpa-roundtrip: SAVE_CONFIG after the restart failed")
            keys = saved_keys(supplicant.config)
            admin = supplicant.control.request("GET_NETWORK 0 ssid").strip()
            if admin != '"%s"' % ADMIN_SSID.decode() or keys[:1] != ['"%s"' % ADMIN_PSK]:
                failed += 1
                print("FAIL after cases %d-%d: the admin's network changed: ssid %s, psk %s" % (first + 1, first + len(batch), admin, keys[:1]))
            # Networks keep their ids across a save and a restart, in order.
            for position, (number, ssid, password, new) in enumerate(made, start=1):
                problems = []
                if new not in networks:
                    problems.append("network %d is gone" % new)
                else:
                    got = supplicant.control.request("GET_NETWORK %d ssid" % new).strip()
                    if got != shown_ssid(ssid):
                        problems.append("SSID %s, not %s" % (got, shown_ssid(ssid)))
                    mark = supplicant.control.request("GET_NETWORK %d id_str" % new).strip()
                    if mark != '"bleadvd-improv"':
                        problems.append("id_str %s" % mark)
                    key = keys[position] if position < len(keys) else "(no block)"
                    if not holds(key, ssid, password):
                        problems.append("psk %s, for the password %r" % (key, password.decode()))
                if problems:
                    failed += 1
                    print("FAIL case %d: SSID %s: %s" % (number, ssid.hex(), "; ".join(problems)))
                else:
                    passed += 1
                    joined += 1
            supplicant.stop()
    finally:
        supplicant.stop()
        subprocess.run(["ip", "netns", "delete", namespace])
        subprocess.run(["rm", "-rf", folder])
    print("wpa-roundtrip: %d joined and read back after %d restarts, %d SSIDs refused before any change, in %.0f s"
          % (joined, restarts, refusals, time.monotonic() - started))
    print("wpa-roundtrip: %d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
