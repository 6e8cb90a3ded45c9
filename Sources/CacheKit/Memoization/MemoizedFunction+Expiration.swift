#if canImport(Foundation)
import Foundation
#endif

extension MemoizedFunction {
    /// Removes every result this function stored (reason ``RemovalReason/expired``; on a
    /// ``MemoStorage``, through ``MemoStorage/removeMemoizedValues(where:)``, with whatever
    /// reason the storage reports, ``RemovalReason/removed`` for a ``SharedCache``); calls
    /// running now return their results but store nothing. Other functions' results in a shared cache
    /// stay. (A function created with a cache of its own empties that cache: do not hand it to
    /// other functions; create a ``MemoCache`` to share instead.)
    ///
    /// - Complexity: O(1) plus the removal handler for a cache of its own; O(n) in the shared
    ///   cache's entries otherwise.
    public func expireAll() {
        epoch.add(1, ordering: .sequentiallyConsistent)
        let id = self.id
        switch backend {
        case .storage(let backing):
            backing.detachAll()
            backing.storage.removeMemoizedValues(where: { $0.function == id })
        case .cache(let cache, owned: true):
            cache.expireAll()
        case .cache(let cache, owned: false):
            cache._removeValues(where: { $0.function == id }, reason: .expired)
        }
    }

    /// Calls ``expireAll()`` each time `events` yields, until the sequence ends or throws, the
    /// returned trigger is cancelled, or this function is deinitialized (ClearCache's expiration
    /// trigger). See ``ExpirationTrigger``.
    @discardableResult
    public func expireAll<Events: AsyncSequence & Sendable>(whenever events: Events) -> ExpirationTrigger {
        triggers.expire(self, whenever: events) { $0.expireAll() }
    }

    #if canImport(Foundation)
    /// Calls ``expireAll()`` each time `center` posts `name` (from `object`, or anyone when `nil`),
    /// until the returned trigger is cancelled or this function is deinitialized.
    @discardableResult
    public func expireAll(
        on name: Notification.Name,
        object: Any? = nil,
        center: NotificationCenter = .default
    ) -> ExpirationTrigger {
        triggers.expire(self, on: name, object: object, center: center) { $0.expireAll() }
    }
    #endif
}
