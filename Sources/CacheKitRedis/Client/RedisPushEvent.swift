/// What a ``RedisPushConnection`` reports: its state, and the pushes the server sends it.
#if Redis
public enum RedisPushEvent: Sendable, Hashable {
    /// Connected, and every setup command has succeeded: pushes flow from here on (after each
    /// reconnection too).
    case armed
    /// The connection was lost (closed, reset, a ping unanswered within the command timeout): any push
    /// sent since the last `.armed` may be lost, so a near cache should drop what it holds.
    case disconnected(RedisError)
    /// A client-tracking invalidation: these keys changed; `nil` means every key (`FLUSHALL`,
    /// `FLUSHDB`).
    case invalidate(keys: [String]?)
    /// A pub/sub message on `channel` (for a pattern subscription, the channel it matched).
    case message(channel: String, payload: [UInt8])
    /// Any other push, its elements as sent.
    case push([RESPValue])
}
#endif
