#if canImport(Foundation)
import Foundation
#endif

/// A standing order to call a cache's `expireAll()` whenever something happens (ClearCache's
/// expiration trigger): a notification is posted, or an async sequence yields.
///
/// ```swift
/// let trigger = cache.expireAll(whenever: configReloads)  // any AsyncSequence
/// cache.expireAll(on: UIApplication.didReceiveMemoryWarningNotification)           // a NotificationCenter name
/// trigger.cancel()                                         // stop listening
/// ```
///
/// A trigger holds its cache weakly: it never keeps the cache alive. It lasts until ``cancel()``
/// is called, the cache is deinitialized (which cancels every trigger it has), or, for an async
/// sequence, the sequence ends or throws; so keeping the returned value is needed only to cancel
/// it earlier. ``isCancelled`` tells whether it still listens.
public final class ExpirationTrigger: Sendable {
    private let onCancel: _Locked<(@Sendable () -> Void)?>

    init(onCancel: @escaping @Sendable () -> Void) {
        self.onCancel = _Locked(onCancel)
    }

    /// Stops the trigger: no event that arrives after it returns expires the cache (one being
    /// handled as it is called may still finish). Calling it again does nothing.
    public func cancel() {
        let action = onCancel.withLock { action in
            defer { action = nil }
            return action
        }
        action?()
    }

    /// Whether the trigger has stopped: ``cancel()`` was called, the cache went away, or the
    /// async sequence it listened to ended.
    public var isCancelled: Bool { onCancel.withLock { $0 == nil } }
}

/// A cache's triggers, cancelled with the cache.
final class Triggers: Sendable {
    private let triggers = _Locked<[ExpirationTrigger]>([])

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

extension Triggers {
    /// A trigger that calls `expire` on `target` each time `events` yields, until the sequence
    /// ends or throws, the trigger is cancelled, or `target` is deinitialized. `target` is held
    /// weakly; the trigger is added to this list.
    func expire<Target: AnyObject & Sendable, Events: AsyncSequence & Sendable>(
        _ target: Target,
        whenever events: Events,
        by expire: @escaping @Sendable (Target) -> Void
    ) -> ExpirationTrigger {
        let weakTarget = WeakBox(target)
        // The trigger, once made, and whether the sequence has ended (it may end before that).
        let ending = _Locked<(trigger: ExpirationTrigger?, ended: Bool)>((nil, false))
        // Set by `cancel()` and checked before each expiry: cancelling the task alone does not
        // stop a sequence that ignores cancellation, or one that had an element buffered.
        let stopped = _Locked(false)
        let task = Task.detached {
            do {
                for try await _ in events {
                    guard !stopped.withLock({ $0 }), let strong = weakTarget.object else { break }
                    expire(strong)
                }
            } catch {
                // A failing sequence ends the trigger, like a finished one.
            }
            // Ended by itself: mark the trigger cancelled so the list can drop it.
            let trigger = ending.withLock { state -> ExpirationTrigger? in
                state.ended = true
                return state.trigger
            }
            trigger?.cancel()
        }
        let trigger = ExpirationTrigger {
            stopped.withLock { $0 = true }
            task.cancel()
        }
        let endedAlready = ending.withLock { state -> Bool in
            state.trigger = trigger
            return state.ended
        }
        if endedAlready { trigger.cancel() }
        add(trigger)
        return trigger
    }

    #if canImport(Foundation)
    /// A trigger that calls `expire` on `target` each time `center` posts `name` (from `object`,
    /// or anyone when `nil`), on the posting thread. `target` is held weakly; the trigger is
    /// added to this list.
    func expire<Target: AnyObject & Sendable>(
        _ target: Target,
        on name: Notification.Name,
        object: Any?,
        center: NotificationCenter,
        by expire: @escaping @Sendable (Target) -> Void
    ) -> ExpirationTrigger {
        let weakTarget = WeakBox(target)
        // Checked before each expiry, as for a sequence: a post already on its way to the
        // observer when `cancel()` removes it must not expire the cache.
        let stopped = _Locked(false)
        let token = center.addObserver(forName: name, object: object, queue: nil) { _ in
            if !stopped.withLock({ $0 }), let strong = weakTarget.object { expire(strong) }
        }
        let registration = UncheckedSendable((center, token))
        let trigger = ExpirationTrigger {
            stopped.withLock { $0 = true }
            registration.value.0.removeObserver(registration.value.1)
        }
        add(trigger)
        return trigger
    }
    #endif
}

// The triggers act on the cache from another task or the posting thread, and its removal
// handler then runs there with the keys and values: they need the cache to be `Sendable`.
extension Cache where Key: Sendable, Value: Sendable {
    /// Calls ``expireAll()`` each time `events` yields an element, until the sequence ends or
    /// throws, the returned trigger is cancelled, or the cache is deinitialized.
    ///
    /// The sequence is iterated in a task of its own. Use it for "app went to the background",
    /// "configuration reloaded", "user logged out": any event after which nothing cached may be
    /// served.
    @discardableResult
    public func expireAll<Events: AsyncSequence & Sendable>(whenever events: Events) -> ExpirationTrigger {
        _triggers.expire(self, whenever: events) { $0.expireAll() }
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
        _triggers.expire(self, on: name, object: object, center: center) { $0.expireAll() }
    }
    #endif
}

#if canImport(Foundation)
/// A value passed across isolation where the type is not marked `Sendable` but is used safely:
/// `NotificationCenter` and its observer tokens are thread-safe.
struct UncheckedSendable<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
#endif
