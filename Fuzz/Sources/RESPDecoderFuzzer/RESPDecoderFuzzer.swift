@_spi(Fuzzing) import CacheKitRedis
import Foundation
import FuzzDriver

/// Small limits, so that every bound is reached by inputs of a few kilobytes and nothing a reply
/// announces can allocate much.
let limits = RedisReplyLimits(
    maximumBulkLength: 512,
    maximumAggregateCount: 32,
    maximumNestingDepth: 8,
    maximumLineLength: 64,
    maximumReplyBytes: 2_048,
    maximumReplyElements: 128
)

/// One input: its first byte chooses the sizes of the pieces the rest arrives in (a cycle of up
/// to four sizes from 1 to 16 bytes, or everything at once). The decoder must not crash, must
/// make of the pieces exactly what it makes of the whole (the same replies, the same violation,
/// the same reply left incomplete), and its line scans must examine at most twice the bytes.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let mode = Int(data[0])
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let pieces = mode == 0 ? [] : (0...(mode & 3)).map { 1 + (mode >> (2 + $0)) & 15 }
    let whole = _RESPFuzzing.decode(bytes, pieces: [], limits: limits)
    let split = _RESPFuzzing.decode(bytes, pieces: pieces, limits: limits)
    guard whole.outcome == split.outcome else {
        fatalError("pieces of \(pieces) decoded \(split.outcome), the whole \(whole.outcome)")
    }
    guard split.bytesScanned <= 2 * bytes.count, whole.bytesScanned <= 2 * bytes.count else {
        fatalError("line scans examined \(whole.bytesScanned) and \(split.bytesScanned) of \(bytes.count) bytes")
    }
    return 0
}

/// Writes the seeds of a corpus into `folder`: one reply of each RESP2 and RESP3 type, and a
/// few nested ones, each behind a mode byte that splits it into pieces.
func writeSeeds(to folder: String) {
    let replies = [
        "+OK\r\n", "-ERR wrong\r\n", ":42\r\n", "$5\r\nhello\r\n", "$-1\r\n", "*-1\r\n", "_\r\n", ",1.5\r\n",
        "#t\r\n", "(12345678901234567890\r\n", "!3\r\nerr\r\n", "=7\r\ntxt:abc\r\n",
        "*2\r\n:1\r\n$1\r\na\r\n", "%1\r\n+k\r\n+v\r\n", "~2\r\n+a\r\n+b\r\n", ">3\r\n+message\r\n+c\r\n$1\r\nx\r\n",
        "|1\r\n+ttl\r\n:5\r\n+value\r\n", "*1\r\n*1\r\n*1\r\n*0\r\n", "+a\r\n+b\r\n:3\r\n",
    ]
    for (index, reply) in replies.enumerated() {
        let bytes = Data([UInt8(index * 37 % 256)]) + Data(reply.utf8)
        try? bytes.write(to: URL(fileURLWithPath: folder).appendingPathComponent("reply\(index)"))
    }
}

/// The executable's entry point, which SwiftPM names after the module. With
/// `CACHEKIT_FUZZ_SEEDS=FOLDER` in the environment it writes seeds there instead of fuzzing.
@_cdecl("RESPDecoderFuzzer_main")
func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv, writeSeeds: { writeSeeds(to: $0) }, { fuzz($0, $1) })
}
