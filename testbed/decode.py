#!/usr/bin/env python3
"""Decodes what a scanner heard with parsers we did not write: Home Assistant's BTHome parser
(PyPI bthome-ble) for service data 0xFCD2, and beacontools for iBeacon, AltBeacon and Eddystone.

  decode.py bthome ADDRESS HEX [--name NAME] [--key HEX32]
      prints one line per measurement, e.g. "temperature 21.5" (Home Assistant's keys), and
      one per event the parser fires, e.g. "event button_2 long_press", "event dimmer rotate_left 3"
  decode.py bthome-sequence ADDRESS [--name NAME] [--key HEX32] < "TIME HANDLE HEX" lines
      (advertising payloads, as testbed/hcicapture.py --adv-data --timestamps prints them) one
      parser for all, each payload given twice: one line per event it fires, in order
  decode.py ibeacon HEX          (manufacturer data of company 0x004C, without the company id)
      prints "uuid UUID major N minor N tx_power N"
  decode.py eddystone HEX        (service data of UUID 0xFEAA)
      prints "uid namespace HEX instance HEX tx_power N", "url URL tx_power N" or
      "tlm voltage MV temperature C advertising_count N uptime_tenths N"

(AltBeacon is not here: no maintained PyPI parser decodes it; beacontools does not.)

Runs in the test bed's decoder venv (testbed/setup.sh), inside the VM.
"""
import argparse
import sys


def bthome(args):
    from bthome_ble import BTHomeBluetoothDeviceData
    from habluetooth import BluetoothServiceInfoBleak
    from bleak.backends.device import BLEDevice

    data = bytes.fromhex(args.hex)
    device = BLEDevice(args.address, args.name, None)
    info = BluetoothServiceInfoBleak(
        name=args.name or args.address, address=args.address, rssi=-60, manufacturer_data={},
        service_data={"0000fcd2-0000-1000-8000-00805f9b34fb": data},
        service_uuids=["0000fcd2-0000-1000-8000-00805f9b34fb"], source="local", device=device,
        advertisement=None, connectable=False, time=0, tx_power=None)
    parser = BTHomeBluetoothDeviceData(bindkey=bytes.fromhex(args.key) if args.key else None)
    update = parser.update(info)
    # signal_strength is the reception's (the rssi given above), not decoded from the data.
    values = {key: value for key, value in update.entity_values.items() if key.key != "signal_strength"}
    if not values and not update.binary_entity_values and not update.events:
        print("bthome-ble decoded nothing from %s" % args.hex, file=sys.stderr)
        return 1
    for key, value in sorted(values.items(), key=lambda kv: kv[0].key):
        print("%s %s" % (key.key, value.native_value))
    for key, value in sorted(update.binary_entity_values.items(), key=lambda kv: kv[0].key):
        print("%s %s" % (key.key, value.native_value))
    for key, event in sorted(update.events.items(), key=lambda kv: kv[0].key):
        steps = (event.event_properties or {}).get("steps")
        print("event %s %s%s" % (key.key, event.event_type, "" if steps is None else " %d" % steps))
    return 0


def bthome_sequence(args):
    """One parser, as Home Assistant keeps one per sensor, given each advertising payload of
    standard input ("TIME HANDLE HEX" lines: what the host gave a controller, in order) twice, as
    a receiver hears a packet repeated: prints each event it fires, in order."""
    from bthome_ble import BTHomeBluetoothDeviceData
    from habluetooth import BluetoothServiceInfoBleak
    from bleak.backends.device import BLEDevice

    device = BLEDevice(args.address, args.name, None)
    parser = BTHomeBluetoothDeviceData(bindkey=bytes.fromhex(args.key) if args.key else None)
    for line in sys.stdin:
        fields = line.split()
        if len(fields) != 3:
            continue
        stamp, payload = float(fields[0]), bytes.fromhex(fields[2])
        data = None
        while len(payload) >= 2 and data is None:
            length, kind = payload[0], payload[1]
            if kind == 0x16 and payload[2:4] == b"\xd2\xfc":
                data = payload[4:1 + length]
            payload = payload[1 + length:]
        if data is None:
            continue
        for repeat in (0, 0.05):
            info = BluetoothServiceInfoBleak(
                name=args.name or args.address, address=args.address, rssi=-60, manufacturer_data={},
                service_data={"0000fcd2-0000-1000-8000-00805f9b34fb": data},
                service_uuids=["0000fcd2-0000-1000-8000-00805f9b34fb"], source="local", device=device,
                advertisement=None, connectable=False, time=stamp + repeat, tx_power=None)
            for key, event in sorted(parser.update(info).events.items(), key=lambda kv: kv[0].key):
                steps = (event.event_properties or {}).get("steps")
                print("event %s %s%s" % (key.key, event.event_type, "" if steps is None else " %d" % steps))
    return 0


def ibeacon(args):
    from beacontools import parse_packet
    # beacontools parses the AD structure: length, type 0xFF, company 0x004C, then the data.
    data = bytes.fromhex("4c00" + args.hex)
    packet = parse_packet(bytes([len(data) + 1, 0xFF]) + data)
    if packet is None:
        print("beacontools decoded nothing from %s" % args.hex, file=sys.stderr)
        return 1
    print("uuid %s major %d minor %d tx_power %d" % (packet.uuid, packet.major, packet.minor, packet.tx_power))
    return 0


def eddystone(args):
    from beacontools import parse_packet
    from beacontools.packet_types.eddystone import EddystoneTLMFrame, EddystoneUIDFrame, EddystoneURLFrame
    # beacontools wants the AD structures: the 0xFEAA service UUID list, then its service data.
    data = bytes.fromhex("aafe" + args.hex)
    frame = parse_packet(bytes([3, 0x03, 0xAA, 0xFE, len(data) + 1, 0x16]) + data)
    if isinstance(frame, EddystoneUIDFrame):
        print("uid namespace %s instance %s tx_power %d" % (frame.namespace, frame.instance, frame.tx_power))
    elif isinstance(frame, EddystoneURLFrame):
        print("url %s tx_power %d" % (frame.url, frame.tx_power))
    elif isinstance(frame, EddystoneTLMFrame):
        # beacontools' seconds_since_boot is the frame's SEC_CNT, in tenths of a second; its
        # temperature is read as unsigned 8.8 (a negative one would come out 256 too high).
        print("tlm voltage %d temperature %g advertising_count %d uptime_tenths %d"
              % (frame.voltage, frame.temperature, frame.advertising_count, frame.seconds_since_boot))
    else:
        print("beacontools decoded no Eddystone UID, URL or TLM from %s" % args.hex, file=sys.stderr)
        return 1
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="kind", required=True)
    b = sub.add_parser("bthome")
    b.add_argument("address")
    b.add_argument("hex")
    b.add_argument("--name")
    b.add_argument("--key")
    q = sub.add_parser("bthome-sequence")
    q.add_argument("address")
    q.add_argument("--name")
    q.add_argument("--key")
    for kind in ("ibeacon", "eddystone"):
        sub.add_parser(kind).add_argument("hex")
    args = parser.parse_args()
    return {"bthome": bthome, "bthome-sequence": bthome_sequence, "ibeacon": ibeacon, "eddystone": eddystone}[args.kind](args)


if __name__ == "__main__":
    sys.exit(main())
