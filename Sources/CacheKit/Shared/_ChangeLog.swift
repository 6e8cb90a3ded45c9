/// The changes to a ``SharedCache`` since the last batch, coalesced: the last thing that happened
/// to each key wins, so a key added then removed is only removed, and a key removed then added
/// again is only added.
@usableFromInline
struct _ChangeLog<Key: Hashable & Sendable, Value: Sendable> {
    @usableFromInline var updated: [Key: Value] = [:]
    @usableFromInline var removed: Set<Key> = []

    init() {}

    var isEmpty: Bool { updated.isEmpty && removed.isEmpty }

    @inlinable
    mutating func didSet(_ key: Key, _ value: Value) {
        removed.remove(key)
        updated[key] = value
    }

    @inlinable
    mutating func didRemove(_ key: Key) {
        updated[key] = nil
        removed.insert(key)
    }

    /// The batch so far, leaving the log empty.
    mutating func take() -> SharedCacheChanges<Key, Value> {
        defer { self = _ChangeLog() }
        return SharedCacheChanges(updated: updated, removed: removed)
    }
}

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
