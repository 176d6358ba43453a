#!/usr/bin/env python3
"""A central on a host stack of its own (Google's Bumble), for the pairing scenario.

In the test bed one bluetoothd serves hci0 and hci1, and its one default agent would answer
for both sides of a pairing: so this central owns hci1 through the HCI user channel
(hci-socket:1, with hci1 powered off in bluetoothd first) and pairs with bleadvd on hci0 with
its own SMP. It connects from hci1's public address (so bleadvd's bond names it), does what it
is told in order, and prints one line per step:

  connected to ADDRESS from ADDRESS in S s (T s after it started)
  read UUID: HEX | read UUID: ATT error INSUFFICIENT_ENCRYPTION
  paired (METHOD) in S s | pairing failed: REASON
  encrypted with the stored key in S s | encryption failed: REASON
  wrote UUID | write UUID: ATT error NAME
  flood COUNT writes in S s (N/s)     (flood:UUID=COUNT: writes without response, 0, 1, ...)

Usage: bumble_central.py ADDRESS [--keys FILE] [--io just-works|passkey|confirm]
         [--code N | --code-from FILE] [--no-bonding] [--legacy] STEP...   (STEP: read:UUID, write:UUID=HEX, pair, encrypt,
         pause:SECONDS)
--code-from reads the 6-digit code from a file as bleadvctl pair prints it ("type NNNNNN on the
central"), waiting up to 20 s for it. --no-bonding asks to pair without the Bonding flag (an
encrypted link, no keys kept); --legacy pairs without LE Secure Connections.
"""
import argparse
import asyncio
import re
import sys
import time

STARTED = time.monotonic()  # before Bumble's imports: under emulation they take seconds

from bumble.att import ATT_Error
from bumble.core import UUID
from bumble.device import Device, Peer
from bumble.hci import Address, OwnAddressType
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

    def __init__(self, io, code, code_from):
        super().__init__(io_capability=IO[io])
        self.code = code
        self.code_from = code_from

    async def get_number(self):
        if self.code is not None:
            return self.code
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                match = re.search(r"type (\d{6}) on the central", open(self.code_from).read())
            except FileNotFoundError:
                match = None
            if match:
                return int(match.group(1))
            await asyncio.sleep(0.1)
        return None

    async def compare_numbers(self, number, digits):
        print("compare %06d" % number, flush=True)
        return True

    async def confirm(self, auto=False):
        return True

    async def display_number(self, number, digits):
        print("display %06d" % number, flush=True)


def att_name(error):
    return error.error_name if isinstance(error, ATT_Error) else type(error).__name__ + ": " + str(error)


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("address")
    parser.add_argument("steps", nargs="+")
    parser.add_argument("--transport", default="hci-socket:1")
    parser.add_argument("--keys", default=None)
    parser.add_argument("--io", default="just-works", choices=IO)
    parser.add_argument("--code", type=int, default=None)
    parser.add_argument("--code-from", default=None)
    parser.add_argument("--no-bonding", action="store_true")
    parser.add_argument("--legacy", action="store_true")
    args = parser.parse_args()

    async with await open_transport(args.transport) as (source, sink):
        device = Device.with_hci("bleadvd-test-central", Address("F0:F1:F2:F3:F4:F5"), source, sink)
        if args.keys:
            device.keystore = JsonKeyStore(namespace="bleadvd", filename=args.keys)
        device.pairing_config_factory = lambda connection: PairingConfig(
            sc=not args.legacy, mitm=args.io != "just-works", bonding=not args.no_bonding,
            delegate=Delegate(args.io, args.code, args.code_from))
        await device.power_on()
        started = time.monotonic()
        connection = await device.connect(Address(args.address, Address.PUBLIC_DEVICE_ADDRESS),
                                          own_address_type=OwnAddressType.PUBLIC, timeout=15)
        print("connected to %s from %s in %.2f s (%.1f s after it started)" % (
            args.address, device.public_address, time.monotonic() - started, time.monotonic() - STARTED), flush=True)
        peer = Peer(connection)
        await peer.discover_services()
        await peer.discover_characteristics()
        for step in args.steps:
            kind, _, what = step.partition(":")
            if kind == "read":
                characteristic = peer.get_characteristics_by_uuid(UUID(what))[0]
                try:
                    value = await characteristic.read_value()
                    print("read %s: %s" % (what, bytes(value).hex()), flush=True)
                except Exception as error:
                    print("read %s: ATT error %s" % (what, att_name(error)), flush=True)
            elif kind == "write":
                uuid, _, hex_value = what.partition("=")
                characteristic = peer.get_characteristics_by_uuid(UUID(uuid))[0]
                try:
                    await characteristic.write_value(bytes.fromhex(hex_value), with_response=True)
                    print("wrote %s" % uuid, flush=True)
                except Exception as error:
                    print("write %s: ATT error %s" % (uuid, att_name(error)), flush=True)
            elif kind == "pair":
                started = time.monotonic()
                try:
                    await asyncio.wait_for(connection.pair(), 40)
                    print("paired (%s) in %.2f s" % (args.io, time.monotonic() - started), flush=True)
                except Exception as error:
                    print("pairing failed: %s" % (type(error).__name__ + " " + str(error)).strip(), flush=True)
            elif kind == "encrypt":
                started = time.monotonic()
                try:
                    await asyncio.wait_for(connection.encrypt(), 15)
                    print("encrypted with the stored key in %.2f s" % (time.monotonic() - started), flush=True)
                except Exception as error:
                    print("encryption failed: %s" % (type(error).__name__ + " " + str(error)).strip(), flush=True)
            elif kind == "flood":
                uuid, _, count = what.partition("=")
                characteristic = peer.get_characteristics_by_uuid(UUID(uuid))[0]
                started = time.monotonic()
                for i in range(int(count)):
                    await characteristic.write_value(bytes([i % 256]), with_response=False)
                seconds = time.monotonic() - started
                print("flood %s writes in %.2f s (%.0f/s)" % (count, seconds, int(count) / seconds), flush=True)
            elif kind == "pause":
                await asyncio.sleep(float(what))
            else:
                sys.exit("unknown step " + step)
        await connection.disconnect()


if __name__ == "__main__":
    asyncio.run(main())
