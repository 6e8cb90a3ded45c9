import CacheKitSimulator
import Foundation
import FuzzDriver

/// The file extension each value of an input's first byte selects (modulo 4).
let extensions = ["trace", "lis", "csv", "bin"]

/// Where each input goes, one file a format, so that the extension chooses the reader.
let folder = FileManager.default.temporaryDirectory
    .appendingPathComponent("cachekit-trace-fuzz-\(ProcessInfo.processInfo.processIdentifier)")

/// The request cap the fuzzer reads with: small, so that an input announcing many requests is
/// refused, or read, within the memory limit.
let maxRequests = 1 << 16

/// The keys of a one-key-per-line file read the plain way, splitting `String`s, or the number of
/// its first malformed line: the model the reader must agree with.
func modelLines(_ bytes: [UInt8]) -> (keys: [Int], malformed: Int?) {
    var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
    if lines.last?.isEmpty == true { lines.removeLast() }
    var keys: [Int] = []
    for (index, var line) in lines.enumerated() {
        if index == 0 && line.starts(with: [0xEF, 0xBB, 0xBF]) { line = line.dropFirst(3) }
        while let last = line.last, [UInt8(ascii: "\r"), UInt8(ascii: " "), 9].contains(last) { line = line.dropLast() }
        while let first = line.first, first == UInt8(ascii: " ") || first == 9 { line = line.dropFirst() }
        let text = String(decoding: line, as: UTF8.self)
        if text.isEmpty || text == "*" { continue }
        guard let key = Int(text) ?? UInt64(text).map({ Int(truncatingIfNeeded: $0) }) else {
            return (keys, index + 1)
        }
        keys.append(key)
    }
    return (keys, nil)
}

/// One input: its first byte chooses the format (`.trace`, `.lis`, `.csv`, `.bin`); the rest is the
/// file. Every error the reader throws is a `TraceError`, and a one-key-per-line file reads as
/// `modelLines` has it; anything else, a crash or a hang is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let path = folder.appendingPathComponent("input.\(extensions[Int(data[0]) % extensions.count])").path
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else { return 0 }
    // One key per line: the keys, or the malformed line, are the model's.
    let model = path.hasSuffix(".trace") ? modelLines(bytes) : nil
    do {
        let trace = try Trace.read(path: path, maxRequests: maxRequests)
        precondition(!trace.keys.isEmpty && trace.keys.count <= maxRequests, "\(trace.keys.count) keys")
        if let model { precondition(model.malformed == nil && model.keys == trace.keys, "not the model's keys") }
    } catch let error as TraceError {
        // A message stays short whatever the input: the path, a few words and 80 quoted characters.
        precondition("\(error)".count <= path.count + 300, "\(error)")
        if let model {
            switch error {
            case .malformedLine(_, let line, _, _): precondition(model.malformed == line, "\(error)")
            case .empty: precondition(model.malformed == nil && model.keys.isEmpty, "\(error)")
            default: preconditionFailure("\(error)")
            }
        }
    } catch {
        preconditionFailure("not a TraceError: \(error)")
    }
    return 0
}

/// The executable's entry point, which SwiftPM names after the module.
@_cdecl("TraceFuzzer_main")
func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { fuzz($0, $1) }
}
