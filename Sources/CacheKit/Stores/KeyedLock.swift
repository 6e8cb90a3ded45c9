import Synchronization

/// An async lock per key: tasks that lock the same key run one at a time, in the order they
/// asked; different keys never wait for each other. ``TieredCache`` holds a key's lock across
/// a write's two levels, so that the memory and the store see the writes of a key in one order.
///
/// Uncontended, locking is one dictionary insertion under a lock; a waiter suspends on a
/// continuation that `unlock` resumes (after releasing the lock).
final class KeyedLock<Key: Hashable & Sendable>: Sendable {
    /// Locked keys, each with the tasks waiting for it, first in line first.
    private let waiting = _Mutex<[Key: [CheckedContinuation<Void, Never>]]>([:])

    /// Waits until `key` is free and takes it.
    func lock(_ key: Key) async {
        let acquired = waiting.withLock { waiting in
            guard waiting[key] == nil else { return false }
            waiting[key] = []
            return true
        }
        if acquired { return }
        await withCheckedContinuation { continuation in
            let acquiredMeanwhile = waiting.withLock { waiting in
                guard waiting[key] != nil else {
                    waiting[key] = []
                    return true
                }
                waiting[key]!.append(continuation)
                return false
            }
            if acquiredMeanwhile { continuation.resume() }
        }
    }

    /// Frees `key`, handing it to the first waiter, if any.
    func unlock(_ key: Key) {
        let next = waiting.withLock { waiting -> CheckedContinuation<Void, Never>? in
            guard var line = waiting[key] else { preconditionFailure("unlocking a key that is not locked") }
            guard !line.isEmpty else {
                waiting[key] = nil
                return nil
            }
            let first = line.removeFirst()
            waiting[key] = line
            return first
        }
        next?.resume()
    }

    /// Runs `body` holding `key`'s lock.
    func withLock<R>(_ key: Key, _ body: () async throws -> R) async rethrows -> R {
        await lock(key)
        defer { unlock(key) }
        return try await body()
    }

    /// Whether any key is locked (for tests).
    var isIdle: Bool { waiting.withLock { $0.isEmpty } }
}
