#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// Delivering a `SharedCache`'s removals to its handler: one deliverer at a time, in order, never
// under the lock.

extension SharedCache {
    /// Delivers posted removals to the handler, in order, one deliverer at a time, unlocked. A
    /// thread that finds another delivering leaves its removals to it.
    @usableFromInline
    func deliverRemovals() {
        let me = _StripedLock.currentThread
        var batch = outbox.withLock { $0.takeBatch(by: me, starting: true) }
        while let (handler, removals) = batch {
            guard let handler else { return }  // the handler went: `removals` are released here, unlocked
            for removal in removals { handler(removal) }
            batch = outbox.withLock { $0.takeBatch(by: me, starting: false) }
        }
    }

    /// Waits until the handler has heard every removal posted so far, delivering them itself if
    /// no one is. Returns at once on the thread that is delivering (a handler calling `flush()`).
    @usableFromInline
    func awaitDeliveries() {
        let me = _StripedLock.currentThread
        let target = outbox.withLock { $0.posted }
        while true {
            let (done, idle) = outbox.withLock { ($0.delivered >= target || $0.deliverer == me, $0.deliverer == 0) }
            if done { return }
            if idle { deliverRemovals() } else { sched_yield() }
        }
    }
}

/// Removals waiting for the removal handler, and who is delivering them. `posted` and
/// `delivered` count removals, so `flush()` can wait for those posted before it.
@usableFromInline
struct _Outbox<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    @usableFromInline var handler: (@Sendable (CacheRemoval<Key, Value>) -> Void)?
    @usableFromInline var queue: [CacheRemoval<Key, Value>] = []
    /// The delivering thread (`_StripedLock.currentThread`), or 0.
    @usableFromInline var deliverer: UInt = 0
    @usableFromInline var posted: UInt64 = 0
    var delivered: UInt64 = 0
    /// Removals handed to the deliverer and not yet counted as delivered.
    var inFlight: UInt64 = 0

    /// Queues `removals` if anyone listens; returns whether the caller should deliver.
    @inlinable
    mutating func post(_ removals: [CacheRemoval<Key, Value>]) -> Bool {
        guard handler != nil else { return false }
        queue.append(contentsOf: removals)
        posted += UInt64(removals.count)
        return deliverer == 0
    }

    /// The next removals to deliver and the handler, or `nil` (then the caller stops delivering).
    /// `starting`: the caller is not yet the deliverer and becomes it only if no one else is;
    /// otherwise the previous batch has been delivered. A `nil` handler (it was removed while
    /// removals waited) hands the caller the undeliverable removals to release after unlocking,
    /// and ends the delivery.
    mutating func takeBatch(
        by thread: UInt,
        starting: Bool
    ) -> ((@Sendable (CacheRemoval<Key, Value>) -> Void)?, [CacheRemoval<Key, Value>])? {
        if starting {
            if deliverer != 0 { return nil }
        } else {
            delivered += inFlight
            inFlight = 0
        }
        guard let handler, !queue.isEmpty else {
            deliverer = 0
            delivered += UInt64(queue.count)  // nobody listens any more: nothing to wait for
            if queue.isEmpty { return nil }
            defer { queue = [] }
            return (nil, queue)  // released by the caller: a value's deinit may call back
        }
        deliverer = thread
        inFlight = UInt64(queue.count)
        defer { queue = [] }
        return (handler, queue)
    }
}
