#if Redis
import CacheKit
import Synchronization

extension RedisStore {
    /// Registers `handler` for the store's invalidations (see
    /// ``CacheKit/InvalidatingCacheStore``). Its first call gives the store's state: `.resumed`
    /// once the invalidation connection is armed, else `.suspended`. Handlers are called one at
    /// a time, in the order they were added.
    public func addInvalidationHandler(
        _ handler: @escaping @Sendable (CacheStoreInvalidation) -> Void
    ) -> CacheStoreInvalidationToken {
        listeners.add(handler)
    }

    /// Stops calling the handler registered with `token`.
    public func removeInvalidationHandler(_ token: CacheStoreInvalidationToken) {
        listeners.remove(token)
    }

    /// Whether invalidations arrive: the invalidation connection is armed (always `true` with
    /// ``Invalidation/none``).
    public var receivesInvalidations: Bool { listeners.isResumed }
}

/// The handlers of a ``RedisStore``'s invalidations, and the one task that calls them.
///
/// Everything a handler hears goes through one queue that a single task drains in order: the
/// connection's events, and each new handler's first call with the current state. So a handler
/// hears its first state before any event, and every state change after it, in order; and no
/// handler is ever called with a lock held.
final class InvalidationListeners: Sendable {
    enum Delivery: Sendable {
        case greet(UInt64)
        case event(RedisPushEvent)
    }

    struct Handler {
        let call: @Sendable (CacheStoreInvalidation) -> Void
        var greeted = false
    }

    struct State {
        var nextID: UInt64 = 0
        var handlers: [UInt64: Handler] = [:]
        var isResumed: Bool
        var tasks: [Task<Void, Never>] = []
    }

    let state: _Mutex<State>
    let queue: AsyncStream<Delivery>
    let continuation: AsyncStream<Delivery>.Continuation

    init(alwaysResumed: Bool) {
        state = _Mutex(State(isResumed: alwaysResumed))
        (queue, continuation) = AsyncStream.makeStream(of: Delivery.self)
    }

    var isResumed: Bool { state.withLock { $0.isResumed } }

    func add(_ handler: @escaping @Sendable (CacheStoreInvalidation) -> Void) -> CacheStoreInvalidationToken {
        let id = state.withLock { state in
            state.nextID += 1
            state.handlers[state.nextID] = Handler(call: handler)
            return state.nextID
        }
        continuation.yield(.greet(id))
        return CacheStoreInvalidationToken(rawValue: id)
    }

    func remove(_ token: CacheStoreInvalidationToken) {
        _ = state.withLock { $0.handlers.removeValue(forKey: token.rawValue) }
    }

    /// Hands a connection event to the draining task.
    func enqueue(_ event: RedisPushEvent) { continuation.yield(.event(event)) }

    /// Starts draining the queue.
    func start(keyPrefix: String, channel: String?) {
        let queue = queue
        let task = Task { [self] in
            for await delivery in queue {
                deliver(delivery, keyPrefix: keyPrefix, channel: channel)
            }
        }
        state.withLock { $0.tasks = [task] }
    }

    func stop() {
        let tasks = state.withLock { state in
            defer { state.tasks = [] }
            return state.tasks
        }
        for task in tasks { task.cancel() }
        continuation.finish()
    }

    /// Handles one delivery on the draining task.
    private func deliver(_ delivery: Delivery, keyPrefix: String, channel: String?) {
        switch delivery {
        case .greet(let id):
            let greeting = state.withLock { state -> (Handler, Bool)? in
                guard let handler = state.handlers[id] else { return nil }
                state.handlers[id]?.greeted = true
                return (handler, state.isResumed)
            }
            if let (handler, isResumed) = greeting { handler.call(isResumed ? .resumed : .suspended) }
        case .event(let event):
            guard let invalidation = translate(event, keyPrefix: keyPrefix, channel: channel) else { return }
            let handlers = state.withLock { state -> [Handler] in
                switch invalidation {
                case .resumed:
                    state.isResumed = true
                case .suspended:
                    // Only a change of state is news: a failed reconnection repeats the loss.
                    guard state.isResumed else { return [] }
                    state.isResumed = false
                case .entries, .all:
                    break
                }
                return state.handlers.sorted { $0.key < $1.key }.map(\.value).filter(\.greeted)
            }
            for handler in handlers { handler.call(invalidation) }
        }
    }

    /// What a connection event means for the store's readers; `nil` for nothing.
    private func translate(_ event: RedisPushEvent, keyPrefix: String, channel: String?) -> CacheStoreInvalidation? {
        switch event {
        case .armed:
            return .resumed
        case .disconnected:
            return .suspended
        case .invalidate(let keys?):
            let storeKeys = keys.compactMap { key in
                key.hasPrefix(keyPrefix) ? String(key.dropFirst(keyPrefix.count)) : nil
            }
            return storeKeys.isEmpty ? nil : .entries(storeKeys)
        case .invalidate(nil):
            return .all
        case .message(let name, let payload):
            guard name == channel, let kind = payload.first else { return nil }
            switch kind {
            case UInt8(ascii: "k"): return .entries([String(decoding: payload.dropFirst(), as: UTF8.self)])
            case UInt8(ascii: "*"): return .all
            default: return nil
            }
        case .push:
            return nil
        }
    }
}
#endif
