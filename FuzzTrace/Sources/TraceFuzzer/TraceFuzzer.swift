import CacheKitSimulator
import Foundation

/// The file extension each value of an input's first byte selects (modulo 4).
let extensions = ["trace", "lis", "csv", "bin"]

/// Where each input goes, one file a format, so that the extension chooses the reader.
let folder = FileManager.default.temporaryDirectory
    .appendingPathComponent("cachekit-trace-fuzz-\(ProcessInfo.processInfo.processIdentifier)")

/// The request cap the fuzzer reads with: small, so that an input announcing many requests is
/// refused, or read, within the memory limit.
let maxRequests = 1 << 16

/// One input: its first byte chooses the format (`.trace`, `.lis`, `.csv`, `.bin`); the rest is the
/// file. Every error the reader throws is a `TraceError`; anything else, a crash or a hang is a
/// finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let path = folder.appendingPathComponent("input.\(extensions[Int(data[0]) % extensions.count])").path
    guard FileManager.default.createFile(atPath: path, contents: Data(bytes: data + 1, count: size - 1)) else {
        return 0
    }
    do {
        let trace = try Trace.read(path: path, maxRequests: maxRequests)
        precondition(!trace.keys.isEmpty && trace.keys.count <= maxRequests, "\(trace.keys.count) keys")
    } catch let error as TraceError {
        // A message stays short whatever the input: the path, a few words and 80 quoted characters.
        precondition("\(error)".count <= path.count + 300, "\(error)")
    } catch {
        preconditionFailure("not a TraceError: \(error)")
    }
    return 0
}

@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
) -> CInt

/// The executable's entry point, which SwiftPM names after the module: hands the command line
/// to libFuzzer's driver.
@_cdecl("TraceFuzzer_main")
func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return runFuzzerDriver(&count, &arguments) { fuzz($0, $1) }
}
