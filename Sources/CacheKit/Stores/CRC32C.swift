import Foundation
import _CacheKitShims

/// CRC-32C (Castagnoli) of the bytes passed to `update`: the checksum of the disk store's files.
/// The CPU's CRC-32C instruction computes it where there is one, several bytes per cycle, so
/// checking a value costs little beside reading it.
package struct CRC32C {
    private var state: UInt32 = 0

    /// An empty checksum.
    package init() {}

    /// The checksum of everything passed to `update` so far.
    package var value: UInt32 { state }

    package mutating func update(_ bytes: some ContiguousBytes) {
        state = bytes.withUnsafeBytes { _cachekit_crc32c(state, $0.baseAddress, $0.count) }
    }

    /// `update` for bytes in memory, without a generic call.
    package mutating func update(_ buffer: UnsafeRawBufferPointer) {
        state = _cachekit_crc32c(state, buffer.baseAddress, buffer.count)
    }
}

extension CRC32C {
    /// The checksum of a whole value: CRC-32C over four interleaved lanes, then over the lanes'
    /// values and the tail (`_cachekit_checksum`), three times as fast as one chain on large
    /// values and as sure to catch damage.
    package static func lanes(of bytes: some ContiguousBytes) -> UInt32 {
        bytes.withUnsafeBytes { _cachekit_checksum($0.baseAddress, $0.count) }
    }
}
