package import Peripheral

/// The centrals that bonded in one of bleadvd's pairing windows, kept in the state directory
/// (`bonds`: one address a line, the oldest first). `forget` removes these alone unless root
/// asks for any bond: a keyboard that a desktop's own pairing bonded is not bleadvd's to remove.
package struct BondRecord: Sendable {
    /// The most addresses kept; the oldest is dropped for a new one (a window makes one bond,
    /// and only root opens one).
    package static var most: Int { 1000 }

    /// The state directory.
    package let directory: String

    /// A record in `directory` (created, mode 0700, at the first bond).
    package init(directory: String) {
        self.directory = directory
    }

    /// The file.
    package var file: String { directory + "/bonds" }

    /// The centrals recorded, oldest first.
    /// - Throws: `PeripheralError` `failed` naming the file when it is not as bleadvd writes it
    ///   (a link, a FIFO, too long, a line that is not an address), or cannot be read.
    package func centrals() throws(PeripheralError) -> [String] {
        let bytes: [UInt8]?
        do {
            bytes = try StateFile.read(file, limit: Self.most * Self.line)
        } catch {
            throw problem(error)
        }
        guard let bytes, !bytes.isEmpty else { return [] }
        guard bytes.last == UInt8(ascii: "\n") else { throw problem(.corrupt("does not end with a newline")) }
        var centrals: [String] = []
        for (number, line) in bytes.dropLast().split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            let text = String(decoding: line, as: UTF8.self)
            guard line.count == Self.line - 1, Bond.isAddress(text), text == text.uppercased() else {
                throw problem(.corrupt("holds at line \(number + 1) what is not an address as bleadvd writes it (AA:BB:CC:DD:EE:FF)"))
            }
            centrals.append(text)
        }
        return centrals
    }

    /// Whether `central` may use secured characteristics: the record lists it (a bond made in
    /// one of bleadvd's windows, or adopted by root, that BlueZ has not ended since). A record
    /// that cannot be read admits no one.
    package func admits(_ central: String) -> Bool {
        (try? centrals().contains(central)) ?? false
    }

    /// Adds `central` (the newest); the oldest goes when there are ``most``.
    package func add(_ central: String) throws(PeripheralError) {
        var centrals = try centrals().filter { $0 != central }
        centrals.append(central)
        try store(Array(centrals.suffix(Self.most)))
    }

    /// Removes `central`, when it is there.
    package func remove(_ central: String) throws(PeripheralError) {
        let centrals = try centrals()
        guard centrals.contains(central) else { return }
        try store(centrals.filter { $0 != central })
    }

    /// `AA:BB:CC:DD:EE:FF\n`.
    private static let line = 18

    private func store(_ centrals: [String]) throws(PeripheralError) {
        do {
            try StateFile.write(Array(centrals.map { $0 + "\n" }.joined().utf8), to: file, in: directory)
        } catch {
            throw problem(error)
        }
    }

    private func problem(_ problem: StateFile.Problem) -> PeripheralError {
        switch problem {
        case .corrupt:
            PeripheralError(.failed, "\(problem.description(file: file)), so which bonds bleadvd made is unknown; remove it (bleadvd writes it anew at the next bond)")
        case .failed:
            PeripheralError(.failed, "\(problem.description(file: file)), where bleadvd records the bonds its windows made")
        }
    }
}
