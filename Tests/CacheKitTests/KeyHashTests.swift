import Testing

@testable import CacheKit

/// The hash the index takes of a key: seeded folded multiplies for integer keys, the key's own
/// `hashValue` for any other.
@Suite("Key hash")
struct KeyHashTests {
    /// The mean displacement of `keys` placed by linear probing in `bucketCount` buckets, the
    /// way the index places them (the hash's low bits pick the ideal bucket).
    static func meanDisplacement(_ hashes: [Int], bucketCount: Int) -> Double {
        var taken = [Bool](repeating: false, count: bucketCount)
        var total = 0
        for hash in hashes {
            var b = hash & (bucketCount - 1)
            var d = 0
            while taken[b] {
                b = (b + 1) & (bucketCount - 1)
                d += 1
            }
            taken[b] = true
            total += d
        }
        return Double(total) / Double(hashes.count)
    }

    /// This process's seed, and eight fixed ones, so that a seed that spreads badly shows up
    /// again when the test is run again.
    static let seeds: [_KeyHash.Seed] = {
        var rng = SeededGenerator(seed: 2121)
        return [_KeyHash.processSeed]
            + (0..<8).map { _ in
                _KeyHash.Seed(mask: rng.next(), multiplier: rng.next(), secondMask: rng.next())
            }
    }()

    @Test(
        "integer keys in arithmetic progressions spread over the buckets and the tag bits",
        arguments: [1, 2, 3, 8, 1000, 1 << 10, 1 << 16, 1 << 32, -3, 0x1E37_79B9_7F4A_7C15]
    )
    func integerKeysSpread(stride: Int) {
        let buckets = 1 << 16
        let keys = (0..<(buckets / 4 * 3)).map { $0 &* stride }
        for (n, seed) in Self.seeds.enumerated() {
            let hashes = keys.map { _KeyHash.hash($0, seed: seed) }
            // Uniform hashes at a load of 3/4 give about 1.5; the key itself as its hash would
            // pile every key of a stride of 2^16 or more into one bucket (a mean in the tens of
            // thousands).
            #expect(Self.meanDisplacement(hashes, bucketCount: buckets) < 2.5, "seed \(n)")
            // The tag is taken from the bits above those that pick the bucket: they vary too
            // (uniform values would give about 34,600 distinct ones of 65,536).
            let tags = Set(hashes.map { $0 >> 16 & 0xFFFF })
            #expect(tags.count > 30_000, "seed \(n)")
        }
    }

    @Test("each integer type is hashed by its value's bits; equal keys hash equally")
    func integerTypes() {
        #expect(_KeyHash.hash(7 as Int) == _KeyHash.hash(7 as Int))
        #expect(_KeyHash.hash(7 as Int) == _KeyHash.hash(7 as Int64))
        #expect(_KeyHash.hash(7 as UInt8) == _KeyHash.hash(7 as UInt64))
        #expect(_KeyHash.hash(-1 as Int32) == _KeyHash.hash(-1 as Int))
        #expect(_KeyHash.hash(7 as Int) != _KeyHash.hash(8 as Int))
        // Not the standard library's hash (which would leave the folded multiply unused).
        let differing = (0..<64).filter { _KeyHash.hash($0) != $0.hashValue }
        #expect(differing.count > 60)
    }

    @Test("the types the engine skips storing hashes for are exactly those hashed by the folded multiplies")
    func hashesItselfAgreesWithHash() {
        func check<T: FixedWidthInteger & Hashable>(_: T.Type) {
            #expect(_KeyHash.hashesItself(T.self), "\(T.self)")
            // Hashed here, not by `hashValue` (a different function of the same bits).
            let differing = (0..<16).filter {
                _KeyHash.hash(T(truncatingIfNeeded: $0)) != T(truncatingIfNeeded: $0).hashValue
            }
            #expect(differing.count > 12, "\(T.self)")
        }
        check(Int.self)
        check(UInt.self)
        check(Int64.self)
        check(UInt64.self)
        check(Int32.self)
        check(UInt32.self)
        check(Int16.self)
        check(UInt16.self)
        check(Int8.self)
        check(UInt8.self)
        #expect(!_KeyHash.hashesItself(String.self))
        #expect(!_KeyHash.hashesItself(Double.self))
        #expect(!_KeyHash.hashesItself(PlacedKey.self))
    }

    @Test("keys of other types are hashed by their own Hashable conformance")
    func otherTypes() {
        #expect(_KeyHash.hash("a key") == "a key".hashValue)
        #expect(_KeyHash.hash(PlacedKey(id: 1, hash: 42)) == 42)
        #expect(_KeyHash.hash(2.5) == 2.5.hashValue)
    }

    @Test("a cache keyed by integers in a stride of 2^32 stores, finds and evicts them all")
    func stridedKeysThroughTheCache() {
        let cache = SerialCache<Int, Int>(countLimit: 5_000, policy: .lru)
        for k in 0..<10_000 { cache[k << 32] = k }
        #expect(cache.count == 5_000)
        for k in 0..<5_000 { #expect(cache.peekValue(forKey: k << 32) == nil) }
        for k in 5_000..<10_000 where cache.peekValue(forKey: k << 32) != k { Issue.record("lost key \(k) << 32") }
    }
}
