#!/usr/bin/python3
"""Hostile calls to bleadvd's control API and to its advertisement objects, with dbus-python
(not our D-Bus code). One line per call: "CASE<TAB>ok" or "CASE<TAB>ERROR NAME<TAB>MESSAGE"
(messages longer than 300 characters are cut, and say how long they were).

Usage: hostile_calls.py BUS_ADDRESS ADVERTISEMENT_PATH
"""
import subprocess
import sys

import dbus
import dbus.lowlevel

NAME = "org.bleadvd.Advertiser"
PATH = "/org/bleadvd/Advertiser"
IFACE = "org.bleadvd.Advertiser1"
PROPS = "org.freedesktop.DBus.Properties"


def main():
    bus = dbus.bus.BusConnection(sys.argv[1])
    advertisement = sys.argv[2]
    owner = bus.get_name_owner(NAME)
    big = "x" * 1_000_000
    many = dbus.Array(["n%d" % i for i in range(100_000)], signature="s")
    wide = dbus.Dictionary({"k%d" % i: dbus.String("1", variant_level=1) for i in range(100_000)}, signature="sv")

    def raw(case, path, interface, member, signature="", args=(), destination=NAME):
        message = dbus.lowlevel.MethodCallMessage(destination, path, interface, member)
        if signature:
            message.append(*args, signature=signature)
        try:
            bus.send_message_with_reply_and_block(message, 20)
            print("%s\tok" % case)
        except dbus.DBusException as error:
            text = error.get_dbus_message() or ""
            if "\n" in text:
                text = "MULTI-LINE " + text.replace("\n", "\\n")
            if len(text) > 300:
                text = text[:300] + "... (%d characters)" % len(text)
            print("%s\t%s\t%s" % (case, error.get_dbus_name(), text))
        sys.stdout.flush()

    raw("on-wrong-signature-s", PATH, IFACE, "On", "s", ["heart"])
    raw("on-wrong-signature-ai", PATH, IFACE, "On", "ai", [[1, 2]])
    raw("on-no-arguments", PATH, IFACE, "On")
    raw("on-two-arguments", PATH, IFACE, "On", "ass", [["heart"], "x"])
    raw("on-unknown-name", PATH, IFACE, "On", "as", [["nosuch"]])
    raw("on-100000-names", PATH, IFACE, "On", "as", [many])
    raw("on-megabyte-name", PATH, IFACE, "On", "as", [[big]])
    raw("on-empty-name", PATH, IFACE, "On", "as", [[""]])
    raw("off-wrong-signature", PATH, IFACE, "Off", "u", [7])
    raw("off-unknown-name", PATH, IFACE, "Off", "as", [["nosuch"]])
    raw("status-with-arguments", PATH, IFACE, "Status", "s", ["heart"])
    raw("list-with-arguments", PATH, IFACE, "List", "as", [["x"]])
    raw("reload-with-arguments", PATH, IFACE, "Reload", "b", [True])
    raw("set-wrong-signature", PATH, IFACE, "Set", "ss", ["kitchen", "temperature=1"])
    raw("set-unknown-name", PATH, IFACE, "Set", "sa{sv}", ["nosuch", {"temperature": dbus.Double(1)}])
    raw("set-unknown-key", PATH, IFACE, "Set", "sa{sv}", ["kitchen", {"temprature": dbus.Double(1)}])
    raw("set-out-of-range", PATH, IFACE, "Set", "sa{sv}", ["kitchen", {"temperature": dbus.Double(400)}])
    raw("set-nan", PATH, IFACE, "Set", "sa{sv}", ["kitchen", {"temperature": dbus.Double(float("nan"))}])
    raw("set-huge", PATH, IFACE, "Set", "sa{sv}", ["kitchen", {"temperature": dbus.Double(1.1e30)}])
    raw("set-dictionary-value", PATH, IFACE, "Set", "sa{sv}",
        ["kitchen", {"temperature": dbus.Dictionary({"a": "b"}, signature="ss")}])
    raw("set-object-path-value", PATH, IFACE, "Set", "sa{sv}", ["kitchen", {"temperature": dbus.ObjectPath("/x")}])
    raw("set-100000-keys", PATH, IFACE, "Set", "sa{sv}", ["kitchen", wide])
    raw("set-megabyte-name", PATH, IFACE, "Set", "sa{sv}", ["kitchen", {"local_name": big}])
    raw("set-megabyte-key", PATH, IFACE, "Set", "sa{sv}", ["kitchen", {big: dbus.Double(1)}])
    raw("set-enabled", PATH, IFACE, "Set", "sa{sv}", ["kitchen", {"enabled": False}])
    raw("set-encryption-key", PATH, IFACE, "Set", "sa{sv}", ["kitchen", {"encryption_key": "00112233445566778899aabbccddeeff"}])
    raw("set-no-values", PATH, IFACE, "Set", "sa{sv}", ["kitchen", dbus.Dictionary({}, signature="sv")])
    raw("unknown-method", PATH, IFACE, "Explode")
    raw("unknown-interface", PATH, "org.bleadvd.Nope1", "On", "as", [["heart"]])
    raw("unknown-path", "/org/bleadvd/Nope", IFACE, "On", "as", [["heart"]])
    raw("properties-set-read-only", advertisement, PROPS, "Set", "ssv",
        ["org.bluez.LEAdvertisement1", "Type", dbus.String("broadcast", variant_level=1)], destination=owner)
    raw("properties-get-unknown", PATH, PROPS, "Get", "ss", [IFACE, "Nope"])
    raw("properties-getall-unknown-interface", PATH, PROPS, "GetAll", "s", ["org.bleadvd.Nope1"])
    raw("release-from-a-stranger", advertisement, "org.bluez.LEAdvertisement1", "Release", destination=owner)
    raw("advertisement-unknown-method", advertisement, "org.bluez.LEAdvertisement1", "Explode", destination=owner)
    # Round two: what an outside campaign found, each as a class.
    megabytes = dbus.ByteArray(b"\0" * 30_000_000)
    raw("status-30-megabyte-bytes", PATH, IFACE, "Status", "ay", [megabytes])
    raw("set-30-megabyte-bytes", PATH, IFACE, "Set", "sa{sv}", ["kitchen", {"local_name": dbus.ByteArray(b"\0" * 30_000_000, variant_level=1)}])
    raw("properties-set-30-megabyte-bytes", PATH, PROPS, "Set", "ssv", [IFACE, "Nope", dbus.ByteArray(b"\0" * 30_000_000, variant_level=1)])
    raw("on-260000-duplicates", PATH, IFACE, "On", "as", [dbus.Array(["heart"] * 260_000, signature="s")])
    raw("on-1000-duplicates", PATH, IFACE, "On", "as", [dbus.Array(["heart"] * 1000, signature="s")])
    raw("off-1000-duplicates-of-an-unknown-name", PATH, IFACE, "Off", "as", [dbus.Array(["door"] * 1000, signature="s")])
    raw("introspectable-on", PATH, "org.freedesktop.DBus.Introspectable", "On", "as", [["heart"]])
    raw("set-unknown-key-with-newline", PATH, IFACE, "Set", "sa{sv}", ["kitchen", {"a\n<0>bleadvd: FORGED": "1"}])
    raw("set-uint64-over-int64", PATH, IFACE, "Set", "sa{sv}", ["kitchen", {"temperature": dbus.UInt64(2**64 - 1, variant_level=1)}])
    raw("set-hex-float-text", PATH, IFACE, "Set", "sa{sv}", ["kitchen", {"temperature": "0x1p4"}])

    def busctl(case, *arguments):
        """A call dbus-python cannot make (its dictionaries cannot repeat a key), by busctl."""
        result = subprocess.run(["busctl", "--address=" + sys.argv[1], "call", NAME, PATH, IFACE] + list(arguments),
                                capture_output=True, text=True, timeout=20)
        print("%s\t%s" % (case, "ok" if result.returncode == 0 else "busctl\t" + result.stderr.strip()))
        sys.stdout.flush()

    busctl("set-one-key-twice", "Set", "sa{sv}", "kitchen", "2", "temperature", "d", "1", "temperature", "d", "2")


if __name__ == "__main__":
    main()
