#if Redis
import NIOCore
import Testing

@_spi(Fuzzing) @testable import CacheKitRedis

struct RESPDecoderTests {
    /// Feeds `bytes` in the given chunk sizes and returns every value decoded, or the error thrown.
    static func decodeAll(
        _ bytes: [UInt8],
        chunks: [Int],
        limits: RedisReplyLimits = RedisReplyLimits()
    ) -> (values: [RESPValue], error: RedisError?, midValue: Bool) {
        var decoder = RESPDecoder(limits: limits)
        var buffer = ByteBuffer()
        var values: [RESPValue] = []
        var offset = 0
        var chunkIndex = 0
        while offset < bytes.count {
            let size = max(1, chunks.isEmpty ? bytes.count : chunks[chunkIndex % chunks.count])
            chunkIndex += 1
            let end = min(bytes.count, offset + size)
            buffer.writeBytes(bytes[offset..<end])
            offset = end
            do {
                while let value = try decoder.decode(&buffer) { values.append(value) }
            } catch {
                return (values, error, decoder.isMidValue)
            }
        }
        return (values, nil, decoder.isMidValue || buffer.readableBytes > 0)
    }

    static func decode(
        _ text: String,
        limits: RedisReplyLimits = RedisReplyLimits()
    ) -> (
        values: [RESPValue], error: RedisError?, midValue: Bool
    ) {
        decodeAll(Array(text.utf8), chunks: [], limits: limits)
    }

    @Test func scalars() {
        #expect(Self.decode("+OK\r\n").values == [.simpleString("OK")])
        #expect(Self.decode("-WRONGTYPE Operation\r\n").values == [.error("WRONGTYPE Operation")])
        #expect(Self.decode(":-42\r\n").values == [.integer(-42)])
        #expect(Self.decode("$5\r\nhello\r\n").values == [.blobString(Array("hello".utf8))])
        #expect(Self.decode("$0\r\n\r\n").values == [.blobString([])])
        #expect(Self.decode("$-1\r\n").values == [.null])
        #expect(Self.decode("*-1\r\n").values == [.null])
        #expect(Self.decode("_\r\n").values == [.null])
        #expect(Self.decode("#t\r\n").values == [.boolean(true)])
        #expect(Self.decode(",3.25\r\n").values == [.double(3.25)])
        #expect(Self.decode(",inf\r\n").values == [.double(.infinity)])
        #expect(Self.decode("(12345678901234567890123\r\n").values == [.bigNumber("12345678901234567890123")])
        #expect(Self.decode("=8\r\ntxt:abcd\r\n").values == [.verbatimString("abcd")])
        #expect(Self.decode("!8\r\nERR a\r\nb\r\n").values == [.error("ERR a\r\nb")])
    }

    @Test func aggregates() {
        #expect(
            Self.decode("*2\r\n:1\r\n*1\r\n+a\r\n").values == [.array([.integer(1), .array([.simpleString("a")])])]
        )
        #expect(Self.decode("*0\r\n").values == [.array([])])
        #expect(Self.decode("%1\r\n+k\r\n:1\r\n").values == [.map([.simpleString("k"): .integer(1)])])
        #expect(Self.decode("~1\r\n:1\r\n").values == [.set([.integer(1)])])
        #expect(
            Self.decode(">2\r\n$10\r\ninvalidate\r\n*1\r\n$3\r\nkey\r\n").values == [
                .push([.blobString(Array("invalidate".utf8)), .array([.blobString(Array("key".utf8))])])
            ]
        )
        // An attribute is read and dropped; the value after it is the reply.
        #expect(Self.decode("|1\r\n+ttl\r\n:3\r\n:7\r\n").values == [.integer(7)])
        #expect(Self.decode("*2\r\n|1\r\n+a\r\n+b\r\n:1\r\n:2\r\n").values == [.array([.integer(1), .integer(2)])])
    }

    @Test func incompleteFramesWaitForMoreBytes() {
        for text in ["+OK", "+OK\r", "$5\r\nhel", "$5\r\nhello\r", "*2\r\n:1\r\n", "%1\r\n+k\r\n", ">"] {
            let result = Self.decode(text)
            #expect(result.values.isEmpty && result.error == nil && result.midValue, "\(text)")
        }
    }

    @Test(arguments: [
        "?\r\n", ":12a\r\n", ":\r\n", ":99999999999999999999\r\n", "$-2\r\n", "$abc\r\n", "$3\r\nabcd\r\n", "*-2\r\n",
        "#x\r\n", ",1.2.3x\r\n", "(12a\r\n", "_x\r\n", "=2\r\nab\r\n", "+a\rb\r\n", "$99999999999999\r\n",
        "*999999999999\r\n", "%999999999999\r\n",
    ])
    func malformedFramesAreViolations(_ text: String) {
        let result = Self.decode(text)
        guard case .protocolViolation = result.error else {
            Issue.record("\(text.debugDescription) gave \(result)")
            return
        }
    }

    @Test("an unknown type byte is refused when it arrives, before any line end", arguments: ["?", "hello", "\u{0}"])
    func unknownTypeByteWithoutLineEnd(_ text: String) {
        let result = Self.decode(text)
        guard case .protocolViolation = result.error else {
            Issue.record("\(text.debugDescription) gave \(result)")
            return
        }
    }

    @Test func limitsAreEnforced() {
        let limits = RedisReplyLimits(
            maximumBulkLength: 10,
            maximumAggregateCount: 4,
            maximumNestingDepth: 3,
            maximumLineLength: 40
        )
        #expect(Self.decode("$10\r\n0123456789\r\n", limits: limits).error == nil)
        #expect(Self.decode("$11\r\n", limits: limits).error != nil)
        #expect(Self.decode("*5\r\n", limits: limits).error != nil)
        #expect(Self.decode("%3\r\n", limits: limits).error != nil)
        #expect(Self.decode("*1\r\n*1\r\n*1\r\n:1\r\n", limits: limits).error == nil)
        #expect(Self.decode("*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", limits: limits).error != nil)
        #expect(Self.decode("+" + String(repeating: "a", count: 41), limits: limits).error != nil)
        #expect(Self.decode("+" + String(repeating: "a", count: 40), limits: limits).error == nil)
        // One byte past the limit, CRLF and all in the buffer: refused, not waited on.
        #expect(Self.decode("+" + String(repeating: "a", count: 41) + "\r\n", limits: limits).error != nil)
        #expect(Self.decode("+" + String(repeating: "a", count: 40) + "\r\n", limits: limits).values.count == 1)
    }

    @Test("limits near Int.max are capped, so a huge length is refused instead of overflowing a sum")
    func hugeLimitsAreCapped() {
        let limits = RedisReplyLimits(maximumBulkLength: .max, maximumReplyBytes: .max)
        guard case .protocolViolation = Self.decode("$9223372036854775807\r\n", limits: limits).error else {
            Issue.record("a blob of Int.max bytes must be a violation")
            return
        }
        #expect(limits.maximumBulkLength == 1 << 60)
    }

    @Test func deepNestingIsAViolationNotARecursion() {
        let deep = String(repeating: "*1\r\n", count: 100_000) + ":1\r\n"
        guard case .protocolViolation = Self.decode(deep).error else {
            Issue.record("nesting past the limit must be a violation")
            return
        }
        let allowed = String(repeating: "*1\r\n", count: 63) + ":1\r\n"
        #expect(Self.decode(allowed).values.count == 1)
    }

    @Test("a reply's bytes are bounded as a whole: a blob that would pass the bound is refused from its header")
    func replyBytesAreBounded() {
        let limits = RedisReplyLimits(maximumReplyBytes: 1_000)
        let blob = "$400\r\n" + String(repeating: "x", count: 400) + "\r\n"
        #expect(Self.decode("*2\r\n" + blob + blob, limits: limits).values.count == 1)
        // The third blob's header alone is enough: its body is never awaited.
        let refused = Self.decode("*3\r\n" + blob + blob + "$400\r\n", limits: limits)
        guard case .protocolViolation(let message) = refused.error else {
            Issue.record("a reply past its byte bound must be a violation, got \(String(describing: refused.error))")
            return
        }
        #expect(message.contains("1000 bytes"))
        // Each reply starts its count afresh.
        #expect(Self.decode(String(repeating: "*2\r\n" + blob + blob, count: 5), limits: limits).values.count == 5)
    }

    @Test("a reply's values are bounded at every level together, so tiny elements cannot fill memory")
    func replyElementsAreBounded() {
        let limits = RedisReplyLimits(maximumReplyElements: 11)
        let nested = "*10\r\n" + String(repeating: "*0\r\n", count: 10)
        #expect(Self.decode(nested, limits: limits).values.count == 1, "the array and its ten values: 11")
        let deeper = "*2\r\n" + nested + ":1\r\n"
        guard case .protocolViolation = Self.decode(deeper, limits: limits).error else {
            Issue.record("a 13-value reply must be refused under a bound of 11")
            return
        }
        #expect(Self.decode(nested + nested + nested, limits: limits).values.count == 3)
    }

    @Test("a long line that arrives a byte at a time is scanned once, and decodes whole")
    func bytewiseLineIsScannedOnce() {
        let text = "+" + String(repeating: "a", count: 60_000) + "\r\n" + ":7\r\n"
        let bytes = Array(text.utf8)
        var decoder = RESPDecoder()
        var buffer = ByteBuffer()
        var values: [RESPValue] = []
        for byte in bytes {
            buffer.writeInteger(byte)
            do {
                while let value = try decoder.decode(&buffer) { values.append(value) }
            } catch {
                Issue.record("unexpected \(error)")
                return
            }
            if buffer.readerIndex > 4_096 { buffer.discardReadBytes() }
        }
        #expect(values == [.simpleString(String(repeating: "a", count: 60_000)), .integer(7)])
        // Rescanning from the line's start on every byte would examine about 1.8 billion bytes.
        #expect(decoder.bytesScanned <= 2 * bytes.count)
    }

    @Test("the fuzzing entry point: the same replies whole and in pieces, violations, partial replies")
    func fuzzingEntryPoint() {
        let bytes = Array("*2\r\n:1\r\n$1\r\na\r\n+OK\r\n".utf8)
        let whole = _RESPFuzzing.decode(bytes, pieces: [], limits: RedisReplyLimits())
        let split = _RESPFuzzing.decode(bytes, pieces: [1, 3], limits: RedisReplyLimits())
        #expect(whole.outcome.values == [.array([.integer(1), .blobString(Array("a".utf8))]), .simpleString("OK")])
        #expect(whole.outcome == split.outcome)
        #expect(split.bytesScanned <= 2 * bytes.count)
        let deep = Array(String(repeating: "*1\r\n", count: 100).utf8)
        let violation = _RESPFuzzing.decode(deep, pieces: [2], limits: RedisReplyLimits(maximumNestingDepth: 8))
        #expect(violation.outcome.failed && violation.outcome.values.isEmpty)
        let partial = _RESPFuzzing.decode(Array("+a\r\n$5\r\nhel".utf8), pieces: [], limits: RedisReplyLimits())
        #expect(partial.outcome.values == [.simpleString("a")])
        #expect(partial.outcome.midValue && !partial.outcome.failed)
    }
}
#endif
