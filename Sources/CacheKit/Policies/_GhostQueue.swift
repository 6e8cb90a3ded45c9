/// A FIFO of recently evicted key hashes with O(1) membership: S3-FIFO's ghost queue.
///
/// An open-addressing table (linear probing) holds each live hash with its position in arrival
/// order; a ring holds, per position, the table bucket its hash is in. So the oldest end of the
/// queue is one ring read and one bucket read away, with no probe: the bucket still holds that
/// position's hash unless the hash left from the middle (its key came back) or was appended
/// again, and then the position is skipped. A removal shifts the rest of its probe run back (no
/// tombstones) and tells the ring where each shifted hash went.
///
/// When the ring fills it is rebuilt with only the live hashes (positions renumbered from 0),
/// doubled if more than half of it would be live, so it holds at most four slots per live hash
/// and every operation is O(1) amortized. The table has two buckets per ring slot (load at most
/// 1/2).
///
/// The design this replaced kept hashes in the ring with a dead flag each, and found the oldest
/// hash's bucket by probing for it; this one reads the bucket from the ring.
@usableFromInline
struct _GhostQueue {
    /// Per position modulo the ring's capacity: the bucket its hash was stored in.
    @usableFromInline var ring: UnsafeMutablePointer<UInt32>
    @usableFromInline var ringMask: Int
    /// Absolute positions since the last rebuild: the oldest slot still in the ring, and the next
    /// to fill.
    @usableFromInline var head = 0
    @usableFromInline var tail = 0
    /// Live hashes.
    @usableFromInline var count = 0
    /// `hash << 32 | 0x8000_0000 | position's low 31 bits`, or 0 for an empty bucket.
    @usableFromInline var table: UnsafeMutablePointer<UInt64>
    @usableFromInline var tableMask: Int

    @usableFromInline static var liveBit: UInt64 { 0x8000_0000 }
    /// The bits of a bucket that name its hash.
    @usableFromInline static var identity: UInt64 { 0xFFFF_FFFF_8000_0000 }

    @inlinable
    init() {
        ringMask = 15
        ring = .allocate(capacity: 16)
        tableMask = 31
        table = .allocate(capacity: 32)
        table.initialize(repeating: 0, count: 32)
    }

    @inlinable
    func deallocate() {
        ring.deallocate()
        table.deallocate()
    }

    @inlinable
    @inline(__always)
    static func entry(hash: UInt32, position: Int) -> UInt64 {
        UInt64(hash) << 32 | liveBit | UInt64(position & 0x7FFF_FFFF)
    }

    @inlinable
    @inline(__always)
    static func identity(of hash: UInt32) -> UInt64 { UInt64(hash) << 32 | liveBit }

    /// Removes `hash` if it is in the queue; returns whether it was.
    ///
    /// - Complexity: O(1) expected.
    @inlinable
    mutating func remove(_ hash: UInt32) -> Bool {
        guard count > 0 else { return false }
        let wanted = Self.identity(of: hash)
        var b = Int(hash) & tableMask
        while true {
            let entry = table[b]
            if entry == 0 { return false }
            if entry & Self.identity == wanted {
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
        if tail - head > ringMask { rebuild() }
        let wanted = Self.identity(of: hash)
        var b = Int(hash) & tableMask
        while true {
            let existing = table[b]
            if existing == 0 {
                count += 1
                break
            }
            if existing & Self.identity == wanted { break }  // the older copy's position goes dead
            b = (b &+ 1) & tableMask
        }
        table[b] = Self.entry(hash: hash, position: tail)
        ring[tail & ringMask] = UInt32(truncatingIfNeeded: b)
        tail += 1
        while count > limit { removeOldest() }
    }

    /// Whether the hash appended at `position` is still live, and if so its bucket.
    @inlinable
    @inline(__always)
    func liveBucket(at position: Int) -> Int? {
        let b = Int(ring[position & ringMask])
        let entry = table[b]
        let live = entry & Self.liveBit != 0 && entry & 0x7FFF_FFFF == UInt64(position & 0x7FFF_FFFF)
        return live ? b : nil
    }

    /// Drops the oldest live hash.
    @inlinable
    mutating func removeOldest() {
        while head < tail {
            let position = head
            head += 1
            guard let b = liveBucket(at: position) else { continue }
            deleteBucket(b)
            count -= 1
            return
        }
        // Unreachable while `count` agrees with the ring; trap rather than let `append` loop.
        preconditionFailure("ghost queue counts \(count) live hashes but its ring holds none")
    }

    /// Empties bucket `b`, telling the ring where each hash shifted back went.
    @inlinable
    @inline(__always)
    func deleteBucket(_ b: Int) {
        let ring = ring
        let ringMask = ringMask
        _HashWordTable.deleteBucket(b, in: table, mask: tableMask) { word, bucket in
            ring[Int(truncatingIfNeeded: word) & 0x7FFF_FFFF & ringMask] = UInt32(truncatingIfNeeded: bucket)
        }
    }

    @inlinable
    mutating func removeAll() {
        table.update(repeating: 0, count: tableMask + 1)
        head = 0
        tail = 0
        count = 0
    }

    /// The live hashes, oldest first. O(n); for rebuilding and tests.
    @usableFromInline
    func hashesOldestFirst() -> [UInt32] {
        var hashes: [UInt32] = []
        hashes.reserveCapacity(count)
        for position in head..<tail {
            if let b = liveBucket(at: position) { hashes.append(UInt32(truncatingIfNeeded: table[b] >> 32)) }
        }
        return hashes
    }

    /// Rewrites a full ring and the table with only the live hashes, positions from 0, doubling
    /// both when more than half of the ring would be live. Allocates only to double: the live
    /// hashes are gathered in the ring itself (an array for them cost a malloc per rebuild, once
    /// per ~95,000 operations of a steady S3-FIFO cache).
    @usableFromInline
    mutating func rebuild() {
        let capacity = ringMask + 1
        // Oldest first, into the ring's slots from the head's: a write never passes the read.
        var live = 0
        for position in head..<tail {
            guard let b = liveBucket(at: position) else { continue }
            ring[(head &+ live) & ringMask] = UInt32(truncatingIfNeeded: table[b] >> 32)
            live += 1
        }
        // Rotate the ring so that they start at slot 0.
        let shift = head & ringMask
        if shift != 0 {
            Self.reverse(ring, 0, shift)
            Self.reverse(ring, shift, capacity)
            Self.reverse(ring, 0, capacity)
        }
        if live * 2 > capacity {
            let grown = UnsafeMutablePointer<UInt32>.allocate(capacity: capacity * 2)
            grown.update(from: ring, count: live)
            ring.deallocate()
            ring = grown
            ringMask = capacity * 2 - 1
        }
        if (ringMask + 1) * 2 > tableMask + 1 {
            table.deallocate()
            table = .allocate(capacity: (ringMask + 1) * 2)
            tableMask = (ringMask + 1) * 2 - 1
        }
        table.initialize(repeating: 0, count: tableMask + 1)
        for position in 0..<live {
            let hash = ring[position]
            var b = Int(hash) & tableMask
            while table[b] != 0 { b = (b &+ 1) & tableMask }
            table[b] = Self.entry(hash: hash, position: position)
            ring[position] = UInt32(truncatingIfNeeded: b)
        }
        head = 0
        tail = live
        count = live
    }

    /// Reverses `buffer[start..<end]` in place.
    @usableFromInline
    static func reverse(_ buffer: UnsafeMutablePointer<UInt32>, _ start: Int, _ end: Int) {
        var i = start
        var j = end - 1
        while i < j {
            let held = buffer[i]
            buffer[i] = buffer[j]
            buffer[j] = held
            i += 1
            j -= 1
        }
    }

    /// Checks the ring, the table and the counts agree. O(n); for invariant checks.
    @usableFromInline
    func _checkInvariants() {
        var live = 0
        for position in head..<tail {
            guard let b = liveBucket(at: position) else { continue }
            live += 1
            // Reachable by a probe from its home bucket: no empty bucket on the way.
            var probe = Int(truncatingIfNeeded: table[b] >> 32) & tableMask
            while probe != b {
                precondition(table[probe] != 0, "ghost at \(position) unreachable from its home bucket")
                probe = (probe &+ 1) & tableMask
            }
        }
        precondition(live == count, "ghost count \(count), ring holds \(live) live")
        var occupied = 0
        var identities = Set<UInt64>()
        for b in 0...tableMask where table[b] != 0 {
            occupied += 1
            precondition(identities.insert(table[b] & Self.identity).inserted, "a hash is in the table twice")
        }
        precondition(occupied == count, "ghost table holds \(occupied), count is \(count)")
        precondition(count * 2 <= tableMask + 1, "ghost table over half full")
        precondition(tail - head <= ringMask + 1, "ghost ring over its capacity")
    }
}
