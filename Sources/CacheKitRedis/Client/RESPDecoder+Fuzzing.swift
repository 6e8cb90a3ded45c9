#if Redis
import NIOCore

/// The RESP decoder driven from plain bytes, for the package's fuzz target (`Fuzz/`), which is a
/// package of its own and cannot see `package` declarations. Not API.
@_spi(Fuzzing)
public enum _RESPFuzzing {
    /// What one decoder made of some bytes.
    public struct Outcome: Equatable {
        /// The replies decoded, in order.
        public var values: [RESPValue]
        /// Whether decoding stopped at a protocol violation (the connection would close).
        public var failed: Bool
        /// Whether a reply had begun and not completed when the bytes ended.
        public var midValue: Bool
    }

    /// Decodes `bytes` with one decoder, handing it the bytes in pieces whose sizes cycle
    /// through `pieces` (each at least 1; all at once when `pieces` is empty), and decoding
    /// every reply the buffer completes after each piece, until the bytes end or a violation
    /// stops it. Also returns the bytes the decoder's line scans examined.
    public static func decode(
        _ bytes: [UInt8],
        pieces: [Int],
        limits: RedisReplyLimits
    ) -> (outcome: Outcome, bytesScanned: Int) {
        var decoder = RESPDecoder(limits: limits)
        var buffer = ByteBufferAllocator().buffer(capacity: bytes.count)
        var outcome = Outcome(values: [], failed: false, midValue: false)
        var offset = 0
        var piece = 0
        while offset < bytes.count && !outcome.failed {
            let size = pieces.isEmpty ? bytes.count : Swift.max(1, pieces[piece % pieces.count])
            piece += 1
            let end = Swift.min(bytes.count, offset + size)
            buffer.writeBytes(bytes[offset..<end])
            offset = end
            do {
                while let value = try decoder.decode(&buffer) { outcome.values.append(value) }
            } catch {
                outcome.failed = true
            }
        }
        outcome.midValue = !outcome.failed && (decoder.isMidValue || buffer.readableBytes > 0)
        return (outcome, decoder.bytesScanned)
    }
}
#endif
