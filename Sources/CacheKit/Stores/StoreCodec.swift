import Foundation

/// How ``TieredCache`` turns values into the bytes a ``CacheStore`` keeps, and back.
///
/// ```swift
/// TieredCache<String, Article>(countLimit: 1_000, store: disk)                      // JSON
/// TieredCache<String, Data>(countLimit: 100, store: disk, codec: .data)             // bytes as they are
/// TieredCache<String, Article>(countLimit: 1_000, store: disk, codec: .propertyList)
/// ```
///
/// The JSON and property-list codecs check what they read the way ``CacheSerializer`` does
/// before a decoder sees it (nesting at most 256 levels; only the binary property-list format),
/// since a store's files can be changed by anyone.
public struct StoreCodec<Value>: Sendable {
    /// Turns a value into bytes.
    public let encode: @Sendable (Value) throws -> Data
    /// Turns bytes back into a value.
    public let decode: @Sendable (Data) throws -> Value

    /// A codec made of your own closures.
    public init(
        encode: @escaping @Sendable (Value) throws -> Data,
        decode: @escaping @Sendable (Data) throws -> Value
    ) {
        self.encode = encode
        self.decode = decode
    }
}

extension StoreCodec where Value: Codable & Sendable {
    /// JSON through `JSONEncoder` and `JSONDecoder`: the default for `Codable` values.
    public static var json: StoreCodec {
        StoreCodec(
            encode: { try JSONEncoder().encode($0) },
            decode: { bytes in
                try PayloadCheck.checkJSON(bytes)
                return try JSONDecoder().decode(Value.self, from: bytes)
            }
        )
    }

    /// A binary property list through `PropertyListEncoder` and `PropertyListDecoder`. A value
    /// that is not an array or dictionary at its top is wrapped in a one-element array, as
    /// property lists need a container at the root.
    public static var propertyList: StoreCodec {
        StoreCodec(
            encode: { value in
                let encoder = PropertyListEncoder()
                encoder.outputFormat = .binary
                return try encoder.encode([value])
            },
            decode: { bytes in
                try PayloadCheck.checkBinaryPropertyList(bytes)
                let values = try PropertyListDecoder().decode([Value].self, from: bytes)
                guard values.count == 1 else {
                    throw DecodingError.dataCorrupted(
                        .init(codingPath: [], debugDescription: "expected one value, found \(values.count)")
                    )
                }
                return values[0]
            }
        )
    }
}

extension StoreCodec where Value == Data {
    /// The bytes as they are.
    public static var data: StoreCodec { StoreCodec(encode: { $0 }, decode: { $0 }) }
}
