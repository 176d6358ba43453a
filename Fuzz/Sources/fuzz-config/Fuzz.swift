import AdvertiserConfig
import FuzzDriver

/// libFuzzer's entry: any bytes as a config file. The parser must refuse with a ConfigError or
/// accept; it must not crash, hang or trap, whatever the bytes.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfig(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let text = String(validating: bytes, as: UTF8.self) else { return 0 }
    _ = try? ConfigParser.parse(text, file: "fuzz.toml")
    return 0
}

/// The program's entry: SwiftPM names an executable target's entry `<target>_main`.
@_cdecl("fuzz_config_main")
public func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    fuzzMain(argc, argv, fuzzConfig)
}
