#if Redis
import NIOCore
import Testing

@testable import CacheKitRedis

/// Random and mutated frames through the decoder in random chunkings: it never crashes, a valid
/// frame decodes to the same value however it is cut, and a broken one is a protocol violation or
/// an incomplete value, never anything else.
struct RESPDecoderFuzzTests {
    @Test(arguments: 0..<4)
    func randomFramesDecodeAlikeInAnyChunking(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        for _ in 0..<400 {
            let values = (0..<Int.random(in: 1...3, using: &generator)).map { _ in
                RESPWriter.random(depth: 4, using: &generator)
            }
            let bytes = values.flatMap(RESPWriter.bytes)
            let whole = RESPDecoderTests.decodeAll(bytes, chunks: [])
            #expect(whole.values == values && whole.error == nil && !whole.midValue)
            let chunks = (0..<8).map { _ in Int.random(in: 1...9, using: &generator) }
            let chunked = RESPDecoderTests.decodeAll(bytes, chunks: chunks)
            #expect(chunked.values == values && chunked.error == nil && !chunked.midValue)
        }
    }

    @Test(arguments: 0..<4)
    func mutatedFramesNeverCrash(seed: UInt64) {
        var generator = SeededGenerator(seed: 1000 + seed)
        let limits = RedisReplyLimits(
            maximumBulkLength: 1 << 20,
            maximumAggregateCount: 1 << 16,
            maximumNestingDepth: 8,
            maximumLineLength: 256
        )
        for _ in 0..<1500 {
            var bytes = RESPWriter.bytes(RESPWriter.random(depth: 5, using: &generator))
            switch Int.random(in: 0..<5, using: &generator) {
            case 0:
                // Truncated: an incomplete value, never a wrong one.
                bytes = Array(bytes.prefix(Int.random(in: 0..<bytes.count, using: &generator)))
            case 1:
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    let index = Int.random(in: 0..<bytes.count, using: &generator)
                    bytes[index] ^= 1 << UInt8.random(in: 0..<8, using: &generator)
                }
            case 2:
                let header = ["$", "*", "%", "~", ">", "=", "!", "|"].randomElement(using: &generator)!
                let length = [
                    "9223372036854775807", "4294967296", "1048577", "99999999999999999999999", "-5",
                ]
                .randomElement(using: &generator)!
                bytes = Array("\(header)\(length)\r\n".utf8) + bytes
            case 3:
                bytes =
                    Array(String(repeating: "*1\r\n", count: Int.random(in: 1...40, using: &generator)).utf8) + bytes
            default:
                let index = Int.random(in: 0...bytes.count, using: &generator)
                bytes.insert(
                    contentsOf: (0..<4).map { _ in UInt8.random(in: 0 ... .max, using: &generator) },
                    at: index
                )
            }
            let chunks = (0..<4).map { _ in Int.random(in: 1...16, using: &generator) }
            let result = RESPDecoderTests.decodeAll(bytes, chunks: chunks, limits: limits)
            if let error = result.error {
                guard case .protocolViolation = error else {
                    Issue.record("unexpected error \(error)")
                    return
                }
            }
        }
    }
}
#endif
