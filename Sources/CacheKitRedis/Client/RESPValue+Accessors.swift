#if Redis
extension RESPValue {
    /// The bytes of a blob, simple or verbatim string; `nil` for any other value.
    public var bytes: [UInt8]? {
        switch self {
        case .blobString(let bytes): return bytes
        case .simpleString(let string), .verbatimString(let string): return Array(string.utf8)
        default: return nil
        }
    }

    /// The text of a blob, simple or verbatim string (decoded as UTF-8); `nil` for any other value.
    public var string: String? {
        switch self {
        case .blobString(let bytes): return String(decoding: bytes, as: UTF8.self)
        case .simpleString(let string), .verbatimString(let string), .bigNumber(let string): return string
        default: return nil
        }
    }

    /// The elements of an array, set or push; `nil` for any other value.
    public var elements: [RESPValue]? {
        switch self {
        case .array(let elements), .set(let elements), .push(let elements): return elements
        default: return nil
        }
    }
}
#endif
