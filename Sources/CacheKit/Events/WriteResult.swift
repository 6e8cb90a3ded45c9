/// What a write did: stored the value (new or replacing), or rejected it, and whether the cache is
/// still above a limit because an eviction veto kept entries.
public struct WriteResult: Hashable, Sendable {
    /// The fate of the value written.
    public enum Outcome: Hashable, Sendable {
        /// The key was new; the value is stored.
        case inserted
        /// The key was present; its value was replaced.
        case replaced
        /// The value was not stored.
        case rejected(Rejection)
    }

    /// Why a value was not stored.
    public enum Rejection: Hashable, Sendable {
        /// The entry's cost alone exceeds `totalCostLimit`. Any previous value for the key was
        /// removed (reason ``RemovalReason/replaced``): a cache never answers with a value older
        /// than the last write.
        case costExceedsLimit
        /// The cache's insertion policy refused the value. Any previous value for the key was
        /// removed (reason ``RemovalReason/replaced``), as for ``costExceedsLimit``.
        case insertionPolicy
    }

    /// The fate of the value written.
    public var outcome: Outcome
    /// `true` when, after this write, the cache holds more entries or cost than its limits
    /// because the eviction veto refused every remaining candidate.
    public var isOverLimit: Bool

    /// Creates a result.
    @inlinable
    public init(outcome: Outcome, isOverLimit: Bool = false) {
        self.outcome = outcome
        self.isOverLimit = isOverLimit
    }

    /// Whether the value is now in the cache.
    @inlinable
    public var isStored: Bool {
        if case .rejected = outcome { return false }
        return true
    }
}
