/// The hash every CacheKit index and filter takes of a key.
///
/// Keys of the standard fixed-width integer types (`Int`, `UInt`, `Int64` … `UInt8`) are hashed
/// here, by two seeded folded multiplies: the key, exclusive-ored with a seed word, is
/// multiplied by another to 128 bits and the two halves are exclusive-ored together (the
/// "folded multiply" of Rust's `foldhash`); the result, exclusive-ored with a third seed word,
/// goes through the same with a fixed odd multiplier. That takes about a dozen instructions where
/// the standard library's `Hasher` (SipHash-1-3) took about 90, a quarter of all the
/// instructions `Cache` ran on `cachekit bench`'s mix. Every other key type is hashed by its own
/// `Hashable` conformance (`hashValue`).
///
/// One folded multiply is not enough: for some seeds, keys in an arithmetic progression (a
/// stride of 8, 1024, 2^32) crowded into a few buckets or shared a few tags
/// (`KeyHashTests` measures both for several strides); the second spreads them as uniformly
/// random hashes would, over every seed tried.
///
/// The seed is drawn once per process from `Hasher`, so it is random per process as Swift's own
/// hashing is, and fixed when `SWIFT_DETERMINISTIC_HASHING` is set. Equal integers give equal
/// hashes, which is all the index needs. Someone who does not know the seed cannot tell which
/// integers collide, but folded multiplies protect less against keys chosen to collide than
/// SipHash does (as `foldhash` says of itself). A cache keyed by integers that an adversary
/// picks can wrap them in a type of its own whose `hash(into:)` combines the integer: such a key
/// is hashed by `Hasher`.
///
/// `@usableFromInline` for the engine's inlinable code; `package` so that the package's own
/// benchmarks (`CacheKitLab`'s minimal sketches) hash as the engine does. Not API.
@usableFromInline
package enum _KeyHash {
    /// The two seed words of this process (see the type's notes).
    @usableFromInline
    package static let processSeed = Seed(
        mask: UInt64(truncatingIfNeeded: 0x6361_6368_656B_6974.hashValue),
        multiplier: UInt64(truncatingIfNeeded: 0x6B65_7968_6173_6821.hashValue),
        secondMask: UInt64(truncatingIfNeeded: 0x7365_636F_6E64_2121.hashValue)
    )

    /// The seed words: the key is exclusive-ored with `mask` and multiplied by `multiplier`
    /// (made odd); the folded product is exclusive-ored with `secondMask` and multiplied by a
    /// fixed odd constant.
    @usableFromInline
    package struct Seed: Sendable {
        @usableFromInline let mask: UInt64
        @usableFromInline let multiplier: UInt64
        @usableFromInline let secondMask: UInt64

        @inlinable
        init(mask: UInt64, multiplier: UInt64, secondMask: UInt64) {
            self.mask = mask
            self.multiplier = multiplier | 1
            self.secondMask = secondMask
        }
    }

    /// Whether keys of `type` are hashed here (by the folded multiplies, a dozen instructions)
    /// rather than by their own `Hashable` conformance. The same ten types as
    /// `hash(_:seed:)` tests for (`KeyHashTests` checks that the two agree).
    @inlinable
    static func hashesItself<Key>(_ type: Key.Type) -> Bool {
        type == Int.self || type == UInt.self || type == Int64.self || type == UInt64.self || type == Int32.self
            || type == UInt32.self || type == Int16.self || type == UInt16.self || type == Int8.self
            || type == UInt8.self
    }

    /// The hash of `key` with this process's seed. For paths that run once per bulk operation;
    /// hot paths keep a copy of the seed and pass it (reading the global costs a call each time).
    @inlinable
    static func hash<Key: Hashable>(_ key: Key) -> Int { hash(key, seed: processSeed) }

    /// The hash of `key` under `seed` (which must be `processSeed`, copied: every index, filter
    /// and queue of a cache compares hashes taken by any of them).
    ///
    /// In code specialized for a concrete key type the type tests fold away, leaving either the
    /// multiply or the call to `hashValue`.
    @inlinable
    @inline(__always)
    package static func hash<Key: Hashable>(_ key: Key, seed: Seed) -> Int {
        if Key.self == Int.self { return fold(UInt64(truncatingIfNeeded: unsafeBitCast(key, to: Int.self)), seed) }
        if Key.self == UInt.self { return fold(UInt64(truncatingIfNeeded: unsafeBitCast(key, to: UInt.self)), seed) }
        if Key.self == Int64.self { return fold(UInt64(truncatingIfNeeded: unsafeBitCast(key, to: Int64.self)), seed) }
        if Key.self == UInt64.self { return fold(unsafeBitCast(key, to: UInt64.self), seed) }
        if Key.self == Int32.self { return fold(UInt64(truncatingIfNeeded: unsafeBitCast(key, to: Int32.self)), seed) }
        if Key.self == UInt32.self { return fold(UInt64(unsafeBitCast(key, to: UInt32.self)), seed) }
        if Key.self == Int16.self { return fold(UInt64(truncatingIfNeeded: unsafeBitCast(key, to: Int16.self)), seed) }
        if Key.self == UInt16.self { return fold(UInt64(unsafeBitCast(key, to: UInt16.self)), seed) }
        if Key.self == Int8.self { return fold(UInt64(truncatingIfNeeded: unsafeBitCast(key, to: Int8.self)), seed) }
        if Key.self == UInt8.self { return fold(UInt64(unsafeBitCast(key, to: UInt8.self)), seed) }
        return key.hashValue
    }

    /// Two folded multiplies (see the type's notes): every bit of `x` reaches the low bits the
    /// index reads for the bucket and the bits above them it keeps as a tag.
    @inlinable
    @inline(__always)
    static func fold(_ x: UInt64, _ seed: Seed) -> Int {
        let first = (x ^ seed.mask).multipliedFullWidth(by: seed.multiplier)
        let second = (first.high ^ first.low ^ seed.secondMask).multipliedFullWidth(by: 0x9E37_79B9_7F4A_7C15)
        return Int(truncatingIfNeeded: second.high ^ second.low)
    }
}
