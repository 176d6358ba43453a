@testable import Peripheral
import Testing

/// libcrypto is loaded by its first user, not linked: the loader's failures are clear.
@Suite("libcrypto, loaded at its first use")
struct LibCryptoTests {
    @Test("a library that cannot be found is named, with the dynamic loader's reason")
    func missingLibrary() throws {
        let result = LibCrypto.load("libbleadvd-absent.so.9")

        #expect(throws: LibCrypto.Unavailable.self) { try result.get() }
        #expect(result.failureDescription == "libbleadvd-absent.so.9, which cannot be loaded: "
            + "libbleadvd-absent.so.9: cannot open shared object file: No such file or directory")
    }

    @Test("a library that is not libcrypto is refused, naming the first function it lacks")
    func notLibCrypto() {
        let result = LibCrypto.load("libc.so.6")

        #expect(result.failureDescription == "libc.so.6, which cannot be loaded: libc.so.6 has no function EVP_Digest")
    }

    @Test("this system's libcrypto loads, so encrypted BTHome is available")
    func available() {
        #expect(BTHome.encryptionUnavailable == nil)
    }
}

extension Result where Failure == LibCrypto.Unavailable {
    var failureDescription: String? {
        guard case .failure(let reason) = self else { return nil }
        return reason.description
    }
}
