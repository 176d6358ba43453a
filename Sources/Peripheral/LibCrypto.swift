import CCrypto

/// OpenSSL's libcrypto, loaded the first time a feature needs it (CCrypto.h says why): encrypted
/// BTHome, and the key Improv's join derives from a Wi-Fi passphrase.
struct LibCrypto: Sendable {
    /// `libcrypto.so.3`'s functions, or why it cannot be loaded; loaded at the first use.
    static let shared = load(String(cString: bleadvd_libcrypto_soname()))

    /// The functions. Stops the process, saying why, when libcrypto cannot be loaded: a config
    /// with a key checks ``BTHome/encryptionUnavailable`` first, so that does not happen.
    static var functions: bleadvd_libcrypto {
        switch shared {
        case .success(let library): library.table.pointee
        case .failure(let reason): fatalError(reason.description)
        }
    }

    /// Why a library could not be loaded as libcrypto: `libcrypto.so.3, which cannot be loaded: …`,
    /// to follow "… needs".
    struct Unavailable: Error, CustomStringConvertible {
        let description: String
    }

    /// The table of functions, written once by the load and only read after it.
    nonisolated(unsafe) let table: UnsafePointer<bleadvd_libcrypto>

    /// Loads `soname` and looks up the functions bleadvd calls.
    static func load(_ soname: String) -> Result<LibCrypto, Unavailable> {
        var error = [CChar](repeating: 0, count: 512)
        guard let table = bleadvd_libcrypto_load(soname, &error, error.count) else {
            let why = error.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            return .failure(Unavailable(description: "\(soname), which cannot be loaded: \(why)"))
        }
        return .success(LibCrypto(table: table))
    }
}
