/// The changes to a ``SharedCache`` during one ``SharedCache/notificationInterval``, coalesced
/// (YMCache's change notification): what was added or updated, and what was removed.
public struct SharedCacheChanges<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// Keys written during the interval, with the value each holds at its end. A key removed
    /// and then written again during the interval is here only.
    public var updated: [Key: Value]
    /// Keys removed during the interval (by any removal: explicit, eviction, expiry, purge), and
    /// not written again after. A key added and then removed during the interval is here only.
    public var removed: Set<Key>

    /// Creates a batch.
    public init(updated: [Key: Value] = [:], removed: Set<Key> = []) {
        self.updated = updated
        self.removed = removed
    }
}
