/// Bounds on the replies a connection accepts: a reply beyond any of them is a
/// ``RedisError/protocolViolation(_:)`` and closes the connection, so that a faulty or hostile peer
/// can neither crash the process nor make it allocate without bound.
#if Redis
public struct RedisReplyLimits: Sendable, Hashable {
    /// The longest blob string, blob error or verbatim string, in bytes (Redis's own is 512 MiB).
    public var maximumBulkLength: Int
    /// The most elements of one array, set, push or map (a map counts its keys and values).
    public var maximumAggregateCount: Int
    /// The deepest nesting of aggregates.
    public var maximumNestingDepth: Int
    /// The longest line of a simple string, simple error, number or length, in bytes.
    public var maximumLineLength: Int

    /// The most bytes one reply may take on the wire, all its levels together.
    public var maximumReplyBytes: Int
    /// The most values one reply may hold, at every level together (an aggregate counts as one,
    /// and so does each value inside it).
    public var maximumReplyElements: Int

    /// Limits with Redis's defaults for each part (a value below a bound's least, or above 2^60,
    /// is taken as that bound) (512 MiB blobs, 2^24 elements in one aggregate,
    /// 64 levels, 64 KiB lines), and for a whole reply 512 MiB and 2^22 values. While a reply is
    /// read, the process holds at most about twice its bytes (what arrived, and the values made
    /// of it) plus about 110 bytes per value, whatever mix of small and large elements it sends:
    /// with these defaults, at most about 1.5 GiB for the largest reply allowed, and about 500 MiB
    /// for 2^22 values of a few bytes each. Lower both whole-reply limits to bound it further.
    public init(
        maximumBulkLength: Int = 512 * 1024 * 1024,
        maximumAggregateCount: Int = 1 << 24,
        maximumNestingDepth: Int = 64,
        maximumLineLength: Int = 64 * 1024,
        maximumReplyBytes: Int = 512 * 1024 * 1024,
        maximumReplyElements: Int = 1 << 22
    ) {
        // Each at most 2^60, so that sums of lengths within the limits cannot overflow.
        let ceiling = 1 << 60
        self.maximumBulkLength = min(max(0, maximumBulkLength), ceiling)
        self.maximumAggregateCount = min(max(0, maximumAggregateCount), ceiling)
        self.maximumNestingDepth = min(max(1, maximumNestingDepth), ceiling)
        self.maximumLineLength = min(max(32, maximumLineLength), ceiling)
        self.maximumReplyBytes = min(max(64, maximumReplyBytes), ceiling)
        self.maximumReplyElements = min(max(1, maximumReplyElements), ceiling)
    }
}
#endif
