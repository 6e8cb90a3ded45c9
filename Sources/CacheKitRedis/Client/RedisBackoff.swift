/// How long a connection waits before its next attempt after failed ones: a delay that starts at
/// `initial` and doubles with each failure up to `maximum`, with optional random jitter.
#if Redis
public struct RedisBackoff: Sendable, Hashable {
    /// The delay after the first failure.
    public var initial: Duration
    /// The longest delay.
    public var maximum: Duration
    /// Whether each delay is drawn at random between half of it and all of it, so that many clients
    /// that lost the same server do not all come back at the same instant.
    public var jitter: Bool

    /// A backoff starting at `initial` and doubling up to `maximum`.
    public init(initial: Duration = .milliseconds(50), maximum: Duration = .seconds(5), jitter: Bool = false) {
        self.initial = initial
        self.maximum = max(initial, maximum)
        self.jitter = jitter
    }

    /// The delay before attempt `attempt + 1` after `attempt` failures in a row (`attempt` ≥ 1).
    public func delay(afterFailures attempt: Int) -> Duration {
        var delay = initial
        var doublings = max(0, attempt - 1)
        while doublings > 0 && delay > .zero && delay < maximum {
            delay *= 2
            doublings -= 1
        }
        delay = min(delay, maximum)
        guard jitter else { return delay }
        return delay * Double.random(in: 0.5...1.0)
    }
}
#endif
