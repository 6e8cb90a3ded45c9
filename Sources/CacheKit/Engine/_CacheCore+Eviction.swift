/// Eviction: room for a new key, trimming to a target, and the candidates a veto is asked
/// about, evicted only if they did not change meanwhile.
extension _CacheCore {
    /// Whether storing `key` (not in the cache) with `cost` would need evictions first.
    @inlinable
    func needsRoom(forNewKey key: Key, cost: Int) -> Bool {
        if totalCostLimit > 0 && cost > totalCostLimit { return false }  // rejected, not stored
        let full = (countLimit > 0 && count >= countLimit) || (totalCostLimit > 0 && totalCost > totalCostLimit - cost)
        return full && slot(of: key) < 0
    }

    /// What the cache must shrink to before `key` can be stored with `cost` (no bound if `key`
    /// is there already, or would be rejected for its cost).
    @inlinable
    func room(forNewKey key: Key, cost: Int) -> _TrimTarget {
        guard needsRoom(forNewKey: key, cost: cost) else { return _TrimTarget(maxCount: .max, maxCost: .max) }
        return _TrimTarget(
            maxCount: countLimit > 0 ? countLimit - 1 : .max,
            maxCost: totalCostLimit > 0 ? totalCostLimit - cost : .max
        )
    }

    /// Evicts in eviction order until `target` is met, skipping the slot `protecting`.
    /// Asks no one: for caches without an eviction veto.
    @inlinable
    mutating func trim(to target: _TrimTarget, protecting: Int32, removals: inout _Removals<Key, Value>) {
        while let reason = target.reasonToEvict(count: count, cost: totalCost) {
            var slot = policy.nextVictim(links: links)
            if slot != -1 && slot == protecting {
                // Not the entry just written: the first in eviction order that is not it.
                slot = policy.firstVictim(links: links)
                if slot == protecting { slot = policy.victim(after: slot, links: links) }
            }
            if slot == -1 { return }
            removals.append(removeSlot(slot, reason: reason))
        }
    }

    /// The entries that would have to go, in eviction order, to meet `target` if each were
    /// approved, then up to `extra` more (those next in line should some be vetoed): copies for
    /// the eviction veto to judge outside the lock. Skips `protecting` and every version in
    /// `vetoed`. Each candidate's `reason` is the one it would go for if all before it went.
    ///
    /// Requires generations (`trackGenerations()`).
    ///
    /// The first candidate is the one the policy itself picks (`nextVictim`), so that its
    /// algorithm runs as it does without a veto: SIEVE's hand sweeps, S3-FIFO promotes,
    /// W-TinyLFU holds its admission contest. The others follow in eviction order.
    ///
    /// - Complexity: O(*v* + *k*) for *v* vetoed entries walked past and *k* candidates.
    @inlinable
    mutating func candidates(
        for target: _TrimTarget,
        protecting: Int32,
        skipping vetoed: Set<_SlotVersion>,
        extra: Int = 0
    ) -> [_Candidate<Key, Value>] {
        guard generations != nil else { preconditionFailure("candidates(for:) needs trackGenerations()") }
        guard target.reasonToEvict(count: count, cost: totalCost) != nil else { return [] }
        let picked = policy.nextVictim(links: links)
        var result: [_Candidate<Key, Value>] = []
        var remainingCount = count
        var remainingCost = totalCost
        var extra = extra
        func consider(_ slot: Int32) -> Bool {
            let reason = target.reasonToEvict(count: remainingCount, cost: remainingCost)
            guard reason != nil || extra > 0 else { return false }
            let s = Int(slot)
            let identity = _SlotVersion(slot: slot, version: trackedVersion(of: slot))
            guard slot != protecting && !vetoed.contains(identity) else { return true }
            if reason == nil { extra -= 1 }
            result.append(
                _Candidate(
                    slot: slot,
                    version: identity.version,
                    key: entries[s].key,
                    value: entries[s].value,
                    cost: cost(at: slot),
                    reason: reason ?? target.defaultReason
                )
            )
            remainingCount -= 1
            remainingCost -= cost(at: slot)
            return true
        }
        if picked != -1 && !consider(picked) { return result }
        forEachSlotInEvictionOrder { slot in slot == picked || consider(slot) }
        return result
    }

    /// Evicts the approved candidates that are unchanged since they were proposed, while the cache
    /// is still above `target`, each with the reason the veto was given.
    @inlinable
    mutating func evict(
        _ approved: [_Candidate<Key, Value>],
        target: _TrimTarget,
        removals: inout _Removals<Key, Value>
    ) {
        guard generations != nil else { preconditionFailure("evict(_:) needs trackGenerations()") }
        for candidate in approved {
            guard target.reasonToEvict(count: count, cost: totalCost) != nil else { return }
            let s = Int(candidate.slot)
            guard s < slotsUsed, trackedVersion(of: candidate.slot) == candidate.version else { continue }
            removals.append(removeSlot(candidate.slot, reason: candidate.reason))
        }
    }

    /// Starts keeping per-slot generations (needed by `candidates` and `evict`).
    @inlinable
    mutating func trackGenerations() {
        guard generations == nil else { return }
        let g = _SlotMemory.allocate(UInt32.self, capacity: slotCapacity)
        g.initialize(repeating: 0, count: slotCapacity)
        generations = g
        forEachSlotInEvictionOrder { slot in
            g[Int(slot)] = 1  // live: odd (see `bumpGeneration`)
            return true
        }
    }
}
