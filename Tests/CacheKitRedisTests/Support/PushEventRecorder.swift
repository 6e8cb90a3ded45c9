#if Redis
import CacheKit
import CacheKitRedis
import Synchronization

/// Reads a push connection's events into a list that tests wait on with a deadline.
final class PushEventRecorder: Sendable {
    private final class Storage: Sendable {
        let events = Mutex<[RedisPushEvent]>([])
    }

    private let storage = Storage()
    private let reader: Task<Void, Never>

    init(_ connection: RedisPushConnection) {
        let storage = storage
        reader = Task {
            for await event in connection.events {
                storage.events.withLock { $0.append(event) }
            }
        }
    }

    deinit {
        reader.cancel()
    }

    /// Every event so far.
    var all: [RedisPushEvent] { storage.events.withLock { $0 } }

    /// Waits until an event after the first `after` satisfies `predicate`, for at most `timeout`
    /// (generous: a full parallel test run can keep the task from running for many seconds);
    /// returns its index, or `nil` when none came in time.
    @discardableResult
    func waitFor(
        after: Int = 0,
        timeout: Duration = .seconds(60),
        _ predicate: (RedisPushEvent) -> Bool
    ) async -> Int? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            // The predicate runs outside the lock: it may read `all` itself.
            let events = storage.events.withLock { $0 }
            let found = events.indices.dropFirst(after).first { predicate(events[$0]) }
            if let found { return found }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return nil
    }

    /// The number of events so far.
    var count: Int { storage.events.withLock { $0.count } }
}

extension RedisPushEvent {
    var isArmed: Bool { self == .armed }

    var isDisconnected: Bool {
        if case .disconnected = self { return true }
        return false
    }
}
#endif
