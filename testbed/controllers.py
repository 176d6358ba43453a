#!/usr/bin/env python3
"""The test bed's second controller implementation: Google Bumble's controllers
(bumble.controller.Controller, on one simulated link), attached to the guest's kernel through
/dev/vhci as btvirt's are, with the faults real radios show injected at their HCI boundary on
command. TESTBED_CONTROLLERS=bumble runs it instead of btvirt (testbed/run.sh --bumble).

    controllers.py serve COUNT [--control SOCKET] [--sets N]
        makes COUNT controllers (hci0, hci1, ... in the order the kernel numbers them), each
        with a public address of its own (F0:00:00:00:00:0N: Bumble's default is 00:00:00:00:00:00
        for all), and serves faults on SOCKET (default /run/testbed-controllers.sock). --sets:
        how many advertising sets each reports from the start (Bumble's own: 240).
    controllers.py fault hciN FAULT [on|off|VALUE]
        sets a fault on one controller (prints what the controller now does; exit 1 on an
        unknown controller or fault, 2 without the server):
          refuse-enable      LE Set (Extended) Advertising Enable, to enable, answered Command
                             Disallowed (0x0C) while a link is up, as several Broadcom/Cypress
                             chips do
          sets N             LE Read Number of Supported Advertising Sets answers N (read by the
                             kernel when it sets the controller up: power it off and on); 0 takes
                             Bumble's own again
          memory-full        LE Set (Extended) Advertising Data and Scan Response Data answered
                             Memory Capacity Exceeded (0x07)
          drop PATTERN       the next command whose Bumble name holds PATTERN (lower case, e.g.
                             advertising_enable) is left unanswered: the kernel's command
                             timeout follows; "off" forgets it
          drop-enable        the next LE Set (Extended) Advertising Enable that enables is left
                             unanswered (a disable is answered: one left unanswered leaves its
                             set on air, unknown to the kernel and BlueZ, docs/RELIABILITY.md)
          terminate          now: each enabled advertising set stopped, with LE Advertising Set
                             Terminated (Advertising Timeout, 0x3C) and no link
          fail-connection    each link a central makes to it fails at once: Disconnection
                             Complete, Connection Failed to be Established (0x3E), on both sides
          clear              every fault off
    controllers.py state     each controller, one line each: its faults, what it has on air (the
                             handles of its enabled advertising sets, "legacy" for its legacy
                             advertiser, or "nothing") and how many links it has

One correction is made to Bumble's own: an LE link's data goes out from the address the link
was made with (AddressedLink, below; without it no ATT request over a link made with public
addresses was answered). What else Bumble's controller does its own way is written down in
testbed/lib.sh (scan_responses_heard) and docs/TESTING.md.

Every fault the controllers act on is logged on standard error, one line, with the controller's
hciN: the scenarios' record of what the controller did, beside btmon's.
"""

import argparse
import asyncio
import logging
import os
import sys
import time

from bumble import hci
from bumble.controller import Controller
from bumble.core import PhysicalTransport
from bumble.link import LocalLink
from bumble.transport import open_transport

log = logging.getLogger("controllers")
DEFAULT_SOCKET = "/run/testbed-controllers.sock"

ENABLE_COMMANDS = {"HCI_LE_SET_ADVERTISING_ENABLE_COMMAND", "HCI_LE_SET_EXTENDED_ADVERTISING_ENABLE_COMMAND"}
DATA_COMMANDS = {"HCI_LE_SET_ADVERTISING_DATA_COMMAND", "HCI_LE_SET_SCAN_RESPONSE_DATA_COMMAND",
                 "HCI_LE_SET_EXTENDED_ADVERTISING_DATA_COMMAND", "HCI_LE_SET_EXTENDED_SCAN_RESPONSE_DATA_COMMAND"}


class Faults:
    """What one controller does wrong, as set through the control socket."""

    def __init__(self, sets=0):
        self.refuse_enable = False
        self.sets = sets
        self.memory_full = False
        self.drop = None
        self.drop_enable = False
        self.fail_connection = False

    def describe(self):
        words = [name for name, on in (("refuse-enable", self.refuse_enable), ("memory-full", self.memory_full),
                                       ("drop-enable", self.drop_enable), ("fail-connection", self.fail_connection)) if on]
        if self.sets:
            words.append(f"sets {self.sets}")
        if self.drop:
            words.append(f"drop {self.drop}")
        return " ".join(words) or "none"


class FaultyController(Controller):
    """Bumble's controller, with Faults applied where its host's commands and the link reach it."""

    def __init__(self, hci_name, faults, **kwargs):
        super().__init__(hci_name, **kwargs)
        self.faults = faults
        self.initial_sets = faults.sets  # serve --sets: what clear goes back to

    def on_hci_command_packet(self, command):
        name = command.name
        faults = self.faults
        if faults.drop and faults.drop in name.lower():
            log.warning("%s: left %s unanswered (fault drop %s)", self.name, name, faults.drop)
            faults.drop = None
            return
        if faults.drop_enable and name in ENABLE_COMMANDS and self._enables(command):
            log.warning("%s: left %s, to enable, unanswered (fault drop-enable)", self.name, name)
            faults.drop_enable = False
            return
        if faults.refuse_enable and name in ENABLE_COMMANDS and self._enables(command) and self.le_connections:
            log.warning("%s: refused %s: Command Disallowed, %d link(s) up (fault refuse-enable)",
                        self.name, name, len(self.le_connections))
            return self._complete(command, hci.HCI_ErrorCode.COMMAND_DISALLOWED_ERROR)
        if faults.memory_full and name in DATA_COMMANDS:
            log.warning("%s: refused %s: Memory Capacity Exceeded (fault memory-full)", self.name, name)
            return self._complete(command, hci.HCI_ErrorCode.MEMORY_CAPACITY_EXCEEDED_ERROR)
        super().on_hci_command_packet(command)
        self.note_air()

    def note_air(self):
        """Logs what the controller sends whenever that changes: "hciN: on air 1,2 at EPOCH" (testbed/airtime.py
        reads these lines)."""
        now = self.on_air()
        if now != getattr(self, "_last_air", "nothing"):
            self._last_air = now
            log.info("%s: on air %s at %.3f", self.name, now, time.time())

    @staticmethod
    def _enables(command):
        return bool(getattr(command, "advertising_enable", 0) or getattr(command, "enable", 0))

    def _complete(self, command, status):
        self.send_hci_packet(hci.HCI_Command_Complete_Event(
            num_hci_command_packets=1, command_opcode=command.op_code,
            return_parameters=hci.HCI_StatusReturnParameters(status)))

    def on_hci_le_read_number_of_supported_advertising_sets_command(self, command):
        if not self.faults.sets:
            return super().on_hci_le_read_number_of_supported_advertising_sets_command(command)
        log.warning("%s: reported %d advertising set(s) (fault sets)", self.name, self.faults.sets)
        return hci.HCI_LE_Read_Number_Of_Supported_Advertising_Sets_ReturnParameters(
            status=hci.HCI_ErrorCode.SUCCESS, num_supported_advertising_sets=self.faults.sets)

    def on_air(self):
        """What the controller sends now: the handles of its enabled advertising sets, and
        "legacy" when its legacy advertiser is on; "nothing" when neither."""
        words = [str(h) for h, s in sorted(self.advertising_sets.items()) if s.enabled]
        if self.le_legacy_advertiser.enabled:
            words.append("legacy")
        return ",".join(words) or "nothing"

    def terminate_sets(self):
        """Each enabled advertising set ended by the controller itself, without a link."""
        ended = [s for s in self.advertising_sets.values() if s.enabled]
        for advertising_set in ended:
            advertising_set.stop()
            self.send_hci_packet(hci.HCI_LE_Advertising_Set_Terminated_Event(
                status=hci.HCI_ErrorCode.ADVERTISING_TIMEOUT_ERROR, advertising_handle=advertising_set.handle,
                connection_handle=0, num_completed_extended_advertising_events=0))
        self.note_air()
        log.warning("%s: ended advertising set(s) %s by itself: Advertising Set Terminated, Advertising Timeout "
                    "(fault terminate)", self.name, ",".join(str(s.handle) for s in ended) or "(none enabled)")
        return len(ended)

    def on_le_connect_ind(self, packet):
        super().on_le_connect_ind(packet)
        self.note_air()
        connection = self.le_connections.get(packet.initiator_address)
        if not self.faults.fail_connection or connection is None:
            return
        # The link ends at once on both sides, as one whose first packets never came does.
        reason = hci.HCI_ErrorCode.CONNECTION_FAILED_TO_BE_ESTABLISHED_ERROR
        log.warning("%s: the link from %s failed: Connection Failed to be Established (fault fail-connection)",
                    self.name, packet.initiator_address)
        central = self.link.find_le_controller(packet.initiator_address)
        self.on_le_disconnected(connection, reason)
        if central is not None and (theirs := central.le_connections.get(packet.advertiser_address)):
            central.on_le_disconnected(theirs, reason)


class AddressedLink(LocalLink):
    """Bumble's link, with one correction: an LE link's data goes out from the address the link
    was made with. Bumble's LocalLink.send_acl_data (0.0.236) sends it from the sender
    controller's random address whatever that link's address, and the other controller, which
    knows the link by its peer's address, drops it ("!!! no connection for ..."): over a link
    made with public addresses (bleadvd's connectable advertisement, a central's) no ATT request
    was ever answered (scenario 71 on this stack before the correction: every read "GATT timeout
    for ATT_READ_BY_GROUP_TYPE_REQUEST"). Its own LL control PDUs already go out from the link's
    address."""

    def send_acl_data(self, sender_controller, destination_address, transport, data):
        connection = sender_controller.le_connections.get(destination_address)
        if transport != PhysicalTransport.LE or connection is None:
            return super().send_acl_data(sender_controller, destination_address, transport, data)
        destination = self.find_le_controller(destination_address)
        if destination is not None:
            asyncio.get_running_loop().call_soon(
                destination.on_link_acl_data, connection.self_address, transport, data)


async def serve(count, control, sets):
    link = AddressedLink()
    controllers = {}
    for index in range(count):
        before = set(os.listdir("/sys/class/bluetooth")) if os.path.isdir("/sys/class/bluetooth") else set()
        transport = await open_transport("vhci")
        hci_name = await new_controller(before)
        controllers[hci_name] = FaultyController(
            hci_name, Faults(sets), host_source=transport.source, host_sink=transport.sink, link=link,
            public_address=hci.Address(f"F0:00:00:00:00:{index:02X}", hci.Address.PUBLIC_DEVICE_ADDRESS))
        log.info("%s: Bumble's controller, public address F0:00:00:00:00:%02X", hci_name, index)

    async def answer(reader, writer):
        try:
            line = (await reader.readline()).decode(errors="replace").split()
            writer.write((command(controllers, line) + "\n").encode())
            await writer.drain()
        finally:
            writer.close()

    if os.path.exists(control):
        os.unlink(control)
    server = await asyncio.start_unix_server(answer, path=control)
    log.info("serving faults on %s", control)
    async with server:
        await asyncio.get_running_loop().create_future()


async def new_controller(before):
    """The hciN the kernel made for the vhci just opened (10 s at most)."""
    for _ in range(100):
        if os.path.isdir("/sys/class/bluetooth"):
            made = sorted(set(os.listdir("/sys/class/bluetooth")) - before)
            if made:
                return made[0]
        await asyncio.sleep(0.1)
    raise SystemExit("controllers: the kernel made no controller for /dev/vhci in 10 s")


def command(controllers, words):
    """One control line, "hciN FAULT [VALUE]" or "state": what the controller does now, or "error: ..."."""
    if words == ["state"]:
        return "\n".join(f"{name}: faults {c.faults.describe()}; on air {c.on_air()}; links {len(c.le_connections)}"
                         for name, c in sorted(controllers.items()))
    if len(words) not in (2, 3) or words[0] not in controllers:
        return f"error: no controller {words[0] if words else ''!r}; there are {' '.join(sorted(controllers))}"
    controller, fault, value = controllers[words[0]], words[1], words[2] if len(words) == 3 else "on"
    faults = controller.faults
    if fault in ("refuse-enable", "memory-full", "drop-enable", "fail-connection"):
        if value not in ("on", "off"):
            return f"error: {fault} takes on or off"
        setattr(faults, fault.replace("-", "_"), value == "on")
    elif fault == "sets":
        if not value.isdigit() or not 0 <= int(value) <= 240:
            return "error: sets takes 0 to 240"
        faults.sets = int(value)
    elif fault == "drop":
        if len(words) != 3:
            return "error: drop takes a part of a command's name (e.g. advertising_enable), or off"
        faults.drop = None if value == "off" else value.lower()
    elif fault == "terminate":
        return f"{words[0]}: ended {controller.terminate_sets()} advertising set(s)"
    elif fault == "clear":
        controller.faults = Faults(controller.initial_sets)
    else:
        return f"error: no fault {fault!r}"
    log.warning("%s: fault set: %s", words[0], controller.faults.describe())
    return f"{words[0]}: {controller.faults.describe()}"


async def ask(control, words):
    reader, writer = await asyncio.open_unix_connection(control)
    writer.write((" ".join(words) + "\n").encode())
    await writer.drain()
    answer = (await reader.read()).decode().rstrip("\n")
    writer.close()
    return answer


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--control", default=DEFAULT_SOCKET)
    sub = parser.add_subparsers(dest="verb", required=True)
    serving = sub.add_parser("serve")
    serving.add_argument("count", type=int)
    serving.add_argument("--sets", type=int, default=0)
    faulting = sub.add_parser("fault")
    faulting.add_argument("words", nargs="+")
    sub.add_parser("state")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)
    # Bumble's own log at warning: its debug lines are every packet.
    logging.getLogger("bumble").setLevel(logging.WARNING)
    if args.verb == "serve":
        asyncio.run(serve(args.count, args.control, args.sets))
        return 0
    try:
        answer = asyncio.run(ask(args.control, args.words if args.verb == "fault" else ["state"]))
    except OSError as error:
        print(f"controllers: no fault server on {args.control}: {error.strerror}", file=sys.stderr)
        return 2
    print(answer)
    return 1 if answer.startswith("error:") else 0


if __name__ == "__main__":
    sys.exit(main())
