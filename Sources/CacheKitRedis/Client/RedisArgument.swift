/// One argument of a Redis command: the bytes sent as a blob string.
#if Redis
public struct RedisArgument: Sendable, Hashable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    /// The bytes sent.
    public var bytes: [UInt8]

    /// A string, sent as UTF-8.
    public init(_ string: String) {
        self.bytes = Array(string.utf8)
    }

    /// Bytes, sent as they are.
    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// An integer, sent in decimal.
    public init(_ int: Int) {
        self.bytes = Array(String(int).utf8)
    }

    /// A string literal, sent as UTF-8.
    public init(stringLiteral value: String) {
        self.init(value)
    }

    /// An integer literal, sent in decimal.
    public init(integerLiteral value: Int) {
        self.init(value)
    }
}
#endif
