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
