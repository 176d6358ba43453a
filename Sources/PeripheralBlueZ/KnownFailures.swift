#if canImport(Glibc)
import Glibc
#endif

/// Failures in the field whose cause is known: when BlueZ's answer and the running kernel match
/// one, the error says what it is and what fixes it, instead of only passing BlueZ's words on.
package enum KnownFailures {
    /// Why a registration BlueZ answered with `Failed` most likely failed on `kernel` (a kernel
    /// release as `uname -r` prints it), or nil when no known bug matches.
    ///
    /// - bluez#2269, raspberrypi/linux#7473: from Raspberry Pi OS kernels 6.12.93 and 6.18.34
    ///   (releases with `+rpt`) the kernel refuses the advertising data BlueZ before 5.87 sends in
    ///   Add Extended Advertising Data (Invalid Parameters, 0x0d): every registration fails.
    ///   BlueZ 5.87 fixed it ("advertising: Fix sending extra bytes with
    ///   MGMT_OP_ADD_EXT_ADV_DATA"). Debian's own 6.12.117 does not refuse it (BlueZ 5.82, both
    ///   kinds of controllers, in the test bed), so other kernels of those versions are not named.
    package static func registrationFailure(onKernel kernel: String) -> String? {
        guard kernel.contains("+rpt") else { return nil }
        let version = kernel.prefix { $0.isNumber || $0 == "." }.split(separator: ".").compactMap { Int($0) }
        guard version.count >= 3 else { return nil }
        let affected = switch (version[0], version[1]) {
        case (6, 12): version[2] >= 93
        case (6, 18): version[2] >= 34
        default: false
        }
        guard affected else { return nil }
        return "Raspberry Pi OS kernel \(kernel) refuses the advertising data BlueZ before 5.87 sends (bluez#2269, Invalid "
            + "Parameters 0x0d in btmon): update BlueZ to 5.87 or later, or boot a kernel before 6.12.93 (6.18.34 on the 6.18 line)"
    }

    /// The running kernel's release, as `uname -r` prints it.
    package static var runningKernel: String {
        var names = utsname()
        guard uname(&names) == 0 else { return "" }
        return withUnsafeBytes(of: &names.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }
}
