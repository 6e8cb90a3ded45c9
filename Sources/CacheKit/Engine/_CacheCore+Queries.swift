/// The engine's rules, asked without applying them, and the small steps a cache that defers
/// its writes (`SharedCache`) takes: so that it answers from its queue by the rules the engine
/// applies, and never reaches past the engine into the policy or the expiry clock.
extension _CacheCore {
    /// Whether the cost limit rejects a value of `cost` outright: `setValue` stores nothing
    /// then and removes the key's old value.
    ///
    /// - Complexity: O(1).
    @inlinable
    @inline(__always)
    func rejects(cost: Int) -> Bool { totalCostLimit > 0 && cost > totalCostLimit }

    /// The deadline a value written at `writtenAt` (-1: unknown, which never expires) with its
    /// own `timeToLive` (or the cache's) gets if it is stored now: what `_Expiry.didWrite`
    /// computes, changing nothing. Without expiry state, only a time to live of its own counts
    /// (the write creates the state).
    ///
    /// - Complexity: O(1).
    @inlinable
    func deadline(ofWriteAt writtenAt: Int64, timeToLive: Int64?) -> Int64 {
        guard writtenAt >= 0 else { return _Expiry.never }
        guard let expiry else { return timeToLive.map { _Expiry.adding($0, to: writtenAt) } ?? _Expiry.never }
        return expiry.pointee.firstDeadline(writtenAt: writtenAt, timeToLive: timeToLive)
    }

    /// Records a use of the entry in `slot` with the policy, as a read does: for reads replayed
    /// after they happened. Nonmutating: it changes only what the policy's box and the links
    /// point to, so that a replay running beside readers (`SharedCache`) reads the core as they
    /// do, rather than claiming it whole for a modification.
    ///
    /// - Complexity: O(1).
    @inlinable
    @inline(__always)
    func recordAccess(_ slot: Int32) { policy.didAccess(slot, links: links) }

    /// Raises the expiry clock's floor to `now`, as a write issued then does when it is applied
    /// (or rejected): later writes' deadlines count from no earlier than it.
    ///
    /// - Complexity: O(1).
    @inlinable
    mutating func raiseClockFloor(to now: Int64) {
        if let expiry { expiry.pointee.latest = Swift.max(expiry.pointee.latest, now) }
    }

    /// Applies a write issued at `issuedAt` and applied only now, at `appliedAt` (a deferred
    /// write: `SharedCache` queues its writes), and returns whether it stored `value` (`false`
    /// when the write was rejected, or expired while it waited).
    ///
    /// As `setValue`, with two rules for the wait. A value whose deadline passed while it
    /// waited replaces the key's old value and expires at once: storing it would evict a live
    /// entry to make room for a dead one. (A value too costly to store is rejected instead, as
    /// it would have been had it been applied in time, and is reported as neither stored nor
    /// expired.) And a rejected write still raises the clock floor to its issue time, as an
    /// applied one does: readers of the queue counted that time for the writes after it.
    ///
    /// - Complexity: as `setValue`.
    @inlinable
    mutating func applyDeferredSet(
        _ value: Value,
        forKey key: Key,
        hash: Int,
        cost: Int,
        timeToLive: Int64?,
        issuedAt: Int64,
        appliedAt: Int64,
        removals: inout _Removals<Key, Value>
    ) -> Bool {
        if timeToLive != nil { enableExpiry() }
        if appliedAt >= 0, !rejects(cost: cost), deadline(ofWriteAt: issuedAt, timeToLive: timeToLive) <= appliedAt {
            if let old = removeValue(forKey: key, reason: .replaced) { removals.append(old) }
            raiseClockFloor(to: issuedAt)
            stats.recordRemovals(.expired)
            removals.append(CacheRemoval(key: key, value: value, reason: .expired))
            return false
        }
        let outcome = setValue(
            value,
            forKey: key,
            hash: hash,
            cost: cost,
            now: issuedAt,
            timeToLive: timeToLive,
            evictInline: true,
            removals: &removals
        )
        guard case .rejected = outcome else { return true }
        raiseClockFloor(to: issuedAt)
        return false
    }
}
