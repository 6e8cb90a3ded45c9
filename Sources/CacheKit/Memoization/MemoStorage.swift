import Synchronization

/// Storage of your own for memoized results (ClearCache's `INNCache` protocol, its "storage
/// mechanism"): a disk or database store, a cache that other code also uses, or a test double.
///
/// ```swift
/// final class DiskResults: MemoStorage { ... }
/// let weather = MemoizedFunction<Weather>("weather(for:)", storage: DiskResults(directory: url))
/// ```
///
/// A ``MemoizedFunction`` created with `storage:` keeps its results here instead of in a
/// ``MemoCache``, and does the rest itself: it asks this storage for a result before running the
/// function and gives it the result after, keyed by ``MemoKey`` (whose ``MemoKey/function``
/// names the memoized function, so several functions can share one storage). It enforces its own
/// `expiresAfter` and `expiresWhen` rules when it reads a result, applies its insertion policy
/// and cost before it stores one, and runs concurrent `async` calls with equal keys once. The
/// storage decides what it keeps and for how long: it may drop any result at any time, which
/// costs only a run of the function on the next call.
///
/// ## Requirements
/// - Thread safety: the requirements are called from any thread, concurrently, and never while
///   CacheKit holds a lock, so an implementation may block or call back into CacheKit.
/// - Read-your-writes: a read that starts after ``storeMemoizedValue(_:forKey:cost:)`` returned
///   should see that value (or nothing, if the storage dropped it); otherwise equal calls may
///   run the function more than once.
/// - Values: ``MemoValue/value`` holds the function's result, of the function's result type. A
///   storage that writes results somewhere else (a file) casts it to the types it knows and
///   recreates the value with `MemoValue(_:computeTime:)`. Such a value does not carry the time
///   it was computed, so a function with `expiresAfter` or `expiresWhen` also remembers when it
///   stored each result (the latest 16,384). A result it has no record of (restored from an
///   earlier process, or stored by another function) ages from the first call that finds it,
///   until the function has dropped a record for room: from then on it cannot tell such a
///   result from one whose record it dropped, so it counts it as expired (a run more, never a
///   stale result) until ``MemoizedFunction/expireAll()``. Ages are measured on the function's
///   clock: every function on the default `ContinuousClock` reads the same one, as do those on
///   one ``ManualClock``, so with a storage that keeps `MemoValue`s as they are, a function
///   created again with the same identity ages the results an earlier one stored; a function
///   on another clock treats results stored on other clocks as restored ones.
/// - Removals: the function removes results with ``removeMemoizedValue(forKey:)`` and
///   ``removeMemoizedValues(where:)``, so a storage that reports removals reports them with its
///   own reason (a ``SharedCache``: ``RemovalReason/removed``, not ``RemovalReason/expired``).
/// - Errors: the requirements cannot throw. A storage that fails to read answers `nil` (a
///   miss), and one that fails to write must not keep the value it held before under that key
///   (the function now ages whatever is there from this store); the calls still return the
///   function's results.
///
/// ## Races
/// A ``MemoCache`` looks up, stores and checks for a concurrent ``MemoizedFunction/expireAll()``
/// in one critical section. A storage is user code, called with no lock held, so here those are
/// separate calls, and a race costs a run of the function, never a wrong result:
/// - Two synchronous calls that miss the same key at once both run the function and both store
///   (the last store wins; each returns its own result). `async` calls with equal keys share
///   one run.
/// - A result found expired, or of another result type (written by an older version of the
///   program, say), is removed by key, which may remove a newer result another call stored
///   meanwhile.
/// - A call that overlaps `expireAll()` stores nothing, or, if `expireAll()` comes between its
///   check and its store, removes its result again right after storing it (possibly a newer
///   one stored meanwhile).
/// - Reading a result never writes to the storage.
public protocol MemoStorage: AnyObject, Sendable {
    /// The result stored under `key`, or `nil`.
    func memoizedValue(forKey key: MemoKey) -> MemoValue?

    /// Stores `value` under `key`, replacing any value stored there. `cost` is what the function's
    /// `cost` closure gave for the result (`0` without one), for a storage with a cost limit.
    func storeMemoizedValue(_ value: MemoValue, forKey key: MemoKey, cost: Int)

    /// Removes the result stored under `key`, if any.
    func removeMemoizedValue(forKey key: MemoKey)

    /// Removes every result whose key `shouldRemove` selects: what
    /// ``MemoizedFunction/expireAll()`` calls, with a closure that selects its function's keys.
    func removeMemoizedValues(where shouldRemove: @escaping @Sendable (MemoKey) -> Bool)
}

extension SharedCache: MemoStorage where Key == MemoKey, Value == MemoValue {
    /// ``value(forKey:)``: the stored result, read on the calling thread.
    public func memoizedValue(forKey key: MemoKey) -> MemoValue? { value(forKey: key) }

    /// ``setValue(_:forKey:cost:expiresAfter:)``: queued, and seen by every read that starts after it.
    public func storeMemoizedValue(_ value: MemoValue, forKey key: MemoKey, cost: Int) {
        setValue(value, forKey: key, cost: cost)
    }

    /// ``removeValue(forKey:)``.
    public func removeMemoizedValue(forKey key: MemoKey) { removeValue(forKey: key) }

    /// Removes the selected keys in one write (reason ``RemovalReason/removed``).
    public func removeMemoizedValues(where shouldRemove: @escaping @Sendable (MemoKey) -> Bool) {
        removeValues(forKeys: allItems().keys.filter(shouldRemove))
    }
}
