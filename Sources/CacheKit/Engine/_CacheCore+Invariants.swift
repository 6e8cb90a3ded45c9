extension _CacheCore {
    /// Checks that counts, costs, the policy's lists, the free list and the index agree.
    /// Traps with a message on the first disagreement. O(n).
    @usableFromInline
    func _checkInvariants() {
        var seen = 0
        var costSum = 0
        forEachSlotInEvictionOrder { slot in
            seen += 1
            precondition(seen <= count, "eviction order visits more slots than count (\(count)): a cycle?")
            precondition(slot >= 0 && Int(slot) < slotsUsed, "slot \(slot) out of range 0..<\(slotsUsed)")
            precondition(self.slot(of: entries[Int(slot)].key) == slot, "index does not map slot \(slot)'s key to it")
            costSum += cost(at: slot)
            return true
        }
        precondition(seen == count, "eviction order holds \(seen) slots, count is \(count)")
        precondition(costSum == totalCost, "costs add up to \(costSum), totalCost is \(totalCost)")
        var free = 0
        var slot = freeHead
        while slot != -1 {
            free += 1
            precondition(free <= slotsUsed, "free list longer than the slots in use: a cycle?")
            slot = links.next(slot)
        }
        precondition(free + count == slotsUsed, "\(free) free + \(count) live != \(slotsUsed) slots used")
        if let generations {
            forEachSlotInEvictionOrder { slot in
                precondition(generations[Int(slot)] & 1 == 1, "live slot \(slot) has an even generation")
                return true
            }
            var slot = freeHead
            while slot != -1 {
                precondition(generations[Int(slot)] & 1 == 0, "free slot \(slot) has an odd generation")
                slot = links.next(slot)
            }
        }
        var occupied = 0
        for b in 0..<index.bucketCount where index.buckets[b] != 0 {
            occupied += 1
            let slot = index.slot(at: b)
            precondition(slot >= 0 && Int(slot) < slotsUsed, "bucket \(b) names slot \(slot), not in use")
            if storesHashes {
                let stored = UInt32(truncatingIfNeeded: storedHash(slot))
                precondition(
                    stored == UInt32(truncatingIfNeeded: hash(of: entries[Int(slot)].key)),
                    "slot \(slot)'s stored hash is stale"
                )
            }
            precondition(
                index.buckets[b] == index.word(slot: slot, hash: hash(of: entries[Int(slot)].key), bucket: b),
                "bucket \(b)'s tag or displacement disagrees with slot \(slot)'s hash"
            )
        }
        precondition(occupied == count, "index holds \(occupied) slots, count is \(count)")
        precondition(count <= index.maxLoad, "index over its load factor")
        precondition(slotsUsed <= slotCapacity, "slots used exceed capacity")
        policy._checkInvariants(count: count)
        if let expiry {
            var live = Set<Int32>()
            forEachSlotInEvictionOrder {
                live.insert($0)
                return true
            }
            expiry.pointee._checkInvariants { live.contains($0) }
            precondition(expiry.pointee.capacity >= slotsUsed, "expiry storage smaller than the slots in use")
        }
    }

    /// Runs `_checkInvariants()` when the package is built with `CACHEKIT_INTERNAL_CHECKS`.
    @inlinable
    @inline(__always)
    func _debugCheckInvariants() {
        #if CACHEKIT_INTERNAL_CHECKS
        _checkInvariants()
        #endif
    }
}
