import Foundation
import Peripheral
import Testing

@testable import AdvertiserConfig

/// The keys the parser knows, the keys it reads, and the keys bleadvd.toml(5) documents are the
/// same keys.
@Suite("The config's keys")
struct ConfigKeyTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// A value for each field key that differs from the field's default.
    static let samples: [String: String] = [
        "enabled": "false", "type": "\"broadcast\"", "local_name": "\"x\"", "service_uuids": "[\"180D\"]",
        "solicit_uuids": "[\"180D\"]", "manufacturer_data": "{ \"0xFFFF\" = \"01\" }",
        "service_data": "{ \"180D\" = \"01\" }", "data": "{ \"0x26\" = \"01\" }", "appearance": "1",
        "includes": "[\"tx-power\"]", "discoverable": "false", "discoverable_timeout": "10", "duration": "2",
        "timeout": "10", "secondary_channel": "\"1M\"", "min_interval_ms": "100", "max_interval_ms": "200",
        "tx_power": "0", "services": "[\"s\"]",
        "scan_response": "{ manufacturer_data = { \"0xFFFF\" = \"01\" } }", "priority": "5",
    ]
    /// What a sample needs defined first.
    static let preludes: [String: String] = ["services": "[service.s.battery]\nlevel = 1\n"]

    /// A whole table for each preset.
    static let presets: [String: [String: String]] = [
        "ibeacon": ["uuid": "\"e2c56db5-dffb-48d2-b060-d0f5a71096e0\"", "major": "1", "minor": "2", "measured_power": "-59"],
        "altbeacon": ["manufacturer_id": "0x0118", "beacon_id": "\"" + String(repeating: "ab", count: 20) + "\"", "reference_rssi": "-59"],
        "eddystone_uid": ["namespace": "\"" + String(repeating: "01", count: 10) + "\"", "instance": "\"010203040506\"", "tx_power": "-20"],
        "eddystone_url": ["url": "\"https://example.com\"", "tx_power": "-20"],
        "eddystone_tlm": ["battery_mv": "3000", "temperature": "21.5", "update_seconds": "5"],
    ]
    /// The preset keys that may be left out: each is read when given (the result changes).
    static let optionalKeys: Set<String> = ["eddystone_tlm.battery_mv", "eddystone_tlm.temperature", "eddystone_tlm.update_seconds"]

    @Test("every BTHome measurement is read: setting it changes the sensor", arguments: BTHome.objects)
    func everyMeasurementIsRead(object: BTHome.Object) throws {
        let value = object.binary ? "true" : object.format(object.range.upperBound)

        let parsed = try ConfigParser.parse("[advertisement.a.bthome]\n\(object.name) = \(value)\n", file: "t.toml")

        let read = parsed.advertisements["a"]?.bthome?.values[object.name]?.first
        #expect(read.flatMap(object.encode) == object.encode(object.binary ? 1 : object.range.upperBound))
    }

    @Test("every advertisement key the parser knows is read: setting it changes the result")
    func everyKnownFieldIsRead() throws {
        let plain = try ConfigParser.parse("[advertisement.a]\n", file: "t.toml").advertisements["a"]

        for key in Reader.fieldKeys.sorted() {
            let sample = try #require(Self.samples[key], "no sample value for \(key): add one, with a test of what it does")
            let parsed = try ConfigParser.parse(
                Self.preludes[key, default: ""] + "[advertisement.a]\n\(key) = \(sample)\n", file: "t.toml").advertisements["a"]
            #expect(parsed != plain, "\(key) = \(sample) is accepted but changes nothing")
        }
    }

    @Test("every preset row has a sample table here, so each is checked below")
    func everyPresetHasASample() {
        #expect(Set(Self.presets.keys) == Set(Reader.presets.keys))
    }

    @Test("every key of every beacon preset is read: a table without it is refused as missing that key, or for a key that may be left out, reads otherwise", arguments: presets.keys.sorted())
    func everyPresetKeyIsRead(preset: String) throws {
        let full = try #require(Self.presets[preset])
        #expect(Set(full.keys) == Reader.presetKeys[preset])
        // What is on air and how it is kept there: the settings would differ whatever was read.
        func read(_ table: [String: String]) throws -> [String] {
            let entry = try ConfigParser.parse(Self.config(preset, table), file: "t.toml").advertisements["a"]
            return ["\(String(describing: entry?.advertisement))", "\(String(describing: entry?.telemetry))"]
        }
        let whole = try read(full)

        for key in full.keys.sorted() {
            var partial = full
            partial[key] = nil
            if Self.optionalKeys.contains("\(preset).\(key)") {
                #expect(try read(partial) != whole, "\(preset).\(key) is accepted but changes nothing")
                continue
            }
            #expect(throws: ConfigError.self) { try ConfigParser.parse(Self.config(preset, partial), file: "t.toml") }
            let message = (try? ConfigParser.parse(Self.config(preset, partial), file: "t.toml")).map { _ in "" }
                ?? Self.error(Self.config(preset, partial))
            #expect(message.hasSuffix("advertisement.a.\(preset).\(key): missing; the \(preset) preset needs it"))
        }
    }

    @Test("bleadvd.toml(5) documents exactly the keys the parser knows")
    func manPageDocumentsEveryKey() throws {
        let page = try String(contentsOf: Self.root.appendingPathComponent("systemd/man/bleadvd.toml.5"), encoding: .utf8)
        let documented = Self.documentedKeys(page)

        #expect(documented.top == Reader.topKeys.subtracting(["advertisement"]))
        #expect(documented.fields == Reader.fieldKeys)
        // BTHome's measurements have a section of their own (BTHOME MEASUREMENTS).
        let known = Reader.presetKeys.reduce(into: [String: Set<String>]()) { known, preset in
            known[preset.key] = preset.key == "bthome" ? preset.value.subtracting(BTHome.objects.map(\.name)) : preset.value
        }
        #expect(documented.presets == known)
    }

    /// Every key of the service tables: the presets, their keys, and those of a service of your own.
    static let serviceKeys = Set(ServicePreset.all.keys).union(ServicePreset.all.values.flatMap(\.keys))
        .union(Reader.serviceKeys).union(Reader.characteristicKeys)

    /// The words of `text`: runs of letters, digits and `_`.
    static func words(_ text: String) -> Set<String> {
        Set(text.split { !($0.isLetter || $0.isNumber || $0 == "_") }.map(String.init))
    }

    @Test("bleadvd.toml(5)'s SERVICES names every service preset, its keys, and every key of a service of your own")
    func manPageDocumentsEveryServiceKey() throws {
        let page = try String(contentsOf: Self.root.appendingPathComponent("systemd/man/bleadvd.toml.5"), encoding: .utf8)
        let section = page.components(separatedBy: ".SH SERVICES\n").dropFirst().first?.components(separatedBy: "\n.SH ").first ?? ""

        let missing = Self.serviceKeys.subtracting(Self.words(String(section)))

        #expect(missing.isEmpty, "not in SERVICES: \(missing.sorted())")
    }

    @Test("the example config names every service preset and key")
    func exampleMentionsEveryServiceKey() throws {
        let example = try String(contentsOf: Self.root.appendingPathComponent("systemd/bleadvd.toml"), encoding: .utf8)

        let missing = Self.serviceKeys.subtracting(Self.words(example))

        #expect(missing.isEmpty, "not in the example: \(missing.sorted())")
    }

    @Test("bleadvd.toml(5) lists every BTHome measurement with its object id, range and unit")
    func manPageListsEveryMeasurement() throws {
        let page = try String(contentsOf: Self.root.appendingPathComponent("systemd/man/bleadvd.toml.5"), encoding: .utf8)
        let section = page.components(separatedBy: ".SH BTHOME MEASUREMENTS\n").dropFirst().first ?? ""
        let block = section.components(separatedBy: ".nf\n").dropFirst().first?.components(separatedBy: "\n.fi").first ?? ""

        let expected = BTHome.objects.map { object in
            let range = object.binary ? "true or false" : "\(object.format(object.range.lowerBound)) to \(object.format(object.range.upperBound))"
            let name = object.name.padding(toLength: 20, withPad: " ", startingAt: 0)
            let shown = range.padding(toLength: 34, withPad: " ", startingAt: 0)
            return "\(name)0x\(String(format: "%02X", object.id))  \(shown)\(object.unit)".replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
        }

        #expect(block.split(separator: "\n").dropFirst().map(String.init) == expected, "expected:\n\(expected.joined(separator: "\n"))")
    }

    @Test("the example config names every advertisement key, set or in a comment")
    func exampleMentionsEveryKey() throws {
        let words = Self.words(try String(contentsOf: Self.root.appendingPathComponent("systemd/bleadvd.toml"), encoding: .utf8))

        // BTHome's measurements are too many for an example; the man page lists them all.
        let missing = Reader.fieldKeys.union(Reader.topKeys).union(Reader.presetKeys.keys)
            .union(Reader.presetKeys.values.joined()).subtracting(BTHome.objects.map(\.name)).subtracting(words)

        #expect(missing.isEmpty, "not in the example: \(missing.sorted())")
    }

    static func config(_ preset: String, _ table: [String: String]) -> String {
        "[advertisement.a.\(preset)]\n" + table.sorted { $0.key < $1.key }.map { "\($0.key) = \($0.value)\n" }.joined()
    }

    static func error(_ text: String) -> String {
        do {
            _ = try ConfigParser.parse(text, file: "t.toml")
            return ""
        } catch {
            return error.description
        }
    }

    /// The keys a man page lists: the `.B key` / `.BR key ", " key` line after each `.TP`, and for
    /// each preset the comma-separated names on the line after its `.BI [advertisement. NAME .preset]`.
    static func documentedKeys(_ page: String) -> (top: Set<String>, fields: Set<String>, presets: [String: Set<String>]) {
        var top = Set<String>(), fields = Set<String>(), presets: [String: Set<String>] = [:]
        var section = ""
        var preset: String?
        var tagged = false
        for line in page.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            defer { tagged = line == ".TP" }
            if line.hasPrefix(".SH ") { section = String(line.dropFirst(4)) }
            if let name = preset {
                presets[name] = Set(line.split(separator: ",").compactMap {
                    $0.split(separator: " ").first.map { String($0.filter { $0.isLetter || $0 == "_" }) }
                })
                preset = nil
            }
            if section == "PRESETS", line.hasPrefix(".BI [advertisement. NAME ."), line.hasSuffix("]") {
                preset = String(line.dropFirst(".BI [advertisement. NAME .".count).dropLast())
            }
            guard tagged, line.hasPrefix(".B ") || line.hasPrefix(".BR ") else { continue }
            let names = line.split(separator: " ").dropFirst().map(String.init)
                .filter { $0.allSatisfy { $0.isLowercase || $0 == "_" } && !$0.isEmpty }
            if section == "TOP-LEVEL KEYS" { top.formUnion(names.prefix(1)) }
            if section == "ADVERTISEMENTS" { fields.formUnion(names) }
        }
        return (top, fields, presets)
    }
}
