extension Advertisement {
    /// The interval range BlueZ accepts, in milliseconds (0x20..0xFFFFFF × 0.625 ms).
    public static let intervalRange: ClosedRange<UInt32> = 20...10_485_759
    /// The most data one AD structure carries: its length byte counts the type byte too.
    static let maximumADData = 254
    /// The longest Bluetooth device name, in bytes (the Core Specification's limit; on air it is
    /// shortened to what fits).
    public static let maximumNameLength = 248
    /// The TX power range BlueZ accepts, in dBm.
    public static let txPowerRange: ClosedRange<Int16> = -127...20

    /// Every rule BlueZ enforces when parsing an advertisement, and each packet's budget,
    /// checked before anything is registered. Fields are named as in the config file.
    /// - Parameter capabilities: the adapter's, when known: checks the secondary channel, the
    ///   includes and the TX power against what it supports.
    /// - Returns: one message per problem, empty when the advertisement is valid.
    public func problems(for capabilities: AdapterCapabilities? = nil) -> [String] {
        var problems: [String] = []
        if localName != nil && includes.contains(.localName) {
            problems.append("local_name and includes \"local-name\" cannot both be set; BlueZ refuses the pair")
        }
        if let localName {
            if localName.isEmpty { problems.append("local_name is empty") }
            if localName.utf8.contains(0) { problems.append("local_name contains a NUL character") }
            if localName.utf8.count > Self.maximumNameLength {
                problems.append("local_name is \(localName.utf8.count) bytes; a Bluetooth device name is at most \(Self.maximumNameLength)")
            }
        }
        if appearance != nil && includes.contains(.appearance) {
            problems.append("appearance and includes \"appearance\" cannot both be set; BlueZ refuses the pair")
        }
        if kind == .broadcast && discoverable == true {
            problems.append("discoverable = true needs type = \"peripheral\"; a broadcast advertisement cannot be discoverable")
        }
        if let discoverableTimeout, let timeout, discoverableTimeout > timeout {
            problems.append("discoverable_timeout (\(discoverableTimeout) s) is longer than timeout (\(timeout) s)")
        }
        for (name, value) in [("min_interval_ms", minInterval), ("max_interval_ms", maxInterval)] {
            if let value, !Self.intervalRange.contains(value) {
                problems.append("\(name) is \(value); it must be between 20 and 10485759 ms")
            }
        }
        if let minInterval, let maxInterval, minInterval > maxInterval {
            problems.append("min_interval_ms (\(minInterval)) is greater than max_interval_ms (\(maxInterval))")
        }
        if let txPower, !Self.txPowerRange.contains(txPower) {
            problems.append("tx_power is \(txPower) dBm; it must be between -127 and 20")
        }
        for (prefix, entries) in [("", data), ("scan_response.", scanResponse.data)] {
            for entry in entries where ADType.managedByBlueZ.contains(entry.type) {
                problems.append("\(prefix)data \(AdvertisingPayload.hex8(entry.type)) is an AD type BlueZ builds itself; use the matching field instead")
            }
        }
        // Compared as values, so one UUID, company or AD type spelt two ways is caught too.
        problems += duplicates(in: ScanResponse(
            serviceUUIDs: serviceUUIDs, solicitUUIDs: solicitUUIDs, manufacturerData: manufacturerData, serviceData: serviceData, data: data), prefix: "")
        problems += duplicates(in: scanResponse, prefix: "scan_response.")
        if kind == .peripheral, secondaryChannel != nil, let first = AdvertisingPayload(for: self).scanResponse.first {
            // Extended advertising has no PDU that is both connectable and scannable.
            problems.append("\(first.field) would be lost: a connectable extended advertisement (secondary_channel) has no scan response; "
                + "make it type = \"broadcast\", or leave secondary_channel out")
        }
        if includes.contains(.localName), !scanResponse.data.isEmpty {
            // BlueZ shortens the adapter's name only to the room before the raw structures, and
            // that name is not known until the advertisement is registered.
            problems.append("includes \"local-name\" cannot be combined with scan_response.data: BlueZ shortens the adapter's name only "
                + "to the room before it, and the scan response could overflow; give local_name instead")
        }
        if let capabilities {
            problems += capabilityProblems(capabilities)
        }
        problems += budgetProblems(capabilities)
        return problems
    }

    /// Checks the advertisement.
    /// - Throws: ``PeripheralError`` (`invalidAdvertisement`) listing every problem, separated by "; ".
    public func validate(for capabilities: AdapterCapabilities? = nil) throws(PeripheralError) {
        let found = problems(for: capabilities)
        guard found.isEmpty else { throw PeripheralError(.invalid, found.joined(separator: "; ")) }
    }

    /// The fields BlueZ accepts on this adapter but does not act on, named as in the config file:
    /// the intervals and TX power, where bluetoothd is older than 5.77 and runs without -E.
    public func fieldsIgnored(on capabilities: AdapterCapabilities) -> [String] {
        guard !capabilities.actsOnParameters else { return [] }
        return [("min_interval_ms", minInterval != nil), ("max_interval_ms", maxInterval != nil), ("tx_power", txPower != nil)]
            .filter(\.1).map(\.0)
    }

    /// The entries given twice in one packet's lists and data (the advertising data's fields
    /// have the shape of a scan response's).
    private func duplicates(in fields: ScanResponse, prefix: String) -> [String] {
        duplicates(fields.serviceUUIDs.map(\.shortString), field: prefix + "service_uuids")
            + duplicates(fields.solicitUUIDs.map(\.shortString), field: prefix + "solicit_uuids")
            + duplicates(fields.manufacturerData.map(\.companyID).map(AdvertisingPayload.hex16), field: prefix + "manufacturer_data")
            + duplicates(fields.serviceData.map(\.uuid.shortString), field: prefix + "service_data")
            + duplicates(fields.data.map(\.type).map(AdvertisingPayload.hex8), field: prefix + "data")
    }

    private func duplicates(_ keys: [String], field: String) -> [String] {
        var seen = Set<String>()
        var repeated: [String] = []
        for key in keys where !seen.insert(key).inserted && !repeated.contains(key) {
            repeated.append(key)
        }
        return repeated.map { "\(field) \($0) is given twice" }
    }

    private func capabilityProblems(_ capabilities: AdapterCapabilities) -> [String] {
        var problems: [String] = []
        if let secondaryChannel, !capabilities.secondaryChannels.contains(secondaryChannel) {
            let supported = capabilities.secondaryChannels.map(\.rawValue).sorted().joined(separator: ", ")
            problems.append("secondary_channel \"\(secondaryChannel.rawValue)\" is not supported by \(capabilities.name) (supported: \(supported.isEmpty ? "none" : supported))")
        }
        for include in includes.sorted() where !capabilities.includes.contains(include) {
            problems.append("includes \"\(include.rawValue)\" is not supported by \(capabilities.name)")
        }
        if let txPower, let range = capabilities.txPowerRange, !range.contains(txPower) {
            problems.append("tx_power is \(txPower) dBm; \(capabilities.name) transmits between \(range.lowerBound) and \(range.upperBound) dBm")
        }
        return problems
    }

    /// The advertising data's limit: 31 bytes, or with `secondary_channel` (extended
    /// advertising) the adapter's `MaxAdvLen`, 251 when the adapter is not known.
    /// - Returns: the limit, and why it is 31 on this adapter when a secondary channel is asked.
    public func advertisingLimit(on capabilities: AdapterCapabilities?) -> (bytes: Int, why: String?) {
        guard secondaryChannel != nil else { return (AdvertisingPayload.limit, nil) }
        guard let capabilities else { return (AdvertisingPayload.extendedLimit, nil) }
        if capabilities.release < .longData {
            return (AdvertisingPayload.limit, "bluetoothd on \(capabilities.name) is \(capabilities.release), which sends 31 bytes at most (5.69 sends more)")
        }
        guard let most = capabilities.maxAdvertisingLength, most > AdvertisingPayload.limit else {
            return (AdvertisingPayload.limit, "\(capabilities.name) has no extended advertising (its MaxAdvLen is \(capabilities.maxAdvertisingLength.map(String.init) ?? "not given"))")
        }
        return (most, nil)
    }

    /// The budget checks of both packets, naming the largest field and the numbers: the
    /// advertising data against ``advertisingLimit(on:)``, the scan response against 31 bytes
    /// as BlueZ builds it (the name shortened to the room before the raw structures).
    private func budgetProblems(_ capabilities: AdapterCapabilities? = nil) -> [String] {
        let payload = AdvertisingPayload(for: sizedAsOnAir)
        var problems: [String] = []
        for entry in payload.advertisingData + payload.scanResponse where entry.data.count > Self.maximumADData {
            problems.append("\(entry.field) has \(entry.data.count) bytes of data; one AD structure holds at most \(Self.maximumADData)")
        }
        let (limit, why) = advertisingLimit(on: capabilities)
        let total = payload.advertisingSize
        if total > limit, let largest = payload.advertisingData.max(by: { $0.size < $1.size }) {
            problems.append(
                "\(largest.field) is \(largest.size) bytes; advertising data would be \(total) of "
                    + "\(limit) bytes (\(total - limit) over)" + (why.map { "; \($0)" } ?? ""))
        }
        let scan = payload.scanResponse
        let limit31 = AdvertisingPayload.limit
        if let name = scan.first(where: { $0.type == ADType.completeName || $0.type == ADType.shortenedName }) {
            // BlueZ shortens the name to the room its lists and data leave, not counting the raw
            // structures after it: a name that fits only shortened, beside raw data, overflows.
            let others = payload.scanResponseSize - name.size
            if others + 3 > limit31 {
                problems.append("\(name.field) has no room in the scan response: its fields take \(others) of \(limit31) bytes")
            } else if payload.scanResponseSize > limit31 {
                problems.append("\(name.field) is \(name.size) bytes; the scan response would be \(payload.scanResponseSize) of \(limit31) bytes "
                    + "(\(payload.scanResponseSize - limit31) over); a name of \(limit31 - others - 2) bytes fits (BlueZ shortens it only to "
                    + "the room before scan_response.data)")
            }
        } else if payload.scanResponseSize > limit31, let largest = scan.max(by: { $0.size < $1.size }) {
            problems.append(
                "\(largest.field) is \(largest.size) bytes; the scan response would be \(payload.scanResponseSize) of "
                    + "\(limit31) bytes (\(payload.scanResponseSize - limit31) over)")
        }
        if !scanResponse.isEmpty, let capabilities, capabilities.release < .scanResponseFields {
            problems.append("scan_response needs BlueZ 5.80 or later; bluetoothd on \(capabilities.name) is \(capabilities.release) and would leave it out")
        }
        return problems
    }
}
