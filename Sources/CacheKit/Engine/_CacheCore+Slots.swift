/// Slot storage: taking and freeing slots, their versions and costs, and growing the slots and
/// the index.
extension _CacheCore {
    @inlinable
    mutating func removeSlot(_ slot: Int32, reason: RemovalReason) -> CacheRemoval<Key, Value> {
        let s = Int(slot)
        let (entries, hashes, stored, seed) = (self.entries, self.hashes, storesHashes, self.seed)
        index.remove(at: index.bucket(ofSlot: slot, hash: storedHash(slot))) {
            Self.hash(of: $0, entries: entries, hashes: stored ? hashes : nil, seed: seed)
        }
        policy.didRemove(slot, evicted: reason.isEviction, links: links)
        if let expiry { expiry.pointee.didRemove(slot) }
        if let costs { totalCost -= costs[s] }
        bumpGeneration(s)
        count -= 1
        stats.recordRemovals(reason)
        let entry = (entries + s).move()
        links.setNext(slot, freeHead)  // the link outlives the entry: the free list runs through it
        freeHead = slot
        return CacheRemoval(key: entry.key, value: entry.value, reason: reason)
    }

    /// The version of the entry in `slot`: its generation in this storage's epoch, unique to
    /// the entry as written (a write, a removal or `takeAll` changes it); `nil` without
    /// generations (`trackGenerations()`). What a decision taken outside the lock (a veto, a
    /// purge, a refresh) checks before acting on the slot.
    @inlinable
    func version(of slot: Int32) -> UInt64? {
        generations == nil ? nil : trackedVersion(of: slot)
    }

    /// `version(of:)` where generations are kept.
    @inlinable
    func trackedVersion(of slot: Int32) -> UInt64 {
        UInt64(epoch) << 32 | UInt64(generations.unsafelyUnwrapped[Int(slot)])
    }

    /// Marks a change of slot `s`. An insert and a removal add 1 and an update adds 2, so that a
    /// slot holding an entry has an odd generation and a free one an even generation: a buffered
    /// read of a live entry (odd) can then never match a free slot, even after `takeAll` starts a
    /// fresh core whose generations count from 0 again.
    @inlinable
    func bumpGeneration(_ s: Int, by step: UInt32 = 1) {
        if let generations { generations[s] &+= step }
    }

    @inlinable
    @inline(__always)
    mutating func setCost(_ cost: Int, at s: Int) {
        if costs == nil {
            guard cost != 0 else { return }
            let c = _SlotMemory.allocate(Int.self, capacity: slotCapacity)
            c.initialize(repeating: 0, count: slotCapacity)
            costs = c
        }
        let (total, overflow) = totalCost.addingReportingOverflow(cost - costs.unsafelyUnwrapped[s])
        precondition(!overflow, "the total cost would exceed Int.max (adding an entry of cost \(cost))")
        totalCost = total
        costs.unsafelyUnwrapped[s] = cost
    }

    @inlinable
    @inline(__always)
    mutating func takeFreeSlot() -> Int32 {
        if freeHead != -1 {
            let slot = freeHead
            freeHead = links.next(slot)
            return slot
        }
        if slotsUsed == slotCapacity { growSlots() }
        slotsUsed += 1
        return Int32(slotsUsed - 1)
    }

    /// Doubles slot storage (capped at `countLimit` while below it). Called only when every slot
    /// in use holds an entry, so moving `0..<slotsUsed` moves only initialized memory.
    @usableFromInline
    mutating func growSlots() {
        var newCapacity = Swift.max(8, slotCapacity * 2)
        if countLimit > 0 && slotCapacity < countLimit { newCapacity = Swift.min(newCapacity, countLimit) }
        precondition(newCapacity <= Int(Int32.max), "CacheKit holds at most \(Int32.max) entries")
        let newEntries = _SlotMemory.allocate(_Entry<Key, Value>.self, capacity: newCapacity)
        newEntries.moveInitialize(from: entries, count: slotsUsed)
        _SlotMemory.deallocate(entries)
        entries = newEntries
        if storesHashes { hashes = _SlotMemory.resized(hashes, used: slotsUsed, to: newCapacity).unsafelyUnwrapped }
        links = _SlotLinks(newEntries, hashes: hashes)
        costs = _SlotMemory.resized(costs, used: slotsUsed, to: newCapacity)
        generations = _SlotMemory.resized(generations, used: slotsUsed, to: newCapacity)
        policy.reserve(slotCapacity: newCapacity, used: slotsUsed)
        if let expiry { expiry.pointee.reserve(capacity: newCapacity, used: slotsUsed) }
        slotCapacity = newCapacity
        // Bucket words name slots in their low bits, enough for twice the buckets: slots double
        // only when all are in use, at most 3/4 of the buckets, so they never outgrow the words.
        precondition(UInt64(newCapacity) <= UInt64(index.slotMask), "slot storage outgrew the index's slot bits")
    }

    /// Makes room in an empty cache for `count` entries (no more than `countLimit`, when there is
    /// one) at once, for a load of a known number of entries: the index and slot storage grow
    /// now rather than doubling step by step, each step moving what the last one held. The index
    /// grows first, so that its slot bits cover the slots that follow.
    mutating func reserve(_ count: Int) {
        guard self.count == 0, slotsUsed == 0 else { return }
        let target = countLimit > 0 ? Swift.min(count, countLimit) : count
        while index.maxLoad <= target { growIndex() }
        while slotCapacity < target { growSlots() }
    }

    /// The hash of the key in `slot`, as the index takes it (only its low 32 bits matter; the
    /// stored hash is widened without a trap where `Int` has 32 bits): stored, or computed
    /// again from the key (see `storesHashes`).
    @inlinable
    @inline(__always)
    func storedHash(_ slot: Int32) -> Int {
        Self.hash(of: slot, entries: entries, hashes: storesHashes ? hashes : nil, seed: seed)
    }

    /// `storedHash` for callers that cannot borrow the core (a closure the index calls while
    /// the core is being mutated): from `hashes` when given, else from the key.
    @inlinable
    @inline(__always)
    static func hash(
        of slot: Int32,
        entries: UnsafeMutablePointer<_Entry<Key, Value>>,
        hashes: UnsafeMutablePointer<UInt32>?,
        seed: _KeyHash.Seed
    ) -> Int {
        if let hashes { return Int(truncatingIfNeeded: hashes[Int(slot)]) }
        return _KeyHash.hash(entries[Int(slot)].key, seed: seed)
    }

    /// Doubles the index and re-inserts every slot. Inlinable, so that it is specialized for
    /// the client's key type (where no hash is stored it hashes every key: through generic
    /// witnesses, growing a million `Int` entries cost a metadata lookup per key), but never
    /// inlined into the write path.
    @inlinable
    @inline(never)
    mutating func growIndex() {
        let old = index
        index = _HashIndex(bucketCount: old.bucketCount * 2, slotCapacity: slotCapacity)
        for b in 0..<old.bucketCount {
            let slot = old.slot(at: b)
            if slot >= 0 {
                let hash = storedHash(slot)
                index.insert(slot: slot, hash: hash, at: index.emptyBucket(hash: hash))
            }
        }
        old.deallocate()
    }
}
