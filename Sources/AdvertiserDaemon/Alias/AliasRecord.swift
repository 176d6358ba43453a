import Peripheral

/// The aliases to put back, kept in the state directory (`alias`: one adapter a line, its
/// address and the alias it had before bleadvd set one, in hex; empty for the system's name), so
/// that a bleadvd killed before it could put one back puts it back at its next stop.
struct AliasRecord: Sendable {
    /// The state directory; nil keeps nothing (tests, a daemon without one).
    let directory: String?

    /// The most adapters kept.
    static var most: Int { 16 }

    var file: String? { directory.map { $0 + "/alias" } }

    /// The alias to put back on each adapter, by address.
    /// - Throws: `PeripheralError` naming the file when it is not as bleadvd writes it.
    func originals() throws(PeripheralError) -> [String: String] {
        guard let file else { return [:] }
        let bytes: [UInt8]?
        do {
            bytes = try StateFile.read(file, limit: Self.most * (18 + 2 * 248 + 1))
        } catch {
            throw problem(error, file)
        }
        guard let bytes, !bytes.isEmpty else { return [:] }
        var originals: [String: String] = [:]
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard fields.count == 2, Bond.isAddress(String(fields[0])), let original = Hex.decode(String(fields[1])),
                  let text = String(validating: original, as: UTF8.self) else {
                throw problem(.corrupt("holds a line that is not an address and an alias in hex"), file)
            }
            originals[String(fields[0])] = text
        }
        return originals
    }

    /// Keeps `originals` (none: removes the file's lines).
    func store(_ originals: [String: String]) throws(PeripheralError) {
        guard let directory, let file else { return }
        let text = originals.sorted { $0.key < $1.key }.map { "\($0.key)\t\(Hex.encode(Array($0.value.utf8)))\n" }.joined()
        do {
            try StateFile.write(Array(text.utf8), to: file, in: directory)
        } catch {
            throw problem(error, file)
        }
    }

    private func problem(_ problem: StateFile.Problem, _ file: String) -> PeripheralError {
        PeripheralError(.failed, "\(problem.description(file: file)), where bleadvd keeps the aliases to put back; remove it and set the alias by hand (bluetoothctl system-alias)")
    }
}
