import CacheKit
import Foundation
import FuzzDriver

/// A value that nests as deep as its payload says, so that the fuzzer can reach the decoders'
/// recursion.
struct Tree: Codable, Sendable {
    var children: [Tree]
    var label: String?
    var number: Int?
}

/// CRC-32 (IEEE), as the cache file's header holds it.
func crc32(_ bytes: [UInt8]) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes {
        crc ^= UInt32(byte)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
    }
    return ~crc
}

/// A cache file around `payload` for the serializer `identifier`, with a valid checksum.
func cacheFile(_ payload: [UInt8], identifier: String) -> [UInt8] {
    let id = Array(identifier.utf8)
    var header: [UInt8] = [0x01, 0x00, UInt8(id.count)] + id
    withUnsafeBytes(of: UInt64(payload.count).littleEndian) { header += $0 }
    var bytes: [UInt8] = [0x89, 0x43, 0x4B, 0x43, 0x0D, 0x0A, 0x1A, 0x0A] + header
    withUnsafeBytes(of: crc32(header + payload).littleEndian) { bytes += $0 }
    return bytes + payload
}

let path = FileManager.default.temporaryDirectory
    .appendingPathComponent("cachekit-fuzz-\(ProcessInfo.processInfo.processIdentifier).bin")

/// One input: its first byte chooses the serializer (bit 0: JSON or property list) and whether
/// the rest is a payload to wrap in a valid header (bit 1 clear) or a whole file (bit 1 set).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let mode = data[0]
    let rest = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let serializer: CacheSerializer<String, Tree> = mode & 1 == 0 ? .json : .propertyList
    let bytes = mode & 2 == 0 ? cacheFile(rest, identifier: serializer.identifier) : rest
    guard (try? Data(bytes).write(to: path)) != nil else { return 0 }
    let cache = Cache<String, Tree>()
    _ = try? CachePersistence(cache: cache, fileURL: path, serializer: serializer).load()
    return 0
}

/// The executable's entry point, which SwiftPM names after the module.
@_cdecl("PersistenceFuzzer_main")
func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { fuzz($0, $1) }
}
