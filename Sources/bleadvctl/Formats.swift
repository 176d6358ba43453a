import AdvertiserConfig
import AdvertiserControl
import Peripheral

/// `bleadvctl status`, as a table for people and JSON for programs.
enum StatusFormat {
    static func table(_ states: [String: AdvertisementState], centrals: [CentralState] = []) -> String {
        var rows = [["NAME", "KIND", "STATE", "WANTED", "SINCE", "DETAIL"]]
        for (name, state) in states.sorted(by: { $0.key < $1.key }) {
            var detail = state.id ?? ""
            if state.state == .on || state.state == .rotating, let adapter = state.adapter {
                detail += " on " + adapter + (state.adapterAddress.map { " (\($0))" } ?? "")
            }
            if let share = state.airShare {
                let turn = "on air \(Int((share * 100).rounded()))% of the time" + (state.id == nil ? ", off air now" : ", on air now")
                detail = turn + (detail.isEmpty ? "" : ": " + detail)
            }
            if let retry = state.retryInSeconds { detail = "next try in \(duration(retry))" }
            if let error = state.error, state.state != .on, state.state != .rotating { detail += (detail.isEmpty ? "" : ": ") + error }
            let measurements = state.values.filter { $0.key.hasPrefix("bthome.") && $0.key != "bthome.local_name" }
            if !measurements.isEmpty {
                let shown = measurements.sorted { $0.key < $1.key }.map { "\($0.key.dropFirst("bthome.".count))=\($0.value)" }
                detail += (detail.isEmpty ? "" : " ") + shown.joined(separator: " ")
            }
            if !state.ignored.isEmpty {
                detail += (detail.isEmpty ? "" : " ") + "(bluetoothd ignores \(state.ignored.joined(separator: ", ")); see bleadvd.toml(5))"
            }
            if let mismatch = state.mismatch { detail += (detail.isEmpty ? "" : " ") + "(warning: \(mismatch))" }
            for cut in cuts(of: name, centrals) {
                detail += (detail.isEmpty ? "" : " ") + "(\(cut.characteristic)'s notifications reach \(cut.central) cut to \(cut.bytes) bytes)"
            }
            rows.append([
                Untrusted.escaped(name), state.kind.rawValue, state.state.rawValue, state.desired ? "on" : "off",
                duration(state.sinceSeconds), Untrusted.escaped(detail),
            ])
        }
        let widths = (0..<5).map { column in rows.map { $0[column].count }.max()! }
        return rows.map { row in
            (0..<5).map { row[$0].padding(to: widths[$0]) }.joined(separator: "  ") + "  " + row[5]
        }.map { $0.trimmingTrailingSpaces() + "\n" }.joined()
    }

    /// The notifications of service `name`'s characteristics that a connected central's MTU
    /// cuts (`Centrals`' `cut`), by characteristic and central, with the bytes that reach it.
    static func cuts(of name: String, _ centrals: [CentralState]) -> [(characteristic: String, central: String, bytes: Int)] {
        centrals.sorted { $0.address < $1.address }.flatMap { central in
            central.cut.compactMap { id -> (characteristic: String, central: String, bytes: Int)? in
                guard id.hasPrefix(name + "."), let mtu = central.mtu else { return nil }
                return (String(id.dropFirst(name.count + 1)), central.address, mtu - 3)
            }
        }
    }

    static func json(_ states: [String: AdvertisementState], centrals: [CentralState] = []) -> String {
        let entries = states.sorted { $0.key < $1.key }.map { name, state in
            var fields = [
                "\"kind\": \(quote(state.kind.rawValue))", "\"desired\": \(state.desired)", "\"state\": \(quote(state.state.rawValue))",
                "\"since_seconds\": \(number(state.sinceSeconds))",
            ]
            if let id = state.id { fields.append("\"id\": \(quote(id))") }
            if let adapter = state.adapter { fields.append("\"adapter\": \(quote(adapter))") }
            if let address = state.adapterAddress { fields.append("\"adapter_address\": \(quote(address))") }
            if let error = state.error { fields.append("\"error\": \(quote(error))") }
            if let code = state.errorCode { fields.append("\"error_code\": \(quote(code))") }
            if let retry = state.retryInSeconds { fields.append("\"retry_in_seconds\": \(number(retry))") }
            if !state.ignored.isEmpty { fields.append("\"ignored\": [" + state.ignored.map(quote).joined(separator: ", ") + "]") }
            if let mismatch = state.mismatch { fields.append("\"mismatch\": \(quote(mismatch))") }
            if let share = state.airShare { fields.append("\"air_share\": \(number(share))") }
            let values = state.values.sorted { $0.key < $1.key }.map { "\(quote($0.key)): \(quote($0.value))" }
            fields.append("\"values\": {" + values.joined(separator: ", ") + "}")
            let cut = cuts(of: name, centrals).map { "{\"characteristic\": \(quote($0.characteristic)), \"central\": \(quote($0.central)), \"bytes\": \($0.bytes)}" }
            if !cut.isEmpty { fields.append("\"cut\": [" + cut.joined(separator: ", ") + "]") }
            return "  \(quote(name)): {" + fields.joined(separator: ", ") + "}"
        }
        return entries.isEmpty ? "{}\n" : "{\n" + entries.joined(separator: ",\n") + "\n}\n"
    }

    /// A JSON string literal.
    static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            case _ where Untrusted.needsEscape(scalar):
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    static func number(_ value: Double) -> String {
        let milliseconds = (value * 1000).rounded() / 1000
        return milliseconds == milliseconds.rounded() ? String(Int(milliseconds)) : String(milliseconds)
    }

    static func duration(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded())
        if whole < 60 { return "\(whole)s" }
        if whole < 3600 { return "\(whole / 60)m\(whole % 60)s" }
        return "\(whole / 3600)h\((whole % 3600) / 60)m"
    }
}

/// `bleadvctl preview`: the AD structures and bytes of one advertisement.
enum PreviewFormat {
    static func text(name: String, _ entry: ConfiguredAdvertisement) -> String {
        let ad = entry.advertisement
        // Encrypted BTHome is sealed for the adapter's address with a fresh counter when it goes
        // on air; the preview shows its size and layout.
        let payload = AdvertisingPayload(for: ad.sizedAsOnAir)
        var out = "\(name) (\(ad.kind.rawValue)\(entry.enabled ? "" : ", not enabled at start"))\n"
        if ad.bthomeKey != nil {
            out += "  encrypted BTHome: on air the ciphertext, counter and tag differ (sealed here for address 00:00:00:00:00:00, counter 0)\n"
        }
        if let channel = ad.secondaryChannel {
            out += "  extended advertising on the \(channel.rawValue) PHY: ADV_EXT_IND on the primary channels, the data in AUX_ADV_IND (up to the adapter's MaxAdvLen; a scanner needs Bluetooth 5 to hear it)\n"
        }
        out += section("advertising data", payload.advertisingData, payload.advertisingSize, payload.advertisingBytes, of: ad.advertisingLimit(on: nil).bytes)
        // An adapter with BR/EDR off (an LE-only radio, or ControllerMode = le) gets "BR/EDR not
        // supported" flags from the kernel in front of data that has none of its own, when they
        // fit: btmon showed them in front of 28 bytes and not of 29 or 31 (kernels 6.1, 6.12, 7.2).
        if ad.secondaryChannel == nil, !payload.advertisingData.contains(where: { $0.type == ADType.flags }) {
            let leOnly = Self.leOnlyFlags + payload.advertisingBytes
            if leOnly.count <= AdvertisingPayload.limit {
                out += "  on an LE-only adapter: \(leOnly.count) of \(AdvertisingPayload.limit) bytes: \(Hex.encode(leOnly)) (the kernel adds flags 020104 in front)\n"
            } else {
                out += "  on an LE-only adapter: the same (no room for the flags 020104 the kernel adds to data of up to \(AdvertisingPayload.limit - Self.leOnlyFlags.count) bytes)\n"
            }
        }
        out += section("scan response", payload.scanResponse, payload.scanResponseSize, payload.scanResponseBytes)
        let problems = ad.problems()
        if !problems.isEmpty { out += "  problems: " + problems.joined(separator: "; ") + "\n" }
        return out
    }

    /// The flags the kernel puts in front for an adapter with BR/EDR off: "BR/EDR not supported".
    static let leOnlyFlags = ADStructure(type: ADType.flags, data: [0x04], field: "flags").bytes

    private static func section(
        _ title: String, _ structures: [ADStructure], _ size: Int, _ bytes: [UInt8], of limit: Int = AdvertisingPayload.limit
    ) -> String {
        var out = "  \(title): \(size) of \(limit) bytes: \(bytes.isEmpty ? "(none)" : Hex.encode(bytes))\n"
        for structure in structures {
            out += "    \(Hex.encode(structure.bytes))  type 0x\(Hex.encode([structure.type]))  \(structure.size) bytes  \(structure.field)\n"
        }
        return out
    }
}

extension String {
    func padding(to width: Int) -> String {
        self + String(repeating: " ", count: max(0, width - count))
    }

    func trimmingTrailingSpaces() -> String {
        var copy = self
        while copy.last == " " { copy.removeLast() }
        return copy
    }
}
