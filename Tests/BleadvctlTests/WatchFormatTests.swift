import AdvertiserControl
@testable import BleadvctlCommands
import DBus
import Testing

/// `bleadvctl watch`'s lines, from the signals as the bus carries them: scripts read them, so
/// each is held byte for byte.
@Suite("bleadvctl watch's lines")
struct WatchFormatTests {
    /// A signal of the control interface, with `body` as the bus carries it.
    static func signal(_ member: String, _ body: [DBusValue]) -> DBusMessage {
        .signal(path: ControlAPI.path, interface: ControlAPI.interface, member: member, body: body)
    }

    static let central = DBusValue.string("AA:BB:CC:DD:EE:FF")

    /// Each signal `watch` prints, with its text line and its JSON line.
    static let samples: [(DBusMessage, text: String, json: String)] = [
        (signal("StateChanged", [.string("door"), .string("on")]), "state door on",
         "{\"event\": \"state\", \"name\": \"door\", \"state\": \"on\"}"),
        (signal("StateChanged", [.string("door\u{1b}[31m"), .string("failed")]), "state door\\u{1B}[31m failed",
         "{\"event\": \"state\", \"name\": \"door\\u001b[31m\", \"state\": \"failed\"}"),
        (signal("ValuesChanged", [.string("lamp"), .dictionary(key: .string, value: .string, [
            DBusDictEntry(.string("label"), .string("hall way")), DBusDictEntry(.string("mode"), .string("warm")),
        ])]), "values lamp label=\"hall way\" mode=warm",
         "{\"event\": \"values\", \"name\": \"lamp\", \"values\": {\"label\": \"hall way\", \"mode\": \"warm\"}}"),
        (signal("ValuesChanged", [.string("kitchen"), .dictionary(key: .string, value: .string, [])]), "values kitchen",
         "{\"event\": \"values\", \"name\": \"kitchen\", \"values\": {}}"),
        (signal("Written", [.string("lamp"), .string("brightness"), .variant(.double(50)), central]), "written lamp brightness 50 AA:BB:CC:DD:EE:FF",
         "{\"event\": \"written\", \"service\": \"lamp\", \"characteristic\": \"brightness\", \"value\": 50, \"central\": \"AA:BB:CC:DD:EE:FF\"}"),
        (signal("Written", [.string("lamp"), .string("level"), .variant(.double(21.5)), central]), "written lamp level 21.5 AA:BB:CC:DD:EE:FF",
         "{\"event\": \"written\", \"service\": \"lamp\", \"characteristic\": \"level\", \"value\": 21.5, \"central\": \"AA:BB:CC:DD:EE:FF\"}"),
        (signal("Written", [.string("lamp"), .string("label"), .variant(.string("so \"fa\"")), .string("")]), "written lamp label \"so \\\"fa\\\"\" -",
         "{\"event\": \"written\", \"service\": \"lamp\", \"characteristic\": \"label\", \"value\": \"so \\\"fa\\\"\", \"central\": \"\"}"),
        (signal("Written", [.string("lamp"), .string("raw"), .variant(.bytes([0x01, 0xAB])), central]), "written lamp raw 01ab AA:BB:CC:DD:EE:FF",
         "{\"event\": \"written\", \"service\": \"lamp\", \"characteristic\": \"raw\", \"value\": \"01ab\", \"central\": \"AA:BB:CC:DD:EE:FF\"}"),
        (signal("Written", [.string("lamp"), .string("pin"), .variant(.bytes([])), central]), "written lamp pin  AA:BB:CC:DD:EE:FF",
         "{\"event\": \"written\", \"service\": \"lamp\", \"characteristic\": \"pin\", \"value\": \"\", \"central\": \"AA:BB:CC:DD:EE:FF\"}"),
        (signal("Connected", [central, .string("hci0")]), "connected AA:BB:CC:DD:EE:FF hci0",
         "{\"event\": \"connected\", \"central\": \"AA:BB:CC:DD:EE:FF\", \"adapter\": \"hci0\"}"),
        (signal("Disconnected", [central, .string("hci0"), .string("")]), "disconnected AA:BB:CC:DD:EE:FF hci0",
         "{\"event\": \"disconnected\", \"central\": \"AA:BB:CC:DD:EE:FF\", \"adapter\": \"hci0\", \"reason\": \"\"}"),
        (signal("Disconnected", [central, .string("hci0"), .string("idle for 60 s")]), "disconnected AA:BB:CC:DD:EE:FF hci0 \"idle for 60 s\"",
         "{\"event\": \"disconnected\", \"central\": \"AA:BB:CC:DD:EE:FF\", \"adapter\": \"hci0\", \"reason\": \"idle for 60 s\"}"),
        (signal("Disconnected", [central, .string("hci0"), .string("max_centrals")]), "disconnected AA:BB:CC:DD:EE:FF hci0 max_centrals",
         "{\"event\": \"disconnected\", \"central\": \"AA:BB:CC:DD:EE:FF\", \"adapter\": \"hci0\", \"reason\": \"max_centrals\"}"),
        (signal("LinkChanged", [central, .string("hci0"), .uint16(185), .strings([])]), "link AA:BB:CC:DD:EE:FF hci0 mtu 185",
         "{\"event\": \"link\", \"central\": \"AA:BB:CC:DD:EE:FF\", \"adapter\": \"hci0\", \"mtu\": 185, \"cut\": []}"),
        (signal("LinkChanged", [central, .string("hci0"), .uint16(23), .strings(["lamp.label", "power.level"])]), "link AA:BB:CC:DD:EE:FF hci0 mtu 23 cut lamp.label,power.level",
         "{\"event\": \"link\", \"central\": \"AA:BB:CC:DD:EE:FF\", \"adapter\": \"hci0\", \"mtu\": 23, \"cut\": [\"lamp.label\", \"power.level\"]}"),
        (signal("Subscription", [.string("power"), .string("level"), .boolean(true), .string("")]), "subscribed power.level",
         "{\"event\": \"subscribed\", \"service\": \"power\", \"characteristic\": \"level\", \"central\": null}"),
        (signal("Subscription", [.string("power"), .string("level"), .boolean(false), .string("")]), "unsubscribed power.level",
         "{\"event\": \"unsubscribed\", \"service\": \"power\", \"characteristic\": \"level\", \"central\": null}"),
        (signal("Subscription", [.string("power"), .string("level"), .boolean(true), .string("AA:BB:CC:DD:EE:01")]),
         "subscribed power.level by AA:BB:CC:DD:EE:01",
         "{\"event\": \"subscribed\", \"service\": \"power\", \"characteristic\": \"level\", \"central\": \"AA:BB:CC:DD:EE:01\"}"),
    ]

    @Test("each signal is printed as one text line, or one JSON object with --json, as scripts read them")
    func lines() {
        for (message, text, json) in Self.samples {
            #expect(WatchFormat.line(message, json: false) == text)
            #expect(WatchFormat.line(message, json: true) == json)
        }
    }

    @Test("a pairing window's events, another interface's member and a body not of the signal's types print nothing")
    func notPrinted() {
        let ignored = [
            Self.signal("Pairing", [.string("requested"), Self.central, .string("004213")]),
            Self.signal("Released", [.string("door")]),
            Self.signal("StateChanged", [.string("door")]),
            Self.signal("Written", [.string("lamp"), .string("label"), .string("sofa"), Self.central]),
            Self.signal("LinkChanged", [Self.central, .string("hci0"), .uint32(185), .strings([])]),
        ]

        let printed = ignored.compactMap { WatchFormat.line($0, json: false) } + ignored.compactMap { WatchFormat.line($0, json: true) }

        #expect(printed == [])
    }
}
