/// Bounds on the replies a connection accepts: a reply beyond any of them is a
/// ``RedisError/protocolViolation(_:)`` and closes the connection, so that a faulty or hostile peer
/// can neither crash the process nor make it allocate without bound.
public struct RedisReplyLimits: Sendable, Hashable {
    /// The longest blob string, blob error or verbatim string, in bytes (Redis's own is 512 MiB).
    public var maximumBulkLength: Int
    /// The most elements of one array, set, push or map (a map counts its keys and values).
    public var maximumAggregateCount: Int
    /// The deepest nesting of aggregates.
    public var maximumNestingDepth: Int
    /// The longest line of a simple string, simple error, number or length, in bytes.
    public var maximumLineLength: Int

    /// Limits with Redis's defaults: 512 MiB blobs, 2^24 elements, 64 levels, 64 KiB lines.
    public init(
        maximumBulkLength: Int = 512 * 1024 * 1024,
        maximumAggregateCount: Int = 1 << 24,
        maximumNestingDepth: Int = 64,
        maximumLineLength: Int = 64 * 1024
    ) {
        self.maximumBulkLength = max(0, maximumBulkLength)
        self.maximumAggregateCount = max(0, maximumAggregateCount)
        self.maximumNestingDepth = max(1, maximumNestingDepth)
        self.maximumLineLength = max(32, maximumLineLength)
    }
}
