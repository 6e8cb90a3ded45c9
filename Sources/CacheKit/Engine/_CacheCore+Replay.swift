/// The simulator's path through the engine: one request of a trace in one index probe.
extension _CacheCore {
    /// A request in a trace replay: a hit counts as a use (as `value(forKey:)`); a miss stores
    /// `value` for `key` with cost 0, making room inline (as `setValue`). One probe of the index
    /// instead of two. For caches without expiry.
    ///
    /// - Complexity: O(1) amortized, plus O(1) per entry evicted.
    @inlinable
    mutating func access(_ key: Key, insertingOnMiss value: Value, removals: inout _Removals<Key, Value>) -> Bool {
        let hash = self.hash(of: key)
        let found = index.find(key, hash: hash, entries: entries)
        stats.recordRequest(hit: found.slot >= 0)
        if found.slot >= 0 {
            policy.didAccess(found.slot, links: links)
            return true
        }
        _ = insertNew(
            value,
            forKey: key,
            hash: hash,
            bucket: found.bucket,
            cost: 0,
            evictInline: true,
            removals: &removals
        )
        return false
    }
}
