/// The version of the Redis serialization protocol a connection speaks.
#if Redis
public enum RedisProtocolVersion: Sendable, Hashable {
    /// `HELLO 3`, falling back to RESP2 when the server does not know `HELLO` or refuses version 3.
    case automatic
    /// RESP2 only: no `HELLO`; `AUTH` and `SELECT` are sent as commands of their own.
    case resp2
    /// RESP3 only: a server that refuses `HELLO 3` fails the connection.
    case resp3
}
#endif
