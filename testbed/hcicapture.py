#!/usr/bin/python3
"""Reads a btmon capture (btsnoop, monitor format) and prints the advertising payloads the
host gave a controller, as hex, oldest first: the exact bytes that went on air.

  hcicapture.py FILE [--index N] (--adv-data | --scan-data | --intervals | --reports) [--timestamps]

With --timestamps each line starts with the time btmon saw the command, in seconds since the
epoch (the same clock as `date +%s.%N`). Covers the legacy (LE Set Advertising Data / Scan Response Data) and the extended
(LE Set Extended Advertising Data / Scan Response Data) commands. Each line:
  HANDLE HEX        (HANDLE is "-" for legacy commands, which have none)
With --intervals, the advertising parameters instead (LE Set Advertising Parameters and LE Set
Extended Advertising Parameters), one line each: HANDLE MIN MAX, in units of 0.625 ms.
With --reports, what the controller heard instead (LE Advertising Report and LE Extended
Advertising Report events), one line per report: ADDRESS HEX.
"""
import argparse
import struct
import sys

MONITOR_FORMAT = 2001
# btsnoop timestamps count microseconds from year 0; this is 1970-01-01 in them.
BTSNOOP_EPOCH = 0x00DCDDB30F2F8000
COMMAND_PACKET, EVENT_PACKET = 2, 3
LE_META_EVENT, ADV_REPORT, EXT_ADV_REPORT = 0x3E, 0x02, 0x0D
LEGACY_ADV, LEGACY_SCAN = 0x2008, 0x2009
EXT_ADV, EXT_SCAN = 0x2037, 0x2038
LEGACY_PARAMS, EXT_PARAMS = 0x2006, 0x2036


def records(path):
    with open(path, "rb") as f:
        header = f.read(16)
        if len(header) < 16 or header[:8] != b"btsnoop\0":
            sys.exit("hcicapture: %s is not a btsnoop file" % path)
        _, datalink = struct.unpack(">II", header[8:])
        if datalink != MONITOR_FORMAT:
            sys.exit("hcicapture: %s is not a btmon capture (datalink %d)" % (path, datalink))
        while True:
            head = f.read(24)
            if len(head) < 24:
                return
            _, included, flags, _, stamp = struct.unpack(">IIIIQ", head)
            data = f.read(included)
            yield flags >> 16, flags & 0xFFFF, data, (stamp - BTSNOOP_EPOCH) / 1e6


def commands(path, index):
    for record_index, opcode, packet, stamp in records(path):
        if record_index != index or opcode != COMMAND_PACKET or len(packet) < 3:
            continue
        command, length = struct.unpack("<HB", packet[:3])
        yield command, packet[3:3 + length], stamp


def intervals(path, index):
    for command, params, stamp in commands(path, index):
        if command == LEGACY_PARAMS and len(params) >= 4:
            yield "-", *struct.unpack("<HH", params[:4]), stamp
        elif command == EXT_PARAMS and len(params) >= 9:
            low, high = params[3:6] + b"\0", params[6:9] + b"\0"
            yield "%d" % params[0], struct.unpack("<I", low)[0], struct.unpack("<I", high)[0], stamp


def reports(path, index):
    """(address, data, time) of every advertising report the controller sent the host."""
    for record_index, opcode, packet, stamp in records(path):
        if record_index != index or opcode != EVENT_PACKET or len(packet) < 4 or packet[0] != LE_META_EVENT:
            continue
        subevent, body = packet[2], packet[4:]
        if subevent == ADV_REPORT and len(body) >= 9:
            address, length = body[2:8], body[8]
            yield address, body[9:9 + length], stamp
        elif subevent == EXT_ADV_REPORT and len(body) >= 24:
            address, length = body[3:9], body[23]
            yield address, body[24:24 + length], stamp


def payloads(path, index, legacy_opcode, extended_opcode):
    for command, params, stamp in commands(path, index):
        if command == legacy_opcode and params:
            yield "-", params[1:1 + params[0]], stamp
        elif command == extended_opcode and len(params) >= 4:
            yield "%d" % params[0], params[4:4 + params[3]], stamp


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--index", type=int, default=0)
    kind = parser.add_mutually_exclusive_group(required=True)
    kind.add_argument("--adv-data", action="store_true")
    kind.add_argument("--scan-data", action="store_true")
    kind.add_argument("--intervals", action="store_true")
    kind.add_argument("--reports", action="store_true")
    parser.add_argument("--timestamps", action="store_true")
    args = parser.parse_args()
    if args.reports:
        for address, data, stamp in reports(args.file, args.index):
            text = ":".join("%02X" % b for b in reversed(address))
            print(("%.6f " % stamp if args.timestamps else "") + text, data.hex())
        return
    if args.intervals:
        for handle, low, high, stamp in intervals(args.file, args.index):
            print(("%.6f " % stamp if args.timestamps else "") + handle, low, high)
        return
    opcodes = (LEGACY_ADV, EXT_ADV) if args.adv_data else (LEGACY_SCAN, EXT_SCAN)
    for handle, data, stamp in payloads(args.file, args.index, *opcodes):
        print(("%.6f " % stamp if args.timestamps else "") + handle, data.hex())


if __name__ == "__main__":
    main()
