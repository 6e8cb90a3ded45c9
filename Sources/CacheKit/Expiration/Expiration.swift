// Expiration/: deadlines per slot, the clock, sweeps and triggers. Decides when an entry has
// expired; never evicts for room, and runs no handler (removals go back to the cache).

/// When a cache's entries expire, and how often a ``Cache`` removes expired entries in the
/// background.
///
/// ```swift
/// // Sessions live 30 minutes after they are written, and 5 minutes after their last use.
/// let sessions = Cache<String, Session>(
///     countLimit: 10_000,
///     expiration: Expiration(afterWrite: .seconds(1_800), afterAccess: .seconds(300))
/// )
/// sessions.setValue(guest, forKey: "guest", expiresAfter: .seconds(60))  // this one: 1 minute
/// ```
///
/// - ``afterWrite`` (time to live; ClearCache's "older than"): an entry expires that long after its
///   value was last written.
/// - ``afterAccess`` (time to idle): an entry expires that long after it was last read or
///   written. A read through `value(forKey:)`, the subscript or a loader extends it;
///   `peekValue(forKey:)`, `contains(_:)` and enumeration do not.
/// - A duration passed to `setValue(_:forKey:cost:expiresAfter:)` replaces ``afterWrite`` for
///   that entry; ``afterAccess`` still applies to it.
///
/// With both, an entry expires at whichever moment comes first. From the moment it expires an
/// entry is never returned, counted or enumerated; it is removed (reason
/// ``RemovalReason/expired``) by the next operation on the cache, by ``Cache/removeExpired()``,
/// or by the background sweep every ``sweepInterval``. Finding the expired entries costs time in
/// proportion to their number, never a scan of the cache.
///
/// ``refreshAfterWrite`` does not expire anything: once an entry is that old, a read through
/// ``Cache/value(forKey:cost:expiresAfter:loader:)`` returns it and reloads it in the background.
public struct Expiration: Hashable, Sendable {
    /// How long an entry lives after its value is written; `nil` for no limit.
    public var afterWrite: Duration?
    /// How long an entry lives after it was last read or written; `nil` for no limit.
    public var afterAccess: Duration?
    /// How old an entry must be for a read through a loader to reload it in the background;
    /// `nil` for never. Only ``Cache/value(forKey:cost:expiresAfter:loader:)`` refreshes (it has the loader).
    public var refreshAfterWrite: Duration?
    /// How often a ``Cache`` removes expired entries by itself, measured on the cache's clock;
    /// `nil` (the default) for no background task. Expired entries are invisible either way;
    /// this only frees their memory in a cache that sees no calls. Ignored by ``SerialCache``,
    /// which never runs anything in the background.
    public var sweepInterval: Duration?

    /// Creates an expiration setting. Every duration must be positive.
    public init(
        afterWrite: Duration? = nil,
        afterAccess: Duration? = nil,
        refreshAfterWrite: Duration? = nil,
        sweepInterval: Duration? = nil
    ) {
        self.afterWrite = afterWrite
        self.afterAccess = afterAccess
        self.refreshAfterWrite = refreshAfterWrite
        self.sweepInterval = sweepInterval
    }

    /// Nothing expires, unless a write gives its entry an `expiresAfter`.
    public static let never = Expiration()

    /// Entries expire `duration` after they are written (time to live).
    public static func afterWrite(_ duration: Duration) -> Expiration { Expiration(afterWrite: duration) }

    /// Entries expire `duration` after they are last read or written (time to idle).
    public static func afterAccess(_ duration: Duration) -> Expiration { Expiration(afterAccess: duration) }

    /// Whether any entry expires or refreshes without a per-entry duration.
    var isActive: Bool { afterWrite != nil || afterAccess != nil || refreshAfterWrite != nil }

    /// Traps, naming the parameter, unless every duration set is positive.
    func validate() {
        for (name, duration) in [
            ("afterWrite", afterWrite), ("afterAccess", afterAccess),
            ("refreshAfterWrite", refreshAfterWrite), ("sweepInterval", sweepInterval),
        ] {
            if let duration {
                precondition(duration > .zero, "Expiration.\(name) must be positive (got \(duration))")
            }
        }
    }
}

extension Duration {
    /// The duration in whole nanoseconds, rounded down, saturating at `Int64.max` (which CacheKit
    /// reads as "never"); negative durations become 0. For clock readings and measured times.
    @usableFromInline
    var _nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return .max }
        let (sum, overflow2) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        return overflow2 ? .max : sum
    }

    /// A lifetime (time to live, time to idle, refresh, `expiresAfter`) in nanoseconds: as
    /// `_nanoseconds`, but a part of a nanosecond counts as a whole one, so that a positive
    /// duration never becomes 0 (a deadline of "now", expired as it is written).
    @usableFromInline
    var _lifetimeNanoseconds: Int64 {
        let whole = _nanoseconds
        guard whole < .max, components.seconds >= 0, components.attoseconds % 1_000_000_000 > 0 else { return whole }
        return whole + 1
    }
}
