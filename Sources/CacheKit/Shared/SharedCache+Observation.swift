#if canImport(Foundation)
import Foundation
#endif

extension SharedCache {
    /// How often changes are delivered (YMCache's `notificationInterval`); `nil` (the default)
    /// delivers none and keeps no log.
    ///
    /// While set, the cache logs each change, coalescing by key (see ``SharedCacheChanges``), and
    /// every interval of its clock delivers what was logged as one batch: to every ``changes``
    /// sequence and as a `NotificationCenter` notification named
    /// `Notification.Name.sharedCacheDidChange` from the cache, with ``SharedCacheUserInfoKey``
    /// keys. No batch is sent for an interval without a change. Setting it restarts the interval;
    /// changes logged so far are kept (`nil` drops them).
    ///
    /// - Precondition: the interval is positive.
    public var notificationInterval: Duration? {
        get { background.withLock { $0.notificationInterval } }
        set {
            if let newValue {
                precondition(newValue > .zero, "notificationInterval must be positive (got \(newValue))")
            }
            _exclusive { _, _ in
                if newValue == nil {
                    changeLog = nil
                } else if changeLog == nil {
                    changeLog = _ChangeLog()
                }
            }
            let task = newValue.map { repeating(every: $0) { $0.publishChanges() } }
            background.withLock { tasks in
                tasks.notification?.cancel()
                tasks.notification = task
                tasks.notificationInterval = newValue
            }
        }
    }

    /// Every batch of changes from now on, as an async sequence. Each call returns a new
    /// subscriber that receives every batch; it buffers without limit, so a slow subscriber loses
    /// nothing (each batch holds at most one entry per key, so the buffer grows with the keys
    /// changed, not with the writes). The sequence ends when the cache goes, after a last batch
    /// with the changes not yet delivered, writes still queued included.
    public var changes: AsyncStream<SharedCacheChanges<Key, Value>> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: SharedCacheChanges<Key, Value>.self,
            bufferingPolicy: .unbounded
        )
        let id = subscribers.withLock { $0.add(continuation) }
        continuation.onTermination = { [weak self] _ in
            self?.subscribers.withLock { $0.remove(id) }
        }
        return stream
    }

    /// Delivers the changes logged since the last batch, if any. Runs every
    /// ``notificationInterval``; call it to deliver early.
    ///
    /// Batches reach subscribers and observers in the order they were taken from the log, even
    /// when two threads publish at once or an observer (a notification's, or the removal
    /// handler) publishes from inside a delivery: a batch is queued in the critical section
    /// that takes it, and one thread at a time delivers the queue. A call that finds another
    /// delivery under way leaves its batch to that one and returns.
    public func publishChanges() {
        let queued = _exclusive { _, _ -> Bool in
            guard let batch = changeLog?.take(), !batch.updated.isEmpty || !batch.removed.isEmpty else { return false }
            subscribers.withLock { $0.queue.append(batch) }
            return true
        }
        if queued { deliverChanges() }
    }

    /// When the cache goes: applies the writes still queued and gives the `changes`
    /// subscribers every batch not yet delivered, the changes logged since the last interval
    /// last, so that a write made just before the cache goes reaches them before their
    /// sequences end. No notification is posted for these batches: its object would be the
    /// cache, which is going. Nothing happens without a ``notificationInterval``.
    func deliverFinalChanges() {
        let last = _exclusive { _, _ in changeLog?.take() }
        guard let last else { return }
        let (batches, continuations) = subscribers.withLock { state in
            defer { state.queue = [] }
            return (state.queue + [last], Array(state.continuations.values))
        }
        for batch in batches where !batch.updated.isEmpty || !batch.removed.isEmpty {
            for continuation in continuations { continuation.yield(batch) }
        }
    }

    /// Delivers queued batches, in order, unless another thread is delivering them.
    func deliverChanges() {
        var starting = true
        while true {
            let next = subscribers.withLock {
                state -> ([SharedCacheChanges<Key, Value>], [Subscribers<Key, Value>.Continuation])? in
                if starting && state.delivering { return nil }  // the deliverer takes ours too
                guard !state.queue.isEmpty else {
                    state.delivering = false
                    return nil
                }
                state.delivering = true
                defer { state.queue = [] }
                return (state.queue, Array(state.continuations.values))
            }
            starting = false
            guard let (batches, continuations) = next else { return }
            for batch in batches {
                for continuation in continuations { continuation.yield(batch) }
                #if canImport(Foundation)
                NotificationCenter.default.post(
                    name: .sharedCacheDidChange,
                    object: self,
                    userInfo: [
                        SharedCacheUserInfoKey.updatedItems: batch.updated,
                        SharedCacheUserInfoKey.removedKeys: batch.removed,
                    ]
                )
                #endif
            }
        }
    }
}

#if canImport(Foundation)
extension Notification.Name {
    /// Posted by a ``SharedCache`` with a ``SharedCache/notificationInterval`` once per interval
    /// with changes (YMCache's `kYFCacheDidChangeNotification`). The object is the cache; the
    /// user info holds the batch under ``SharedCacheUserInfoKey``.
    public static let sharedCacheDidChange = Notification.Name("CacheKitSharedCacheDidChange")
}
#endif

/// The keys of the user info of `Notification.Name.sharedCacheDidChange`.
public enum SharedCacheUserInfoKey {
    /// A `[Key: Value]` of the entries added or updated since the last notification
    /// (YMCache's `kYFCacheUpdatedItemsUserInfoKey`).
    public static let updatedItems = "CacheKitUpdatedItems"
    /// A `Set<Key>` of the keys removed since the last notification
    /// (YMCache's `kYFCacheRemovedItemsUserInfoKey`).
    public static let removedKeys = "CacheKitRemovedKeys"
}

/// The subscribers of a cache's ``SharedCache/changes``, and the batches taken from the change
/// log and not yet delivered.
struct Subscribers<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    typealias Continuation = AsyncStream<SharedCacheChanges<Key, Value>>.Continuation
    var continuations: [UInt64: Continuation] = [:]
    var nextID: UInt64 = 0
    /// Batches in the order they were taken (see `SharedCache.publishChanges()`).
    var queue: [SharedCacheChanges<Key, Value>] = []
    /// Whether a thread is delivering `queue`.
    var delivering = false

    mutating func add(_ continuation: AsyncStream<SharedCacheChanges<Key, Value>>.Continuation) -> UInt64 {
        nextID += 1
        continuations[nextID] = continuation
        return nextID
    }

    mutating func remove(_ id: UInt64) { continuations[id] = nil }

    func finishAll() {
        for continuation in continuations.values { continuation.finish() }
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
