#!/usr/bin/python3
"""Sends one command to the kernel's Bluetooth management socket, behind bluetoothd's back: the
faults `btmgmt` makes, for stacks whose btmgmt runs no command without a terminal (5.82).

  mgmt.py INDEX power on|off        Set Powered
  mgmt.py INDEX rm-adv INSTANCE     Remove Advertising

Prints the kernel's status (0 is success) and exits with it.
"""
import ctypes
import os
import struct
import sys

AF_BLUETOOTH, BTPROTO_HCI, HCI_CHANNEL_CONTROL, HCI_DEV_NONE = 31, 1, 3, 0xFFFF
SOCK_RAW, SOCK_CLOEXEC = 3, 0o2000000
MGMT_EV_CMD_COMPLETE, MGMT_EV_CMD_STATUS = 0x0001, 0x0002
COMMANDS = {  # name: (opcode, argument -> one parameter byte)
    "power": (0x0005, {"off": 0, "on": 1}.__getitem__),
    "rm-adv": (0x003F, int),
}


def main():
    if len(sys.argv) != 4 or sys.argv[2] not in COMMANDS:
        sys.exit(__doc__.strip())
    index = int(sys.argv[1])
    opcode, parameter = COMMANDS[sys.argv[2]]
    try:
        value = parameter(sys.argv[3])
    except (KeyError, ValueError):
        sys.exit(__doc__.strip())
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.socket(AF_BLUETOOTH, SOCK_RAW | SOCK_CLOEXEC, BTPROTO_HCI)
    address = struct.pack("<HHH", AF_BLUETOOTH, HCI_DEV_NONE, HCI_CHANNEL_CONTROL)
    if fd < 0 or libc.bind(fd, address, len(address)) < 0:
        sys.exit("mgmt: cannot open the management socket: %s" % os.strerror(ctypes.get_errno()))
    os.write(fd, struct.pack("<HHHB", opcode, index, 1, value))
    while True:
        reply = os.read(fd, 1024)
        event, event_index, _ = struct.unpack_from("<HHH", reply)
        if event in (MGMT_EV_CMD_COMPLETE, MGMT_EV_CMD_STATUS) and event_index == index:
            answered, status = struct.unpack_from("<HB", reply, 6)
            if answered == opcode:
                print(status)
                sys.exit(status)


if __name__ == "__main__":
    main()
