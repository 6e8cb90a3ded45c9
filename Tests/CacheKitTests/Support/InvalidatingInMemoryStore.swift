import CacheKit
import Foundation
import Synchronization

/// An `InvalidatingCacheStore` over an `InMemoryStore`: the test says when invalidations arrive
/// and when they are suspended, as a shared server's connection would.
final class InvalidatingInMemoryStore: InvalidatingCacheStore {
    let base: InMemoryStore
    private let handlers = Mutex<(next: UInt64, all: [UInt64: @Sendable (CacheStoreInvalidation) -> Void])>(
        (0, [:])
    )
    private let resumed = Mutex(true)

    init(clock: WallClock, resumed: Bool = true) {
        base = InMemoryStore(clock: clock)
        self.resumed.withLock { $0 = resumed }
    }

    var handlerCount: Int { handlers.withLock { $0.all.count } }

    /// Delivers `event` to every handler, as the store's connection would.
    func deliver(_ event: CacheStoreInvalidation) {
        switch event {
        case .suspended: resumed.withLock { $0 = false }
        case .resumed: resumed.withLock { $0 = true }
        case .entries, .all: break
        }
        for handler in handlers.withLock({ Array($0.all.values) }) { handler(event) }
    }

    func addInvalidationHandler(
        _ handler: @escaping @Sendable (CacheStoreInvalidation) -> Void
    ) -> CacheStoreInvalidationToken {
        let id = handlers.withLock { state in
            state.next += 1
            state.all[state.next] = handler
            return state.next
        }
        handler(resumed.withLock { $0 } ? .resumed : .suspended)
        return CacheStoreInvalidationToken(rawValue: id)
    }

    func removeInvalidationHandler(_ token: CacheStoreInvalidationToken) {
        _ = handlers.withLock { $0.all.removeValue(forKey: token.rawValue) }
    }

    func entry(forKey key: String) async throws(CacheStoreError) -> StoredEntry? {
        try await base.entry(forKey: key)
    }

    func setEntry(_ value: Data, forKey key: String, expiresAt: Date?) async throws(CacheStoreError) {
        try await base.setEntry(value, forKey: key, expiresAt: expiresAt)
    }

    func removeEntry(forKey key: String) async throws(CacheStoreError) -> Bool {
        try await base.removeEntry(forKey: key)
    }

    func removeAll() async throws(CacheStoreError) { try await base.removeAll() }

    func usage() async throws(CacheStoreError) -> CacheStoreUsage { try await base.usage() }

    func close() async throws(CacheStoreError) {}
}
