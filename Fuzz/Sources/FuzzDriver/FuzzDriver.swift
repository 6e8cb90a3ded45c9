#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// libFuzzer's driver (`-sanitize=fuzzer` links it): runs `callback` on each input.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
) -> CInt

/// Hands the command line to libFuzzer's driver with `callback` as the fuzz target. A fuzzer's
/// entry point, which SwiftPM names after its module (`<Module>_main`), calls this. A fuzzer that
/// passes `writeSeeds` writes its corpus's seeds instead when `CACHEKIT_FUZZ_SEEDS=FOLDER` is in
/// the environment.
public func runFuzzer(
    _ argc: CInt,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
    writeSeeds: ((_ folder: String) -> Void)? = nil,
    _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
) -> CInt {
    if let writeSeeds, let folder = getenv("CACHEKIT_FUZZ_SEEDS") {
        writeSeeds(String(cString: folder))
        return 0
    }
    var count = argc
    var arguments = argv
    return runFuzzerDriver(&count, &arguments, callback)
}
