import CCrypto

extension BTHome {
    /// A BTHome encryption key: 16 bytes, shown only by its ``checkValue``, never its bytes.
    public struct Key: Hashable, Sendable, CustomStringConvertible, CustomReflectable {
        /// The key.
        public let bytes: [UInt8]

        /// A key of 16 bytes; nil for any other length.
        public init?(bytes: [UInt8]) {
            guard bytes.count == 16 else { return nil }
            self.bytes = bytes
        }

        /// A key from 32 hex digits (`231d39c1d7cc1ab1aee224cd096db932`); nil for anything else.
        public init?(hex: String) {
            guard let bytes = Hex.decode(hex) else { return nil }
            self.init(bytes: bytes)
        }

        /// The first 8 bytes of the key's SHA-256, in hex: names the key in file names and logs
        /// without revealing it.
        public var checkValue: String {
            let crypto = LibCrypto.functions
            var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
            var length: UInt32 = 0
            let done = crypto.EVP_Digest(bytes, bytes.count, &digest, &length, crypto.EVP_sha256(), nil)
            precondition(done == 1 && length == 32, "libcrypto could not compute a SHA-256")
            return Hex.encode(Array(digest.prefix(8)))
        }

        /// `key CHECKVALUE`.
        public var description: String { "key \(checkValue)" }

        /// No children: `dump` shows the description, not the bytes.
        public var customMirror: Mirror { Mirror(self, children: [:]) }
    }

    /// Why encrypted BTHome cannot work in this process (libcrypto cannot be loaded), or nil
    /// when it can. Loads libcrypto the first time it is asked; a config with an encryption key
    /// checks it, so that a key never reaches the functions that need the library.
    public static var encryptionUnavailable: String? {
        guard case .failure(let reason) = LibCrypto.shared else { return nil }
        return "encrypted BTHome needs \(reason.description)"
    }

    /// 0xFCD2 as it goes in the nonce, least significant byte first.
    private static let uuidBytes: [UInt8] = [0xD2, 0xFC]

    /// Bytes the encryption adds to the service data: the counter and the message integrity check.
    public static let encryptionOverhead = 8

    /// `serviceData` (the device information byte, then the objects) encrypted as BTHome v2
    /// specifies: AES-128-CCM with a 4-byte tag over the objects, under a nonce of the sender's
    /// address, the service UUID, the device information byte and `counter`; sent as the device
    /// information byte, the ciphertext, the counter (little endian) and the tag.
    /// - Parameters:
    ///   - serviceData: the device information byte and the objects (``serviceData()``).
    ///   - key: the key receivers decrypt with.
    ///   - address: the address receivers see, most significant byte first (`54:48:E6:8F:80:A5`
    ///     is `[0x54, 0x48, 0xE6, 0x8F, 0x80, 0xA5]`).
    ///   - counter: a value never used before with `key`: receivers drop a lower one.
    public static func seal(_ serviceData: [UInt8], key: Key, address: [UInt8], counter: UInt32) -> [UInt8] {
        precondition(address.count == 6, "BTHome.seal needs a 6-byte address")
        let information = (serviceData.first ?? 0x40) | 0x01
        let counterBytes = littleEndian(UInt64(counter), count: 4)
        let nonce = nonce(address: address, information: information, counter: counterBytes)
        let (ciphertext, tag) = AESCCM.seal(Array(serviceData.dropFirst()), key: key.bytes, nonce: nonce)
        return [information] + ciphertext + counterBytes + tag
    }

    /// Decrypts what ``seal(_:key:address:counter:)`` made: the device information byte and the
    /// objects, or nil when the tag does not match (a wrong key, address or altered bytes).
    public static func open(_ sealed: [UInt8], key: Key, address: [UInt8]) -> [UInt8]? {
        guard sealed.count >= 1 + encryptionOverhead, address.count == 6 else { return nil }
        let information = sealed[0]
        let counterBytes = Array(sealed[(sealed.count - 8)..<(sealed.count - 4)])
        let nonce = nonce(address: address, information: information, counter: counterBytes)
        let ciphertext = Array(sealed[1..<(sealed.count - 8)])
        return AESCCM.open(ciphertext, tag: Array(sealed.suffix(4)), key: key.bytes, nonce: nonce).map { [information] + $0 }
    }

    /// The nonce: the address, the UUID, the device information byte and the counter's bytes.
    private static func nonce(address: [UInt8], information: UInt8, counter: [UInt8]) -> [UInt8] {
        address + uuidBytes + [information] + counter
    }

    /// `54:48:E6:8F:80:A5` as 6 bytes, most significant first; nil when it is not an address.
    public static func addressBytes(_ address: String) -> [UInt8]? {
        guard let bytes = Hex.decode(address), bytes.count == 6 else { return nil }
        return bytes
    }
}

extension Advertisement {
    /// The advertisement as it goes to BlueZ: with a ``bthomeKey``, its 0xFCD2 service data
    /// sealed for `address` with `counter` (``BTHome/seal(_:key:address:counter:)``); otherwise
    /// itself.
    public func sealed(address: [UInt8], counter: UInt32) -> Advertisement {
        guard let key = bthomeKey else { return self }
        var sealed = self
        sealed.bthomeKey = nil
        sealed.serviceData = serviceData.map { entry in
            guard entry.uuid == BTHome.serviceUUID else { return entry }
            return ServiceData(uuid: entry.uuid, data: BTHome.seal(entry.data, key: key, address: address, counter: counter))
        }
        return sealed
    }

    /// The advertisement at the size it has on air: an encrypted BTHome sealed (for address 0
    /// and counter 0: the size does not depend on them), so its counter and tag count.
    public var sizedAsOnAir: Advertisement {
        sealed(address: [0, 0, 0, 0, 0, 0], counter: 0)
    }
}

/// Where encrypted BTHome's counters come from: never the same value twice for a key, across
/// restarts too. A repeated counter would reuse a nonce, and receivers drop a counter lower
/// than the last they saw.
public protocol EncryptionCounters: Sendable {
    /// The next counter for `key`.
    /// - Throws: ``PeripheralError`` (`failed`) when the counter cannot be kept, e.g. its file
    ///   cannot be written.
    func next(for key: BTHome.Key) throws(PeripheralError) -> UInt32
}

/// AES-128-CCM with a 4-byte tag and a 13-byte nonce, no associated data, from libcrypto.
enum AESCCM {
    static let tagLength = 4

    static func seal(_ plaintext: [UInt8], key: [UInt8], nonce: [UInt8]) -> (ciphertext: [UInt8], tag: [UInt8]) {
        let crypto = LibCrypto.functions
        let context = start(crypto, encrypting: true, key: key, nonce: nonce, tag: nil)
        defer { crypto.EVP_CIPHER_CTX_free(context) }
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count)
        var tag = [UInt8](repeating: 0, count: tagLength)
        var written: Int32 = 0
        check(crypto.EVP_EncryptUpdate(context, &ciphertext, &written, plaintext, Int32(plaintext.count)), "encrypt")
        check(crypto.EVP_EncryptFinal_ex(context, nil, &written), "finish")
        check(crypto.EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_GET_TAG, Int32(tagLength), &tag), "read the tag")
        return (ciphertext, tag)
    }

    static func open(_ ciphertext: [UInt8], tag: [UInt8], key: [UInt8], nonce: [UInt8]) -> [UInt8]? {
        let crypto = LibCrypto.functions
        let context = start(crypto, encrypting: false, key: key, nonce: nonce, tag: tag)
        defer { crypto.EVP_CIPHER_CTX_free(context) }
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count)
        var written: Int32 = 0
        // CCM checks the tag in the one update that decrypts; it fails when the tag does not match.
        guard crypto.EVP_DecryptUpdate(context, &plaintext, &written, ciphertext, Int32(ciphertext.count)) == 1 else { return nil }
        return plaintext
    }

    private static func start(_ crypto: bleadvd_libcrypto, encrypting: Bool, key: [UInt8], nonce: [UInt8], tag: [UInt8]?) -> OpaquePointer {
        precondition(key.count == 16 && nonce.count == 13, "AES-128-CCM takes a 16-byte key and a 13-byte nonce")
        guard let context = crypto.EVP_CIPHER_CTX_new() else { fatalError("libcrypto could not allocate a cipher context") }
        let initialize = encrypting ? crypto.EVP_EncryptInit_ex : crypto.EVP_DecryptInit_ex
        check(initialize(context, crypto.EVP_aes_128_ccm(), nil, nil, nil), "select AES-128-CCM")
        check(crypto.EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_IVLEN, Int32(nonce.count), nil), "set the nonce length")
        // Encrypting: the tag's length; decrypting: the tag to check.
        var expected = tag ?? []
        let setTag = tag == nil
            ? crypto.EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_TAG, Int32(tagLength), nil)
            : crypto.EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_TAG, Int32(tagLength), &expected)
        check(setTag, "set the tag")
        check(initialize(context, nil, nil, key, nonce), "set the key")
        return context
    }

    /// libcrypto fails these calls only for arguments that cannot happen here (lengths are checked).
    private static func check(_ result: Int32, _ what: String) {
        precondition(result == 1, "libcrypto could not \(what) for AES-128-CCM")
    }
}
