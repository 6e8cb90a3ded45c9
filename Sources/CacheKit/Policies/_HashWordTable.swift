/// Helpers for the ghost tables: open-addressing tables of `UInt64` words that hold a 32-bit
/// hash in their high half (their home bucket is `hash & mask`), 0 for an empty bucket, with
/// linear probing.
@usableFromInline
enum _HashWordTable {
    /// Empties bucket `b`, shifting later members of its probe run back so that lookups stay
    /// correct without tombstones.
    @inlinable
    static func deleteBucket(_ b: Int, in table: UnsafeMutablePointer<UInt64>, mask: Int) {
        var hole = b
        var next = (hole &+ 1) & mask
        while table[next] != 0 {
            let home = Int(truncatingIfNeeded: table[next] >> 32) & mask
            if (next &- home) & mask >= (next &- hole) & mask {
                table[hole] = table[next]
                hole = next
            }
            next = (next &+ 1) & mask
        }
        table[hole] = 0
    }
}
