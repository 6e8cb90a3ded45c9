/// A FIFO of recently evicted key hashes with O(1) membership: S3-FIFO's ghost queue.
///
/// The hashes sit in a ring in the order they arrived; an open-addressing table maps each live
/// hash to its position in the ring. A hash that leaves from the middle (its key came back) is
/// deleted from the table and only marked dead in the ring, where the oldest end skips it later.
/// Compared with `_GhostLists` (linked nodes, which ARC needs for its two lists), an append or a
/// removal touches no neighbours and allocates nothing: a ring store and one table probe.
///
/// When the ring fills it is compacted (dead hashes dropped, positions renumbered) and doubled if
/// more than half of it is live, so it holds at most four slots per live hash and every
/// operation is O(1) amortized. The table has two buckets per ring slot (load at most 1/2).
@usableFromInline
struct _GhostQueue {
    /// Hashes by position modulo the ring's capacity.
    @usableFromInline var ring: UnsafeMutablePointer<UInt32>
    /// Whether the hash at a ring slot left from the middle.
    @usableFromInline var dead: UnsafeMutablePointer<Bool>
    @usableFromInline var ringMask: Int
    /// Absolute positions: the oldest slot still in the ring, and the next to fill.
    @usableFromInline var head = 0
    @usableFromInline var tail = 0
    /// Live hashes.
    @usableFromInline var count = 0
    /// `hash << 32 | 0x8000_0000 | position's low 31 bits`, or 0 for an empty bucket.
    @usableFromInline var table: UnsafeMutablePointer<UInt64>
    @usableFromInline var tableMask: Int

    @inlinable
    init() {
        ringMask = 15
        ring = .allocate(capacity: 16)
        dead = .allocate(capacity: 16)
        tableMask = 31
        table = .allocate(capacity: 32)
        table.initialize(repeating: 0, count: 32)
    }

    @inlinable
    func deallocate() {
        ring.deallocate()
        dead.deallocate()
        table.deallocate()
    }

    @inlinable
    @inline(__always)
    static func entry(hash: UInt32, position: Int) -> UInt64 {
        UInt64(hash) << 32 | 0x8000_0000 | UInt64(position & 0x7FFF_FFFF)
    }

    /// Removes `hash` if it is in the queue; returns whether it was.
    ///
    /// - Complexity: O(1) expected.
    @inlinable
    mutating func remove(_ hash: UInt32) -> Bool {
        guard count > 0 else { return false }
        var b = Int(hash) & tableMask
        while true {
            let entry = table[b]
            if entry == 0 { return false }
            if UInt32(truncatingIfNeeded: entry >> 32) == hash {
                dead[Int(entry & 0x7FFF_FFFF) & ringMask] = true
                deleteBucket(b)
                count -= 1
                return true
            }
            b = (b &+ 1) & tableMask
        }
    }

    /// Appends `hash` as the newest (an older copy of it, if any, leaves), then drops the oldest
    /// until at most `limit` remain.
    ///
    /// - Complexity: O(1) amortized, plus O(1) per hash dropped.
    @inlinable
    mutating func append(_ hash: UInt32, limit: Int) {
        if tail - head > ringMask { compact() }
        let entry = Self.entry(hash: hash, position: tail)
        var b = Int(hash) & tableMask
        while true {
            let existing = table[b]
            if existing == 0 {
                table[b] = entry
                count += 1
                break
            }
            if UInt32(truncatingIfNeeded: existing >> 32) == hash {
                dead[Int(existing & 0x7FFF_FFFF) & ringMask] = true
                table[b] = entry
                break
            }
            b = (b &+ 1) & tableMask
        }
        ring[tail & ringMask] = hash
        dead[tail & ringMask] = false
        tail += 1
        while count > limit { removeOldest() }
    }

    /// Drops the oldest live hash.
    @inlinable
    mutating func removeOldest() {
        while head < tail {
            let position = head
            head += 1
            guard !dead[position & ringMask] else { continue }
            let target = Self.entry(hash: ring[position & ringMask], position: position)
            var b = Int(ring[position & ringMask]) & tableMask
            while table[b] != target { b = (b &+ 1) & tableMask }
            deleteBucket(b)
            count -= 1
            return
        }
    }

    /// Empties bucket `b` (see `_HashWordTable.deleteBucket`).
    @inlinable
    mutating func deleteBucket(_ b: Int) { _HashWordTable.deleteBucket(b, in: table, mask: tableMask) }

    @inlinable
    mutating func removeAll() {
        table.update(repeating: 0, count: tableMask + 1)
        head = 0
        tail = 0
        count = 0
    }

    /// Rewrites a full ring with only its live hashes, positions from 0, doubling it (and the
    /// table) when more than half would be live.
    @usableFromInline
    mutating func compact() {
        let capacity = ringMask + 1
        let newCapacity = count * 2 > capacity ? capacity * 2 : capacity
        let newRing = UnsafeMutablePointer<UInt32>.allocate(capacity: newCapacity)
        let newDead = UnsafeMutablePointer<Bool>.allocate(capacity: newCapacity)
        var kept = 0
        for position in head..<tail where !dead[position & ringMask] {
            newRing[kept] = ring[position & ringMask]
            newDead[kept] = false
            kept += 1
        }
        ring.deallocate()
        dead.deallocate()
        ring = newRing
        dead = newDead
        ringMask = newCapacity - 1
        head = 0
        tail = kept
        if newCapacity * 2 > tableMask + 1 {
            table.deallocate()
            table = .allocate(capacity: newCapacity * 2)
            tableMask = newCapacity * 2 - 1
        }
        table.initialize(repeating: 0, count: tableMask + 1)
        for position in 0..<kept {
            var b = Int(ring[position]) & tableMask
            while table[b] != 0 { b = (b &+ 1) & tableMask }
            table[b] = Self.entry(hash: ring[position], position: position)
        }
    }

    /// Checks the ring, the table and the count agree. O(n); for invariant checks.
    @usableFromInline
    func _checkInvariants() {
        var live = 0
        for position in head..<tail where !dead[position & ringMask] {
            live += 1
            let target = Self.entry(hash: ring[position & ringMask], position: position)
            var b = Int(ring[position & ringMask]) & tableMask
            var probes = 0
            while table[b] != target {
                precondition(table[b] != 0 && probes <= tableMask, "ghost \(position) missing from the table")
                b = (b &+ 1) & tableMask
                probes += 1
            }
        }
        precondition(live == count, "ghost count \(count), ring holds \(live) live")
        var occupied = 0
        for b in 0...tableMask where table[b] != 0 { occupied += 1 }
        precondition(occupied == count, "ghost table holds \(occupied), count is \(count)")
        precondition(tail - head <= ringMask + 1, "ghost ring over its capacity")
    }
}
