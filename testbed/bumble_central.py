#!/usr/bin/env python3
"""A central on a host stack of its own (Google's Bumble), for the pairing scenario.

In the test bed one bluetoothd serves hci0 and hci1, and its one default agent would answer
for both sides of a pairing: so this central owns hci1 through the HCI user channel
(hci-socket:1, with hci1 powered off in bluetoothd first) and pairs with bleadvd on hci0 with
its own SMP. It starts once and serves a scenario's runs one after another: Bumble takes
20-30 s to start under emulation (its imports), and each start and end of the user channel
resets the emulated controller. It reads one run a line on standard input,

  OUT<TAB>[--io just-works|passkey|confirm] [--code N | --code-from FILE] [--no-bonding]
          [--legacy] [--from-random] [--mtu N]<TAB>STEP<TAB>STEP...      (STEP: read:UUID, write:UUID=HEX, pair, encrypt,
                                              flood:UUID=COUNT, pause:SECONDS, touch:FILE,
                                              await:FILE, scan:SECONDS, subscribe:UUID,
                                              notified:UUID=HEX, timedread:UUID,
                                              writes:UUID=COUNT, link, heard:UUID=SECONDS,
                                              mtu, unsubscribe:UUID, count:UUID=SECONDS)

connects from hci1's public address (so bleadvd's bond names it; --from-random: from the static
random address F0:F1:F2:F3:F4:F5 instead, a second central as bleadvd sees it, a stranger's),
does the steps in order,
disconnects, and writes to the file OUT one line per step, then `exit STATUS` (0, or 1 when
it could not connect or a step it does not know was asked):

  connected to ADDRESS from ADDRESS in S s (T s after it started)
  read UUID: HEX | read UUID: ATT error INSUFFICIENT_ENCRYPTION
  read UUID: HEX in S s | read UUID: ATT error 0x80 NAME in S s   (timedread)
  wrote COUNT UUID in S s (slowest S s)   (writes: COUNT writes with response of 0, 1, ...)
  link: up | link: ended (reason 0x13 ...)   (link: whether the link is still up)
  heard UUID: HEX, HEX | heard UUID: nothing in S s   (heard: the notifications or indications
                                              of a subscribed UUID, waited for up to S s)
  paired (METHOD) in S s | pairing failed: REASON
  encrypted with the stored key in S s | encryption failed: REASON
  wrote UUID | write UUID: ATT error NAME
  flood COUNT writes in S s (N/s)     (writes without response of 0, 1, ...)
  subscribed UUID | subscribe UUID: ATT error NAME
  notified UUID: HEX | notified UUID: nothing in 10 s   (waits for a notification of HEX)
  mtu N: M                            (the step mtu: the ATT MTU --mtu N asked for, and got;
                                      --mtu N is also what its server answers bluetoothd's
                                      exchange with, as a phone has one receive MTU)
  unsubscribed UUID | unsubscribe UUID: ATT error NAME
  count UUID: N, last HEX             (after waiting S s: the notifications of UUID on this link)
  disconnected at T                   (Unix time, in s; when the central ended the link)

touch:FILE creates FILE and await:FILE waits (up to 30 s) until it exists: two centrals order
their steps by them. scan:SECONDS[/EVERY[/HEX,HEX...]] is a scanner's view of the air, from
this controller: it scans passively for that long, starting the scan anew every EVERY seconds
(default 1: Debian 12's emulated controllers report an advertiser once per scan start), or
until every HEX has been heard within some payload (a soak's check ends as soon as it holds),
and prints one line per advertising payload heard,
  scanning from T                       (Unix time, in s)
  heard ADDRESS HEX N FIRST             (N reports of it, the first at FIRST: Unix time, in s)
or `heard nothing`. watch:SECONDS/EVERY/HEX,HEX...[@FILE] scans as scan does, for the whole time (a
scanner kept on across what happens meanwhile), and prints when it ended and when each HEX was heard,
  watch ended at T
  watched HEX T T T...                  (each report whose payload holds HEX: Unix time, in s)
With @FILE it ends sooner, once FILE holds a Unix time T (the scenario writes it when the moment
to time from is known) and every HEX has been heard at T or later, or 10 s after T. A run with --no-link does its steps without connecting (a scanner's runs).
It prints `ready` once it has its controller. Usage: bumble_central.py
ADDRESS [--transport hci-socket:N] [--keys FILE] (hci1 unless told); the keys file is read at
each use, so removing it makes the central forget its bonds.
--code-from reads the 6-digit code from a file as bleadvctl pair prints it for this run's own
address ("ADDRESS: type NNNNNN on the central"; another central's code is not its), waiting up to
20 s for it. --no-bonding asks to pair without the Bonding flag (an
encrypted link, no keys kept); --legacy pairs without LE Secure Connections.
"""
import argparse
import asyncio
import os
import re
import sys
import time

STARTED = time.monotonic()  # before Bumble's imports: under emulation they take seconds

from bumble.att import ATT_Error
from bumble.core import UUID
from bumble.device import Device, Peer
from bumble.hci import Address, HCI_Constant, OwnAddressType
from bumble.keys import JsonKeyStore
from bumble.pairing import PairingConfig, PairingDelegate
from bumble.transport import open_transport

IO = {
    "just-works": PairingDelegate.IoCapability.NO_OUTPUT_NO_INPUT,
    "passkey": PairingDelegate.IoCapability.KEYBOARD_INPUT_ONLY,
    "confirm": PairingDelegate.IoCapability.DISPLAY_OUTPUT_AND_YES_NO_INPUT,
}


class Delegate(PairingDelegate):
    """Types the code it was given (or reads it from bleadvctl pair's output); confirms a
    comparison."""

    def __init__(self, run):
        super().__init__(io_capability=IO[run.io])
        self.run = run

    async def get_number(self):
        if self.run.code is not None:
            return self.run.code
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                match = re.search(re.escape(self.run.own) + r": type (\d{6}) on the central", open(self.run.code_from).read())
            except FileNotFoundError:
                match = None
            if match:
                return int(match.group(1))
            await asyncio.sleep(0.1)
        return None

    async def compare_numbers(self, number, digits):
        self.run.say("compare %06d" % number)
        return True

    async def confirm(self, auto=False):
        return True

    async def display_number(self, number, digits):
        self.run.say("display %06d" % number)


def att_name(error):
    return error.error_name if isinstance(error, ATT_Error) else type(error).__name__ + ": " + str(error)


RUN = argparse.ArgumentParser(prog="run", exit_on_error=False)
RUN.add_argument("steps", nargs="+")
RUN.add_argument("--io", default="just-works", choices=IO)
RUN.add_argument("--code", type=int, default=None)
RUN.add_argument("--code-from", default=None)
RUN.add_argument("--no-bonding", action="store_true")
RUN.add_argument("--legacy", action="store_true")
RUN.add_argument("--no-link", action="store_true")
RUN.add_argument("--from-random", action="store_true")
RUN.add_argument("--mtu", type=int, default=None)


class Run:
    """One request: the file its lines go to, its options and its steps."""

    def __init__(self, out):
        self.out = open(out, "w", buffering=1)

    def parse(self, words):
        vars(self).update(vars(RUN.parse_args(words)))

    def say(self, line):
        self.out.write(line + "\n")


async def run_steps(device, address, run):
    if run.no_link:
        for step in run.steps:
            await do_step(run, None, step)
        return
    started = time.monotonic()
    own = device.random_address if run.from_random else device.public_address
    run.own = own.to_string(with_type_qualifier=False)
    # --mtu N: the MTU this central takes both ways, as a phone's one receive MTU: what its
    # server answers bluetoothd's exchange with (sent as the link comes up), and what it asks.
    if not hasattr(device, "default_server_mtu"):
        device.default_server_mtu = device.gatt_server.max_mtu
    device.gatt_server.max_mtu = run.mtu or device.default_server_mtu
    connection = await device.connect(Address(address, Address.PUBLIC_DEVICE_ADDRESS),
                                      own_address_type=OwnAddressType.RANDOM if run.from_random else OwnAddressType.PUBLIC,
                                      timeout=15)
    run.say("connected to %s from %s in %.2f s (%.1f s after it started)" % (
        address, run.own, time.monotonic() - started, time.monotonic() - STARTED))

    try:
        link = Link(connection)
        for step in run.steps:
            await do_step(run, link, step)
    finally:
        # A link left up would be dropped without a Disconnection Complete when the user
        # channel closes (the emulated controller's reset): end each one here.
        if connection.handle in device.connections:
            try:
                await asyncio.wait_for(connection.disconnect(), 10)
                run.say("disconnected at %.3f" % time.time())
            except (Exception, asyncio.CancelledError) as error:
                run.say("disconnect failed: %s" % att_name(error))


class Link:
    """A connection and its GATT client, which discovers bleadvd's services at the first step
    that needs them: a bonded central encrypts first, as phones do. bluetoothd raises the
    security of a bonded central's ATT channel when it connects, and until the link is
    encrypted the kernel drops every ATT PDU that arrives on it (l2cap_data_channel: the
    channel is in BT_CONFIG), so a discovery sent before encrypting gets no answer."""

    def __init__(self, connection):
        self.connection = connection
        self.peer = None
        self.notified = {}  # UUID -> the values notified, in order
        self.ended = None  # the link's end, as the controller reported it
        connection.on("disconnection", lambda reason: setattr(self, "ended", reason))

    def end_note(self):
        """"; the link had ended (reason 0x13 ...)" once it has: what the central saw."""
        if self.ended is None:
            return ""
        return "; the link had ended (reason 0x%02X %s)" % (self.ended, HCI_Constant.error_name(self.ended))

    async def characteristic(self, uuid):
        # The peer is kept only once discovery completed: a discovery cut short (the link
        # dropped) is made again by the next step, never read as "no such characteristic".
        if self.peer is None:
            peer = Peer(self.connection)
            await peer.discover_services()
            await peer.discover_characteristics()
            self.peer = peer
        found = self.peer.get_characteristics_by_uuid(UUID(uuid))
        if not found:
            raise LookupError("no characteristic %s among the %d services discovered%s" % (uuid, len(self.peer.services), self.end_note()))
        return found[0]


# What a step may raise and still leave the run going: an ATT error, a timeout, and the
# cancellation of a request whose link went (a refused pairing ends the link).
STEP_ERRORS = (Exception, asyncio.CancelledError)


async def do_step(run, link, step):
    kind, _, what = step.partition(":")
    if kind == "read":
        try:
            value = await (await link.characteristic(what)).read_value()
            run.say("read %s: %s" % (what, bytes(value).hex()))
        except STEP_ERRORS as error:
            run.say("read %s: ATT error %s%s" % (what, att_name(error), link.end_note()))
    elif kind == "link":
        run.say("link: up" if link.ended is None else "link: ended" + link.end_note().partition("ended")[2])
    elif kind == "timedread":
        started = time.monotonic()
        try:
            value = await (await link.characteristic(what)).read_value()
            run.say("read %s: %s in %.2f s" % (what, bytes(value).hex(), time.monotonic() - started))
        except STEP_ERRORS as error:
            code = " 0x%02X" % error.error_code if isinstance(error, ATT_Error) else ""
            run.say("read %s: ATT error%s %s in %.2f s%s" % (what, code, att_name(error), time.monotonic() - started, link.end_note()))
    elif kind == "writes":
        uuid, _, count = what.partition("=")
        characteristic = await link.characteristic(uuid)
        started, slowest = time.monotonic(), 0.0
        for i in range(int(count)):
            began = time.monotonic()
            try:
                await characteristic.write_value(bytes([i % 256]), with_response=True)
            except STEP_ERRORS as error:
                run.say("writes %s: ATT error %s after %d%s" % (uuid, att_name(error), i, link.end_note()))
                break
            slowest = max(slowest, time.monotonic() - began)
        else:
            run.say("wrote %s %s in %.2f s (slowest %.2f s)" % (count, uuid, time.monotonic() - started, slowest))
    elif kind == "write":
        uuid, _, hex_value = what.partition("=")
        try:
            await (await link.characteristic(uuid)).write_value(bytes.fromhex(hex_value), with_response=True)
            run.say("wrote %s" % uuid)
        except STEP_ERRORS as error:
            run.say("write %s: ATT error %s%s" % (uuid, att_name(error), link.end_note()))
    elif kind == "pair":
        started = time.monotonic()
        try:
            await asyncio.wait_for(link.connection.pair(), 40)
            run.say("paired (%s) in %.2f s" % (run.io, time.monotonic() - started))
        except STEP_ERRORS as error:
            run.say("pairing failed: %s" % (type(error).__name__ + " " + str(error)).strip())
    elif kind == "encrypt":
        started = time.monotonic()
        try:
            await asyncio.wait_for(link.connection.encrypt(), 15)
            run.say("encrypted with the stored key in %.2f s" % (time.monotonic() - started))
        except STEP_ERRORS as error:
            run.say("encryption failed: %s" % (type(error).__name__ + " " + str(error)).strip())
    elif kind == "flood":
        uuid, _, count = what.partition("=")
        characteristic = await link.characteristic(uuid)
        started = time.monotonic()
        for i in range(int(count)):
            await characteristic.write_value(bytes([i % 256]), with_response=False)
        seconds = time.monotonic() - started
        run.say("flood %s writes in %.2f s (%.0f/s)" % (count, seconds, int(count) / seconds))
    elif kind == "subscribe":
        try:
            await (await link.characteristic(what)).subscribe(
                lambda value, uuid=what: link.notified.setdefault(uuid, []).append(bytes(value).hex()))
            run.say("subscribed %s" % what)
        except STEP_ERRORS as error:
            run.say("subscribe %s: ATT error %s%s" % (what, att_name(error), link.end_note()))
    elif kind == "mtu":
        # After encrypt, for a bonded central: until then the kernel drops its ATT PDUs.
        try:
            run.say("mtu %d: %d" % (run.mtu, await Peer(link.connection).request_mtu(run.mtu)))
        except STEP_ERRORS as error:
            run.say("mtu %d: ATT error %s%s" % (run.mtu, att_name(error), link.end_note()))
    elif kind == "unsubscribe":
        try:
            await (await link.characteristic(what)).unsubscribe()
            run.say("unsubscribed %s" % what)
        except STEP_ERRORS as error:
            run.say("unsubscribe %s: ATT error %s%s" % (what, att_name(error), link.end_note()))
    elif kind == "count":
        uuid, _, seconds = what.partition("=")
        await asyncio.sleep(float(seconds))
        values = link.notified.get(uuid, [])
        run.say("count %s: %d, last %s" % (uuid, len(values), values[-1] if values else "none"))
    elif kind == "notified":
        uuid, _, hex_value = what.partition("=")
        deadline = time.monotonic() + 10
        while hex_value not in link.notified.get(uuid, []) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if hex_value in link.notified.get(uuid, []):
            run.say("notified %s: %s" % (uuid, hex_value))
        else:
            run.say("notified %s: nothing in 10 s (%s)" % (uuid, ", ".join(link.notified.get(uuid, [])) or "none"))
    elif kind == "heard":
        uuid, _, seconds = what.partition("=")
        deadline = time.monotonic() + float(seconds)
        while not link.notified.get(uuid) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        await asyncio.sleep(1)  # what follows the first at once
        run.say("heard %s: %s" % (uuid, ", ".join(link.notified.get(uuid, [])) or "nothing in %s s" % seconds))
    elif kind == "rediscover":
        # What a central does on Service Changed: its discovery is dropped (Bumble's client
        # keeps the services it knows by handle) and made again.
        link.peer = None
        link.connection.gatt_client.services = []
        try:
            await link.characteristic("2a05")
            run.say("discovered again: %d services" % len(link.peer.services))
        except STEP_ERRORS as error:
            run.say("rediscover: ATT error %s%s" % (att_name(error), link.end_note()))
    elif kind == "handle":
        try:
            run.say("handle %s: 0x%04x" % (what, (await link.characteristic(what)).handle))
        except STEP_ERRORS as error:
            run.say("handle %s: ATT error %s%s" % (what, att_name(error), link.end_note()))
    elif kind == "scan":
        await scan(run, what)
    elif kind == "watch":
        await watch(run, what)
    elif kind == "pause":
        await asyncio.sleep(float(what))
    elif kind == "touch":
        open(what, "w").close()
    elif kind == "await":
        deadline = time.monotonic() + 30
        while not os.path.exists(what):
            if time.monotonic() > deadline:
                run.say("await %s: timed out" % what)
                break
            await asyncio.sleep(0.05)
    else:
        raise ValueError("unknown step " + step)


DEVICE = None  # the Bumble device, once main made it
HEARD = None  # while a scan step runs: reports by (address, payload)
WATCHED = None  # while a watch step runs: each report's time and payload


def heard(advertisement):
    if WATCHED is not None:
        WATCHED.append((time.time(), bytes(advertisement.data_bytes).hex()))
    if HEARD is not None:
        key = (str(advertisement.address).replace("/P", ""), bytes(advertisement.data_bytes).hex())
        count, first = HEARD.get(key, (0, time.time()))
        HEARD[key] = (count + 1, first)


def scan_spec(what):
    """SECONDS[/EVERY[/HEX,HEX...]] as (seconds, every, [HEX...])."""
    seconds, _, rest = what.partition("/")
    every, _, parts = rest.partition("/")
    return float(seconds), float(every or 1), [part for part in parts.split(",") if part]


async def scan_for(run, seconds, every, done=lambda: False):
    """Scans passively for `seconds`, started anew every `every` seconds, or until done()."""
    run.say("scanning from %.3f" % time.time())
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        await DEVICE.start_scanning(active=False, filter_duplicates=False)
        await asyncio.sleep(min(every, max(0.0, deadline - time.monotonic())))
        await DEVICE.stop_scanning()
        if done():
            break


async def scan(run, what):
    global HEARD
    seconds, every, until = scan_spec(what)
    HEARD = {}
    await scan_for(run, seconds, every, lambda: until and all(any(part in data for (_, data) in HEARD) for part in until))
    reports, HEARD = HEARD, None
    for (address, data), (count, first) in sorted(reports.items()):
        run.say("heard %s %s %d %.3f" % (address, data, count, first))
    if not reports:
        run.say("heard nothing")


def since_file(path):
    """The Unix time FILE holds, or None while it does not exist or is being written."""
    try:
        with open(path) as file:
            return float(file.read())
    except (OSError, ValueError):
        return None


async def watch(run, what):
    global WATCHED
    what, _, until = what.partition("@")
    seconds, every, parts = scan_spec(what)
    WATCHED = []

    def done():
        since = since_file(until) if until else None
        if since is None:
            return False
        heard_all = all(any(at >= since and part in data for (at, data) in WATCHED) for part in parts)
        return heard_all or time.time() >= since + 10

    await scan_for(run, seconds, every, done)
    reports, WATCHED = WATCHED, None
    run.say("watch ended at %.3f" % time.time())
    for part in parts:
        run.say(" ".join(["watched", part] + ["%.3f" % at for (at, data) in reports if part in data]))


async def main():
    global DEVICE
    parser = argparse.ArgumentParser()
    parser.add_argument("address")
    parser.add_argument("--transport", default="hci-socket:1")
    parser.add_argument("--keys", default=None)
    args = parser.parse_args()

    async with await open_transport(args.transport) as (source, sink):
        device = DEVICE = Device.with_hci("bleadvd-test-central", Address("F0:F1:F2:F3:F4:F5"), source, sink)
        device.on("advertisement", heard)
        if args.keys:
            device.keystore = JsonKeyStore(namespace="bleadvd", filename=args.keys)
        current = None
        device.pairing_config_factory = lambda connection: PairingConfig(
            sc=not current.legacy, mitm=current.io != "just-works", bonding=not current.no_bonding,
            delegate=Delegate(current))
        await device.power_on()
        print("ready (%.1f s after it started)" % (time.monotonic() - STARTED), flush=True)
        loop = asyncio.get_running_loop()
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            out, *words = line.rstrip("\n").split("\t")
            run, status = Run(out), 0
            try:
                run.parse(words)
                current = run
                await run_steps(device, args.address, run)
            except (*STEP_ERRORS, SystemExit) as error:  # argparse exits on some bad options
                status = 1
                run.say("the run failed: %s" % att_name(error))
            finally:
                run.say("exit %d" % status)
                run.out.close()


if __name__ == "__main__":
    asyncio.run(main())
