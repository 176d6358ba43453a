import CCrypto

extension Improv.Credentials {
    /// Why the key cannot be derived: libcrypto cannot be loaded.
    public struct KeyUnavailable: Error, CustomStringConvertible {
        /// The line: `deriving the Wi-Fi key needs libcrypto.so.3, which cannot be loaded: …`.
        public let description: String
    }

    /// How many rounds WPA's key derivation takes (IEEE 802.11i, H.4).
    static let keyRounds: Int32 = 4096
    /// WPA's key: 256 bits.
    static let keyLength = 32

    /// The 256-bit key WPA-PSK uses with these credentials: the one IEEE 802.11i derives from a
    /// passphrase (PBKDF2 with HMAC-SHA1, the SSID as salt, 4,096 rounds, by libcrypto), the
    /// password's own bytes when it is a key of 64 hex digits, nil for an open network.
    ///
    /// What a join stores instead of the passphrase: a program's config file can always hold 64
    /// hex digits, while wpa_supplicant's cannot hold every passphrase in quotes (a `#` after a
    /// quote ends its line when it reads the file again).
    /// - Throws: ``KeyUnavailable`` when libcrypto cannot be loaded.
    public func preSharedKey() throws(KeyUnavailable) -> [UInt8]? {
        if password.isEmpty { return nil }
        if Self.isKey(password) { return Hex.decode(String(decoding: password, as: UTF8.self)) }
        let crypto: LibCrypto
        switch LibCrypto.shared {
        case .success(let library): crypto = library
        case .failure(let reason): throw KeyUnavailable(description: "deriving the Wi-Fi key needs \(reason.description)")
        }
        var key = [UInt8](repeating: 0, count: Self.keyLength)
        let done = password.withUnsafeBufferPointer { passphrase in
            passphrase.withMemoryRebound(to: CChar.self) { passphrase in
                crypto.table.pointee.PKCS5_PBKDF2_HMAC_SHA1(
                    passphrase.baseAddress, Int32(passphrase.count), ssid, Int32(ssid.count), Self.keyRounds, Int32(Self.keyLength), &key)
            }
        }
        precondition(done == 1, "libcrypto could not derive a key with PBKDF2")
        return key
    }
}
