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

    /// Every rule BlueZ 5.66 enforces when parsing an advertisement, and the 31-byte budget,
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
        for entry in data where ADType.managedByBlueZ.contains(entry.type) {
            problems.append("data \(AdvertisingPayload.hex8(entry.type)) is an AD type BlueZ builds itself; use the matching field instead")
        }
        // Compared as values, so one UUID, company or AD type spelt two ways is caught too.
        problems += duplicates(serviceUUIDs.map(\.shortString), field: "service_uuids")
        problems += duplicates(solicitUUIDs.map(\.shortString), field: "solicit_uuids")
        problems += duplicates(manufacturerData.map(\.companyID).map(AdvertisingPayload.hex16), field: "manufacturer_data")
        problems += duplicates(serviceData.map(\.uuid.shortString), field: "service_data")
        problems += duplicates(data.map(\.type).map(AdvertisingPayload.hex8), field: "data")
        if let capabilities {
            problems += capabilityProblems(capabilities)
        }
        problems += budgetProblems()
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

    /// The 31-byte checks, naming the largest field and the numbers.
    private func budgetProblems() -> [String] {
        let payload = AdvertisingPayload(for: sizedAsOnAir)
        var problems: [String] = []
        for entry in payload.advertisingData where entry.data.count > Self.maximumADData {
            problems.append("\(entry.field) has \(entry.data.count) bytes of data; one AD structure holds at most \(Self.maximumADData)")
        }
        let total = payload.advertisingSize
        if total > AdvertisingPayload.limit, let largest = payload.advertisingData.max(by: { $0.size < $1.size }) {
            problems.append(
                "\(largest.field) is \(largest.size) bytes; advertising data would be \(total) of "
                    + "\(AdvertisingPayload.limit) bytes (\(total - AdvertisingPayload.limit) over)")
        }
        return problems
    }
}
