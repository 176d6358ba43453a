#!/usr/bin/python3
"""Removes an advertising instance from a controller through the kernel's management socket,
behind bluetoothd's back: the fault `btmgmt rm-adv` makes, for stacks whose btmgmt runs no
command without a terminal (5.82).

  rmadv.py INDEX INSTANCE      prints the kernel's status (0 is success) and exits with it
"""
import ctypes
import os
import struct
import sys

AF_BLUETOOTH, BTPROTO_HCI, HCI_CHANNEL_CONTROL, HCI_DEV_NONE = 31, 1, 3, 0xFFFF
SOCK_RAW, SOCK_CLOEXEC = 3, 0o2000000
MGMT_OP_REMOVE_ADVERTISING, MGMT_EV_CMD_COMPLETE, MGMT_EV_CMD_STATUS = 0x003F, 0x0001, 0x0002


def main():
    index, instance = int(sys.argv[1]), int(sys.argv[2])
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.socket(AF_BLUETOOTH, SOCK_RAW | SOCK_CLOEXEC, BTPROTO_HCI)
    address = struct.pack("<HHH", AF_BLUETOOTH, HCI_DEV_NONE, HCI_CHANNEL_CONTROL)
    if fd < 0 or libc.bind(fd, address, len(address)) < 0:
        sys.exit("rmadv: cannot open the management socket: %s" % os.strerror(ctypes.get_errno()))
    os.write(fd, struct.pack("<HHHB", MGMT_OP_REMOVE_ADVERTISING, index, 1, instance))
    while True:
        reply = os.read(fd, 1024)
        event, event_index, _ = struct.unpack_from("<HHH", reply)
        if event in (MGMT_EV_CMD_COMPLETE, MGMT_EV_CMD_STATUS) and event_index == index:
            opcode, status = struct.unpack_from("<HB", reply, 6)
            if opcode == MGMT_OP_REMOVE_ADVERTISING:
                print(status)
                sys.exit(status)


if __name__ == "__main__":
    main()
