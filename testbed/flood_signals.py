#!/usr/bin/env python3
"""A local user's signal flood (#64 item 7): sends signals addressed to bleadvd's unique name,
each with an array of COUNT uint32 values (262,144: the most a signal's body may carry of
them), as fast as the bus takes them, for SECONDS; prints how many it sent.

  flood_signals.py [--seconds 20] [--count 262144]
"""
import argparse
import asyncio
import time

from dbus_fast import BusType, Message, MessageType
from dbus_fast.aio import MessageBus


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--count", type=int, default=262144)
    args = parser.parse_args()
    bus = await MessageBus(bus_type=BusType.SYSTEM).connect()
    reply = await bus.call(Message(destination="org.freedesktop.DBus", path="/org/freedesktop/DBus", interface="org.freedesktop.DBus",
                                   member="GetNameOwner", signature="s", body=["org.bleadvd.Advertiser"]))
    if reply.message_type == MessageType.ERROR:
        print(f"bleadvd is not on the bus: {reply.body}")
        return 1
    owner = reply.body[0]
    values = list(range(args.count))
    sent = 0
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        # Members and paths bleadvd subscribes to from BlueZ, from a sender that is not BlueZ.
        message = Message(destination=owner, path="/org/bluez/hci0", interface="org.freedesktop.DBus.Properties",
                          member="PropertiesChanged", signature="au", body=[values], message_type=MessageType.SIGNAL)
        await bus.send(message)
        sent += 1
        if sent % 8 == 0:
            await asyncio.sleep(0)
    await asyncio.sleep(0.5)
    bus.disconnect()
    print(f"sent {sent} signals of {args.count} values each to {owner} in {args.seconds:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
