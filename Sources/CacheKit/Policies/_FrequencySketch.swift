/// A count-min sketch of 4-bit counters that estimates how often each key hash was seen recently
/// (TinyLFU, Einziger, Friedman & Manes, 2017).
///
/// Each key increments one counter in each of four rows; its estimate is the smallest of the four.
/// Counters stop at 15. After `sampleSize` increments (2.5 per entry of capacity), every counter
/// is halved ("aging"), so the sketch forgets old popularity.
///
/// Caffeine ages after 10 increments per entry. CacheKit ages four times as often: swept over
/// the reference traces (multipliers 1 to 20, with the hill climber's sample from 3 to 10 per
/// entry), 2 to 2.5 was the only range where W-TinyLFU stayed within 3 points of the best
/// reference on every trace, and it lowered the mean gap to OPT from 8.82 to 8.25 points. A sketch
/// that forgets slowly keeps old favourites in the main space while a working set moves on
/// (cloudPhysicsIO: 0.2080 at 10, 0.2279 at 2.5; OLTP at 18,688 entries: 0.6156 and 0.6557). What
/// it costs: on traces where long memory pays (the LIRS loops backf, zigzag and scan) the hit
/// ratio drops by up to 10 points at 30% of the unique keys; the README has the figures. The table holds 16 counters per 64-bit
/// word and one word per entry of capacity (rounded up to a power of two): 8 bytes per entry,
/// bounded however many distinct keys pass through.
@usableFromInline
struct _FrequencySketch {
    @usableFromInline var table: UnsafeMutablePointer<UInt64>
    @usableFromInline var mask: Int
    @usableFromInline var sampleSize: Int
    /// Increments since the last aging.
    @usableFromInline var additions: Int

    @usableFromInline static var seeds: (UInt64, UInt64, UInt64, UInt64) {
        (0x97CB_3127_AB4B_52F1, 0xC2B2_AE3D_27D4_EB4F, 0x1656_67B1_9E37_79F9, 0xCBF2_9CE4_8422_2325)
    }

    @inlinable
    init(capacity: Int) {
        let words = _FrequencySketch.words(for: capacity)
        table = .allocate(capacity: words)
        table.initialize(repeating: 0, count: words)
        mask = words - 1
        sampleSize = Self.sampleSize(for: capacity)
        additions = 0
    }

    /// Increments between agings: 2.5 per entry of capacity (see the type's notes).
    @inlinable
    static func sampleSize(for capacity: Int) -> Int { Swift.max(capacity, 1) * 5 / 2 }

    @inlinable
    static func words(for capacity: Int) -> Int {
        var words = 8
        while words < capacity && words < 1 << 26 { words <<= 1 }
        return words
    }

    @inlinable
    func deallocate() { table.deallocate() }

    /// Resizes for `capacity` entries: a larger table starts empty; the sample size follows.
    /// Returns whether the table grew (and so forgot every count).
    @inlinable
    @discardableResult
    mutating func ensureCapacity(_ capacity: Int) -> Bool {
        sampleSize = Self.sampleSize(for: capacity)
        let words = _FrequencySketch.words(for: capacity)
        guard words > mask + 1 else { return false }
        table.deallocate()
        table = .allocate(capacity: words)
        table.initialize(repeating: 0, count: words)
        mask = words - 1
        additions = 0
        return true
    }

    /// How many entries the table has a word for.
    @inlinable
    var wordCount: Int { mask + 1 }

    /// Forgets every count.
    @inlinable
    mutating func clear() {
        table.update(repeating: 0, count: mask + 1)
        additions = 0
    }

    /// The word of row `row` for a spread hash.
    @inlinable
    @inline(__always)
    func wordIndex(_ h: UInt64, row: Int) -> Int {
        let seed: UInt64
        switch row {
        case 0: seed = Self.seeds.0
        case 1: seed = Self.seeds.1
        case 2: seed = Self.seeds.2
        default: seed = Self.seeds.3
        }
        var x = (h &+ seed) &* seed
        x ^= x >> 32
        return Int(truncatingIfNeeded: x) & mask
    }

    @inlinable
    @inline(__always)
    static func spread(_ hash: UInt32) -> UInt64 {
        var x = UInt64(hash) &* 0x9E37_79B9_7F4A_7C15
        x ^= x >> 29
        return x
    }

    /// The estimated recent use count of `hash` (0...15).
    @inlinable
    func frequency(_ hash: UInt32) -> Int {
        let h = Self.spread(hash)
        let start = Int(h & 3) << 2
        var result = 15
        for row in 0..<4 {
            let shift = UInt64((start + row) << 2)
            let count = Int((table[wordIndex(h, row: row)] >> shift) & 15)
            result = Swift.min(result, count)
        }
        return result
    }

    /// Counts one use of `hash`; ages every counter after `sampleSize` counted uses.
    @inlinable
    mutating func increment(_ hash: UInt32) {
        let h = Self.spread(hash)
        let start = Int(h & 3) << 2
        var added = false
        for row in 0..<4 {
            let i = wordIndex(h, row: row)
            let shift = UInt64((start + row) << 2)
            if (table[i] >> shift) & 15 != 15 {
                table[i] &+= 1 << shift
                added = true
            }
        }
        if added {
            additions += 1
            if additions >= sampleSize { age() }
        }
    }

    /// Halves every counter. The count of additions drops by the same half, less the odd
    /// counters' lost halves (a quarter of them per row, as in Caffeine).
    @usableFromInline
    mutating func age() {
        var odd = 0
        for i in 0...mask {
            odd += (table[i] & 0x1111_1111_1111_1111).nonzeroBitCount
            table[i] = (table[i] >> 1) & 0x7777_7777_7777_7777
        }
        additions = (additions - (odd >> 2)) >> 1
    }
}
