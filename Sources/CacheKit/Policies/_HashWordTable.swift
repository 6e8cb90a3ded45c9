/// Helpers for the ghost tables: open-addressing tables of `UInt64` words that hold a 32-bit
/// hash in their high half (their home bucket is `hash & mask`), 0 for an empty bucket, with
/// linear probing.
@usableFromInline
enum _HashWordTable {
    /// Empties bucket `b`, shifting later members of its probe run back so that lookups stay
    /// correct without tombstones. `moved` hears each word that moved and its new bucket.
    @inlinable
    @inline(__always)
    static func deleteBucket(
        _ b: Int,
        in table: UnsafeMutablePointer<UInt64>,
        mask: Int,
        moved: (_ word: UInt64, _ bucket: Int) -> Void = { _, _ in }
    ) {
        var hole = b
        var next = (hole &+ 1) & mask
        while table[next] != 0 {
            let home = Int(truncatingIfNeeded: table[next] >> 32) & mask
            if (next &- home) & mask >= (next &- hole) & mask {
                table[hole] = table[next]
                moved(table[hole], hole)
                hole = next
            }
            next = (next &+ 1) & mask
        }
        table[hole] = 0
    }
}
