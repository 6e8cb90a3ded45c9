/// Warming: reading ahead, for a batch of operations, the memory they are about to touch.
///
/// An operation on a large cache waits for a few cache misses in a row (the index bucket, then
/// the record it names, then that record's list neighbours), and a batch of operations applied
/// one by one waits for all of them in turn. The loads of one step for different operations do
/// not depend on each other, so issued together the processor overlaps their misses: a batch of
/// *n* then waits about once per step instead of *n* times. `SharedCache` warms before it applies
/// queued writes or buffered reads, work that other threads wait for (see `_drainHoldingLock`).
extension _CacheCore {
    /// Reads the index bucket where each hash's search starts, and what `warm(slots:)` reads for
    /// the slot there. `hashes` is overwritten with the slots found (`-1`: an empty bucket, or a
    /// slot that is not the key's, which only costs a load that was not needed).
    ///
    /// - Returns: A value made of what was read, for the caller to keep somewhere, so that the
    ///   loads are not optimized away.
    /// - Complexity: O(*n*) for *n* hashes.
    @inlinable
    func warm(hashes: UnsafeMutableBufferPointer<Int>) -> Int {
        for i in hashes.indices {
            hashes[i] = Int(index.slot(at: hashes[i] & index.mask))
        }
        return warm(slots: hashes)
    }

    /// Reads each slot's record (its links) and version, then the records of its list
    /// neighbours: what moving the slot in its list touches. Negative slots are skipped; `slots`
    /// is overwritten.
    ///
    /// - Complexity: O(*n*) for *n* slots.
    @inlinable
    func warm(slots: UnsafeMutableBufferPointer<Int>) -> Int {
        var sum = 0
        // Two passes, so that each pass's loads are independent: first the slots' own records
        // (whose links name the neighbours), then the neighbours'.
        for i in slots.indices {
            let slot = slots[i]
            guard slot >= 0 && slot < slotsUsed else {
                slots[i] = -1
                continue
            }
            let link = links.link(Int32(truncatingIfNeeded: slot)).pointee
            if let generations { sum &+= Int(generations[slot]) }
            slots[i] = Int(link.prev) << 32 | Int(UInt32(bitPattern: link.next))
            sum &+= slots[i]
        }
        for i in slots.indices where slots[i] != -1 {
            let prev = Int32(truncatingIfNeeded: slots[i] >> 32)
            let next = Int32(truncatingIfNeeded: slots[i])
            if prev >= 0 && Int(prev) < slotsUsed { sum &+= Int(links.link(prev).pointee.next) }
            if next >= 0 && Int(next) < slotsUsed { sum &+= Int(links.link(next).pointee.prev) }
        }
        return sum
    }
}
