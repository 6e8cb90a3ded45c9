/// A reply of a Redis server, in the types of RESP3 (RESP2's replies map onto a subset).
///
/// Binary data is `[UInt8]`: blob strings hold any bytes. An error reply to a command is thrown as
/// ``RedisError/server(message:)`` and is never a value; `.error` appears only inside aggregate
/// replies, such as the results of `EXEC`.
#if Redis
public enum RESPValue: Sendable, Hashable {
    /// A simple string (`+OK`).
    case simpleString(String)
    /// A blob (bulk) string: any bytes.
    case blobString([UInt8])
    /// RESP3's null, RESP2's null bulk string and null array.
    case null
    /// A signed 64-bit integer.
    case integer(Int64)
    /// A double (RESP3).
    case double(Double)
    /// A boolean (RESP3).
    case boolean(Bool)
    /// A big number (RESP3), in its decimal text.
    case bigNumber(String)
    /// A verbatim string (RESP3): its text without the three-letter format and colon.
    case verbatimString(String)
    /// An array.
    case array([RESPValue])
    /// A map (RESP3); a later duplicate key replaces an earlier one.
    case map([RESPValue: RESPValue])
    /// A set (RESP3), in the order the server sent it.
    case set([RESPValue])
    /// An out-of-band push (RESP3): invalidations, pub/sub messages.
    case push([RESPValue])
    /// An error inside an aggregate reply, its text exactly as the server sent it.
    case error(String)
}
#endif
