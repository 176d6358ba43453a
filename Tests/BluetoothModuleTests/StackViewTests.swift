@testable import BluetoothModule
import Peripheral
import PeripheralMocks
import Testing

/// The adapter registrations go to, as part of the stack's view: kept until the stack changes,
/// forgotten by every change the view is told of, in the view and nowhere else.
@Suite("The stack view's adapter in use")
struct StackViewTests {
    typealias View = StackView<ManualClock.Instant>
    static let start = ManualClock.Instant(offset: .zero)
    static let hci0 = AdapterCapabilities(name: "hci0")
    static let run = StackGeneration(1, name: ":1.1")

    /// A view that has chosen hci0.
    static func chosen() -> View {
        var view = View()
        view.appeared(run)
        view.use(hci0)
        return view
    }

    @Test("the adapter chosen stays in use while nothing changes below")
    func keptWhileNothingChanges() {
        var view = Self.chosen()

        let settled = view.settled(at: Self.start.advanced(by: .seconds(60)))

        #expect(settled.isEmpty)
        #expect(view.adapterInUse == Self.hci0)
    }

    @Test("each change of the stack forgets the adapter in use", arguments: [
        "BlueZ appeared", "BlueZ vanished", "an older run vanished", "an adapter powered on", "an adapter powered off", "an adapter added or removed",
    ])
    func eachChangeForgetsIt(change: String) {
        var view = Self.chosen()

        switch change {
        case "BlueZ appeared": view.appeared(StackGeneration(2, name: ":1.2"))
        case "BlueZ vanished": view.vanished(Self.run)
        case "an older run vanished": view.vanished(StackGeneration(0, name: ":1.0"))
        case "an adapter powered on": view.powered("hci1", true, settleUntil: Self.start)
        case "an adapter powered off": view.powered("hci0", false, settleUntil: Self.start.advanced(by: .seconds(1)))
        default: view.changed()
        }

        #expect(view.adapterInUse == nil)
    }

    @Test("an adapter whose settling is over forgets the adapter in use; one still settling keeps it")
    func settledForgetsIt() {
        var view = Self.chosen()
        view.changingPower("hci1", now: Self.start) { _ in .seconds(2) }
        view.use(Self.hci0)

        let early = view.settled(at: Self.start.advanced(by: .seconds(1)))
        let kept = view.adapterInUse
        let done = view.settled(at: Self.start.advanced(by: .seconds(2)))

        #expect(early.isEmpty)
        #expect(kept == Self.hci0)
        #expect(done == ["hci1"])
        #expect(view.adapterInUse == nil)
    }
}
