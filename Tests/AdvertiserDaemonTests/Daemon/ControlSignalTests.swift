import AdvertiserControl
import DBus
import Peripheral
import Testing

/// The control API's signals as their one declaration (`ControlSignal`) encodes and decodes
/// them: what the daemon sends, and what `watch`, `pair` and the tests read back.
@Suite("The control API's signals, encoded and decoded")
struct ControlSignalTests {
    static let phone = "AA:BB:CC:DD:EE:01"
    static let level = GATTCharacteristicID(service: "power", characteristic: "level")

    /// A payload of each signal, every field set.
    static let samples: [any ControlSignal] = [
        ControlAPI.StateChanged(name: "door", state: "on"),
        ControlAPI.ValuesChanged(name: "lamp", values: ["mode": "warm", "label": "hall"]),
        ControlAPI.Written(level, value: .number(21.5), central: phone),
        ControlAPI.Written(level, value: .text("sofa"), central: ""),
        ControlAPI.Written(level, value: .bytes([0x01, 0xAB]), central: phone),
        ControlAPI.Written(level, value: nil, central: phone),
        ControlAPI.Pairing(event: "requested", central: phone, detail: "004213"),
        ControlAPI.Connected(central: phone, adapter: "hci0"),
        ControlAPI.Disconnected(central: phone, adapter: "hci0", reason: "idle"),
        ControlAPI.LinkChanged(central: phone, adapter: "hci0", mtu: 185, cut: ["lamp.label", "power.level"]),
        ControlAPI.Subscription(level, subscribed: true),
    ]

    @Test("every signal's payload goes out with the types its declaration gives, and comes back the same")
    func roundTrip() {
        let failing = Self.samples.filter { !$0.roundTrips }

        #expect(failing.isEmpty, "\(failing)")
    }

    @Test("every signal of the interface has a sample here, and a name of its own")
    func everySignalSampled() {
        let sampled = Set(Self.samples.map(\.member))

        let declared = ControlAPI.signals.map { $0.name }
        #expect(Set(declared) == sampled)
        #expect(Set(declared).count == declared.count)
    }

    @Test("a write not shown goes out as no bytes, as before, and is read back as not shown")
    func hiddenWrite() {
        let written = ControlAPI.Written(Self.level, value: nil, central: Self.phone)

        #expect(written.body == [.string("power"), .string("level"), .variant(.bytes([])), .string(Self.phone)])
        #expect(ControlAPI.Written(body: written.body)?.value == nil)
    }

    @Test("values go out sorted by key, whatever the dictionary's order")
    func valuesSorted() {
        let changed = ControlAPI.ValuesChanged(name: "lamp", values: ["mode": "warm", "label": "hall", "brightness": "50"])

        #expect(changed.body[1].dictionaryEntries?.compactMap(\.key.string) == ["brightness", "label", "mode"])
    }

    @Test("a body of another signal's shape, of fewer arguments, or with a key given twice decodes to nothing")
    func malformedRefused() {
        let subscription = ControlAPI.Subscription(body: ControlAPI.Disconnected(central: Self.phone, adapter: "hci0", reason: "").body)
        let short = ControlAPI.Connected(body: [.string(Self.phone)])
        let twice = ControlAPI.ValuesChanged(body: [.string("lamp"), .dictionary(key: .string, value: .string, [
            DBusDictEntry(.string("mode"), .string("warm")), DBusDictEntry(.string("mode"), .string("cold")),
        ])])
        let notAVariant = ControlAPI.Written(body: [.string("power"), .string("level"), .string("sofa"), .string(Self.phone)])

        #expect(subscription == nil)
        #expect(short == nil)
        #expect(twice == nil)
        #expect(notAVariant == nil)
    }
}

extension ControlSignal {
    /// Its signal's member name.
    fileprivate var member: String { Self.name }

    /// Whether the payload comes back equal from its own body, sent with the types its signal
    /// declares.
    fileprivate var roundTrips: Bool {
        body.map(\.type) == Self.arguments.map(\.type) && Self(body: body) == self
    }
}
