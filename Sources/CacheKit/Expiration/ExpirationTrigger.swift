import Synchronization

#if canImport(Foundation)
import Foundation
#endif

/// A standing order to call a cache's `expireAll()` whenever something happens (ClearCache's
/// expiration trigger): a notification is posted, or an async sequence yields.
///
/// ```swift
/// let trigger = cache.expireAll(whenever: configReloads)  // any AsyncSequence
/// cache.expireAll(on: .didReceiveMemoryWarning)           // a NotificationCenter name
/// trigger.cancel()                                         // stop listening
/// ```
///
/// A trigger holds its cache weakly: it never keeps the cache alive. It lasts until ``cancel()``
/// is called or the cache is deinitialized, which cancels every trigger it has, so keeping the
/// returned value is needed only to cancel it earlier.
public final class ExpirationTrigger: Sendable {
    private let onCancel: Mutex<(@Sendable () -> Void)?>

    init(onCancel: @escaping @Sendable () -> Void) {
        self.onCancel = Mutex(onCancel)
    }

    /// Stops the trigger: no later event expires the cache. Calling it again does nothing.
    public func cancel() {
        let action = onCancel.withLock { action in
            defer { action = nil }
            return action
        }
        action?()
    }

    /// Whether ``cancel()`` has run (directly, or because the cache went away).
    public var isCancelled: Bool { onCancel.withLock { $0 == nil } }
}

/// A cache's triggers, cancelled with the cache.
final class _Triggers: Sendable {
    private let triggers = Mutex<[ExpirationTrigger]>([])

    func add(_ trigger: ExpirationTrigger) {
        triggers.withLock { list in
            list.removeAll { $0.isCancelled }
            list.append(trigger)
        }
    }

    func cancelAll() {
        for trigger in triggers.withLock({ $0 }) { trigger.cancel() }
    }
}

extension Cache {
    /// Calls ``expireAll()`` each time `events` yields an element, until the sequence ends or
    /// throws, the returned trigger is cancelled, or the cache is deinitialized.
    ///
    /// The sequence is iterated in a task of its own. Use it for "app went to the background",
    /// "configuration reloaded", "user logged out": any event after which nothing cached may be
    /// served.
    @discardableResult
    public func expireAll<Events: AsyncSequence & Sendable>(whenever events: Events) -> ExpirationTrigger {
        let cache = _WeakSweepable(self)
        let task = Task.detached {
            do {
                for try await _ in events {
                    guard let strong = cache.object else { return }
                    strong.expireAll()
                }
            } catch {
                // A failing sequence ends the trigger, like a finished one.
            }
        }
        let trigger = ExpirationTrigger { task.cancel() }
        _triggers.add(trigger)
        return trigger
    }

    #if canImport(Foundation)
    /// Calls ``expireAll()`` each time `center` posts a notification named `name` (from `object`,
    /// or from anyone when `object` is `nil`), on the posting thread, until the returned trigger
    /// is cancelled or the cache is deinitialized.
    @discardableResult
    public func expireAll(
        on name: Notification.Name,
        object: Any? = nil,
        center: NotificationCenter = .default
    ) -> ExpirationTrigger {
        let cache = _WeakSweepable(self)
        let token = center.addObserver(forName: name, object: object, queue: nil) { _ in
            cache.object?.expireAll()
        }
        let registration = _UncheckedSendable((center, token))
        let trigger = ExpirationTrigger {
            registration.value.0.removeObserver(registration.value.1)
        }
        _triggers.add(trigger)
        return trigger
    }
    #endif
}

#if canImport(Foundation)
/// A value passed across isolation where the type is not marked `Sendable` but is used safely:
/// `NotificationCenter` and its observer tokens are thread-safe.
struct _UncheckedSendable<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
#endif
