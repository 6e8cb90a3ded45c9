/// A count-min sketch of 4-bit counters that estimates how often each key hash was seen recently
/// (TinyLFU, Einziger, Friedman & Manes, 2017).
///
/// Each key increments one counter in each of four rows; its estimate is the smallest of the four.
/// The four lie in one 64-byte block of the table (see `place`), so a use costs one cache miss.
/// Counters stop at 15. After `sampleSize` increments (2.5 per entry of capacity), every counter
/// is halved ("aging"), so the sketch forgets old popularity.
///
/// The aging period, 2.5 increments per entry of capacity, is shorter than Caffeine's 10: a sketch
/// that forgets slowly keeps old favourites in the main space while a working set moves on, at a
/// cost on traces whose keys return on long loops (<doc:ChoosingAPolicy> has the measurements).
/// The table holds 16 counters per 64-bit word and one word per entry of capacity (rounded up to
/// a power of two): 8 bytes per entry, bounded however many distinct keys pass through.
@usableFromInline
struct _FrequencySketch {
    @usableFromInline var table: UnsafeMutablePointer<UInt64>
    @usableFromInline var mask: Int
    @usableFromInline var sampleSize: Int
    /// Increments since the last aging.
    @usableFromInline var additions: Int

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

    /// Where `hash`'s four counters are: the first word of its 64-byte block (eight words),
    /// and eight bits per row (bit 0 picks one of the row's two words in the block, bits 1–4
    /// the counter in that word). All four counters share one cache line, so counting a use
    /// or estimating a frequency waits for one cache miss, not four (Caffeine's sketch since
    /// version 3 does the same).
    @inlinable
    @inline(__always)
    func place(_ hash: UInt32) -> (block: Int, rows: UInt64) {
        var x = UInt64(hash) &* 0x9E37_79B9_7F4A_7C15
        x ^= x >> 32
        x &*= 0xD6E8_FEB8_6659_FD93
        x ^= x >> 29
        return ((Int(truncatingIfNeeded: x >> 32) & (mask >> 3)) << 3, x)
    }

    /// The word and bit shift of counter `row` (0...3) of a hash placed by `place`.
    @inlinable
    @inline(__always)
    static func counter(_ row: Int, block: Int, rows: UInt64) -> (word: Int, shift: UInt64) {
        let bits = rows &>> UInt64(truncatingIfNeeded: row &<< 3)
        return (block &+ Int(truncatingIfNeeded: bits & 1) &+ (row &<< 1), ((bits &>> 1) & 15) &<< 2)
    }

    /// The estimated recent use count of `hash` (0...15).
    @inlinable
    func frequency(_ hash: UInt32) -> Int {
        let (block, rows) = place(hash)
        let a = Self.count(at: Self.counter(0, block: block, rows: rows), in: table)
        let b = Self.count(at: Self.counter(1, block: block, rows: rows), in: table)
        let c = Self.count(at: Self.counter(2, block: block, rows: rows), in: table)
        let d = Self.count(at: Self.counter(3, block: block, rows: rows), in: table)
        return Int(Swift.min(Swift.min(a, b), Swift.min(c, d)))
    }

    /// The counter at `place` (a word and a bit shift).
    @inlinable
    @inline(__always)
    static func count(at place: (word: Int, shift: UInt64), in table: UnsafeMutablePointer<UInt64>) -> UInt64 {
        (table[place.word] &>> place.shift) & 15
    }

    /// Raises the counter at `place` unless it is full (15); returns the amount added to its
    /// word, 0 when full. Branch-free: the four rows of a key lie in four different words.
    @inlinable
    @inline(__always)
    static func raise(at place: (word: Int, shift: UInt64), in table: UnsafeMutablePointer<UInt64>) -> UInt64 {
        let word = table[place.word]
        let notFull: UInt64 = (word &>> place.shift) & 15 != 15 ? 1 : 0
        let amount = notFull &<< place.shift
        table[place.word] = word &+ amount
        return amount
    }

    /// Counts one use of `hash`; ages every counter after `sampleSize` counted uses.
    @inlinable
    mutating func increment(_ hash: UInt32) {
        let (block, rows) = place(hash)
        var added = Self.raise(at: Self.counter(0, block: block, rows: rows), in: table)
        added |= Self.raise(at: Self.counter(1, block: block, rows: rows), in: table)
        added |= Self.raise(at: Self.counter(2, block: block, rows: rows), in: table)
        added |= Self.raise(at: Self.counter(3, block: block, rows: rows), in: table)
        if added != 0 {
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
