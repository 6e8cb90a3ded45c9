#if Redis
import Foundation

/// How ``RedisStore`` lays out an entry's value in Redis: a 12-byte header, then the value.
///
/// ```
/// 0..1   "CK"                 marks an entry of this store
/// 2      1                    the format version
/// 3      0 or 1               whether a deadline follows
/// 4..11  Int64, big-endian    the deadline, milliseconds since 1970 on the store's clock
/// 12...  the value's bytes
/// ```
///
/// The deadline travels with the value so that a reader learns it in the same round trip, on the
/// store's own clock (a test's manual clock included); Redis's own expiry (`PX`) frees the key as
/// well.
enum RedisEntryFormat {
    static let headerBytes = 12
    static let version: UInt8 = 1

    /// The header and `value` as one buffer.
    static func encode(_ value: Data, expiresAt: Date?) -> [UInt8] {
        var bytes = [UInt8]()
        bytes.reserveCapacity(headerBytes + value.count)
        bytes.append(contentsOf: [UInt8(ascii: "C"), UInt8(ascii: "K"), version, expiresAt == nil ? 0 : 1])
        let milliseconds = expiresAt.map { Int64(($0.timeIntervalSince1970 * 1_000).rounded(.up)) } ?? 0
        withUnsafeBytes(of: milliseconds.bigEndian) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: value)
        return bytes
    }

    /// The value and deadline in `bytes`, or why they cannot be read.
    static func decode(_ bytes: [UInt8]) -> Result<(value: Data, expiresAt: Date?), FormatFailure> {
        guard bytes.count >= headerBytes else {
            return .failure(FormatFailure(reason: "\(bytes.count) bytes, shorter than the \(headerBytes)-byte header"))
        }
        guard bytes[0] == UInt8(ascii: "C"), bytes[1] == UInt8(ascii: "K") else {
            return .failure(FormatFailure(reason: "not an entry of a RedisStore (no \"CK\" header)"))
        }
        guard bytes[2] == version else {
            return .failure(FormatFailure(reason: "entry format \(bytes[2]); this CacheKit reads \(version)"))
        }
        guard bytes[3] <= 1 else {
            return .failure(FormatFailure(reason: "deadline flag \(bytes[3]) is neither 0 nor 1"))
        }
        var milliseconds: Int64 = 0
        for byte in bytes[4..<12] { milliseconds = milliseconds << 8 | Int64(byte) }
        let expiresAt = bytes[3] == 1 ? Date(timeIntervalSince1970: Double(milliseconds) / 1_000) : nil
        return .success((Data(bytes[headerBytes...]), expiresAt))
    }
}

/// Why an entry's bytes could not be read.
struct FormatFailure: Error {
    let reason: String
}
#endif
