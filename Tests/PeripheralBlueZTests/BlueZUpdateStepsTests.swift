import DBus
import Peripheral
import PeripheralBlueZ
import TestSupport
import Testing

/// An in-place update as BlueZ is told of it, one `PropertiesChanged` a step: BlueZ sends the
/// advertisement to the kernel after each, so each step must be one the kernel takes. A turn of
/// the rotation changes a slot into another advertisement altogether this way (#78 item 7).
@Suite("In-place updates, step by step")
struct BlueZUpdateStepsTests {
    typealias Manager = BlueZPeripheralManager
    static let long = Advertisement(kind: .broadcast, manufacturerData: [.init(companyID: 0xFFFF, data: Array(repeating: 1, count: 20))],
                                    serviceData: [.init(uuid: BluetoothUUID(0x9999), data: [1])])
    static let other = Advertisement(kind: .broadcast, manufacturerData: [.init(companyID: 0xFFFF, data: [2])],
                                     serviceData: [.init(uuid: BluetoothUUID(0x9999), data: Array(repeating: 2, count: 20))])
    static let sensor = Advertisement(kind: .broadcast, serviceUUIDs: [BluetoothUUID(0xFCD2)],
                                      serviceData: [.init(uuid: BluetoothUUID(0xFCD2), data: [0x40, 0x02, 0x66, 0x08])])

    /// The largest advertising data any step of the update from `old` to `new` holds.
    static func largestStep(from old: Advertisement, to new: Advertisement) -> Int {
        var properties = old.bluezProperties
        var largest = 0
        for step in Manager.updateSteps(from: old.bluezProperties, to: new.bluezProperties) {
            switch step {
            case .remove(let name): properties[name] = nil
            case .set(let name): properties[name] = new.bluezProperties[name]
            case .refresh: break
            }
            largest = max(largest, properties.reduce(0) { $0 + Manager.bytesOnAir($1.key, $1.value) })
        }
        return largest
    }

    @Test("what shrinks the data goes before what grows it: no step holds more than the larger of the two advertisements")
    func shrinkFirst() {
        let sizes = [Self.long, Self.other].map { $0.bluezProperties.reduce(0) { $0 + Manager.bytesOnAir($1.key, $1.value) } }

        let there = Self.largestStep(from: Self.long, to: Self.other)
        let back = Self.largestStep(from: Self.other, to: Self.long)

        #expect(there == sizes.max())
        #expect(back == sizes.max())
    }

    @Test("into another advertisement altogether: what goes is removed, what comes is set, what stays is not sent")
    func anotherAltogether() {
        let steps = Manager.updateSteps(from: Self.long.bluezProperties, to: Self.sensor.bluezProperties)

        #expect(Set(steps) == [.remove("ManufacturerData"), .set("ServiceUUIDs"), .set("ServiceData")])
        #expect(steps.first == .remove("ManufacturerData"))
    }

    @Test("SecondaryChannel is sent again right after Includes changes: BlueZ's parse_includes clears the secondary channel's flag")
    func secondaryChannelAfterIncludes() {
        var old = Self.long
        old.secondaryChannel = .twoM
        var new = old
        new.includes = [.txPower]

        let steps = Manager.updateSteps(from: old.bluezProperties, to: new.bluezProperties)

        #expect(steps == [.set("Includes"), .set("SecondaryChannel")])
    }

    @Test("a SecondaryChannel that changes, and sorts before an Includes that grows the data most, still goes right after it (an index past the end aborted bleadvd)")
    func changedSecondaryChannelBeforeGrowingIncludes() {
        var old = Self.long
        old.secondaryChannel = .oneM
        var new = old
        new.secondaryChannel = .coded
        new.includes = [.txPower]

        let steps = Manager.updateSteps(from: old.bluezProperties, to: new.bluezProperties)

        #expect(steps == [.set("Includes"), .set("SecondaryChannel")])
    }

    @Test("between any two of 72 advertisements (data, includes, secondary channel, intervals), the steps turn the one into the other exactly, and SecondaryChannel follows Includes")
    func everyPairTurnsExactly() {
        var all: [Advertisement] = []
        for base in [Self.long, Self.other, Self.sensor] {
            for includes: Set<Advertisement.Include> in [[], [.txPower], [.appearance, .localName]] {
                for channel in [nil] + Advertisement.SecondaryChannel.allCases {
                    for interval: UInt32? in [nil, 100] {
                        var advertisement = base
                        advertisement.includes = includes
                        advertisement.secondaryChannel = channel
                        advertisement.minInterval = interval
                        advertisement.maxInterval = interval.map { $0 + 50 }
                        all.append(advertisement)
                    }
                }
            }
        }
        var wrong: [String] = []

        for old in all {
            for new in all where old != new {
                var properties = old.bluezProperties
                let steps = Manager.updateSteps(from: old.bluezProperties, to: new.bluezProperties)
                for step in steps {
                    switch step {
                    case .remove(let name): properties[name] = nil
                    case .set(let name): properties[name] = new.bluezProperties[name]
                    case .refresh: break
                    }
                }
                let includes = steps.firstIndex(of: .set("Includes")) ?? steps.firstIndex(of: .remove("Includes"))
                if properties != new.bluezProperties
                    || (includes != nil && new.secondaryChannel != nil && steps[includes! + 1] != .set("SecondaryChannel")) {
                    wrong.append("\(steps)")
                }
            }
        }

        #expect(all.count == 72)
        #expect(wrong.isEmpty, "\(wrong.count) of \(72 * 71): \(wrong.prefix(3))")
    }

    @Test("an interval that goes last is followed by a refresh: BlueZ sends a cleared interval on only with the next change")
    func refreshAfterIntervalsGo() {
        var old = Self.long
        (old.minInterval, old.maxInterval) = (100, 200)

        let steps = Manager.updateSteps(from: old.bluezProperties, to: Self.long.bluezProperties)

        #expect(steps == [.remove("MaxInterval"), .remove("MinInterval"), .refresh])
    }

    @Test("against the stand-in, one advertisement becomes another in place: BlueZ ends with exactly the new one's properties, nothing unregistered or registered")
    func becomesAnotherInPlace() async throws {
        let session = try await StandInSession()
        let id = try await session.manager.register(.advertisement(Self.long), on: "hci0")
        let before = try await session.calls()

        try await session.manager.updateAdvertisement(id, to: Self.sensor)

        let calls = try await session.calls().dropFirst(before.count)
        #expect(try await session.advertisements()[id.rawValue] == Self.sensor.bluezProperties)
        #expect(!calls.isEmpty && calls.allSatisfy { $0.hasPrefix("refreshed \(id) ") }, "\(Array(calls))")
    }

    @Test("against the stand-in, a power asked that goes is invalidated, and BlueZ's report of the chosen power is still taken")
    func txPowerGoes() async throws {
        let session = try await StandInSession()
        var advertisement = Self.long
        advertisement.txPower = 0
        let id = try await session.manager.register(.advertisement(advertisement), on: "hci0")

        try await session.manager.updateAdvertisement(id, to: Self.long)
        try await session.control("SetTxPower", [.string(id.rawValue), .uint16(0), .int16(-6)])

        #expect(try await session.advertisements()[id.rawValue] == Self.long.bluezProperties)
    }
}
