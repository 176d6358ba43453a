#if canImport(Glibc)
import Glibc
#endif

/// Reading and writing one small file of bleadvd's state directory (the unit's
/// `StateDirectory=`, `/var/lib/bleadvd`), safe against what an attacker or a bad restore can
/// leave there: a link, a FIFO, a device, a huge file.
enum StateFile {
    /// Why a file could not be used: ``corrupt(_:)`` is what is there; ``failed(_:reason:)`` is what
    /// the system said.
    enum Problem: Error, Equatable {
        /// The file is there but is not what bleadvd writes: `what` says how (`is a symbolic link`).
        case corrupt(String)
        /// `what` could not be done (`cannot read FILE`), with the system's reason.
        case failed(String, reason: String)

        /// `cannot read FILE (reason)` or `FILE what`.
        func description(file: String) -> String {
            switch self {
            case .corrupt(let what): "\(file) \(what)"
            case .failed(let what, let reason): "\(what) (\(reason))"
            }
        }
    }

    /// The bytes of `file`, nil when there is none. A regular file only (opened without
    /// blocking and without following a link, so a FIFO or a device cannot hold bleadvd) of at
    /// most `limit` bytes.
    static func read(_ file: String, limit: Int) throws(Problem) -> [UInt8]? {
        let descriptor = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY)
        if descriptor < 0 {
            if errno == ELOOP { throw .corrupt("is a symbolic link") }
            guard errno == ENOENT else { throw failure("cannot read \(file)") }
            return nil
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw failure("cannot read \(file)") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw .corrupt("is not a regular file") }
        guard info.st_size <= limit else { throw .corrupt("holds \(info.st_size) bytes") }
        var buffer = [UInt8](repeating: 0, count: limit + 1)
        let count = Glibc.read(descriptor, &buffer, buffer.count)
        guard count >= 0 else { throw failure("cannot read \(file)") }
        guard count <= limit else { throw .corrupt("holds more than \(limit) bytes") }
        return Array(buffer[..<count])
    }

    /// Writes `bytes` to `file` in `directory` (created, mode 0700, when missing) so that either
    /// the old or the new contents are there after a crash: a temporary file of ours, synced,
    /// renamed over the old one, the directory synced.
    static func write(_ bytes: [UInt8], to file: String, in directory: String) throws(Problem) {
        if mkdir(directory, 0o700) != 0 && errno != EEXIST { throw failure("cannot create \(directory)") }
        let temporary = file + ".new"
        // A new file of ours, whatever was there: never a FIFO, a device or a link's target.
        unlink(temporary)
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw failure("cannot write \(temporary)") }
        let written = Glibc.write(descriptor, bytes, bytes.count)
        let synced = fsync(descriptor) == 0
        close(descriptor)
        guard written == bytes.count, synced, rename(temporary, file) == 0 else {
            let problem = failure("cannot write \(file)")
            unlink(temporary)
            throw problem
        }
        let folder = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folder >= 0 {
            fsync(folder)
            close(folder)
        }
    }

    private static func failure(_ what: String) -> Problem {
        .failed(what, reason: String(cString: strerror(errno)))
    }
}
