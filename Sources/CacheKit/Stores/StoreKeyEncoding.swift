import Foundation

/// How ``TieredCache`` turns its keys into a ``CacheStore``'s string keys: the same string for
/// the same key in every process and every run, so that a store outlives the process that
/// filled it. (`Hasher` values change from run to run, so they can never be store keys.)
///
/// - ``description``: the key's `description`, for strings, integers and other types whose
///   text names them exactly (`LosslessStringConvertible`). The default for such keys.
/// - ``json``: the key's JSON with sorted object keys, for other `Encodable` keys.
/// - ``uuid``: a `UUID`'s `uuidString`.
/// - ``custom(_:decode:)``: your own function. It must be injective (two keys, two strings) and
///   stable.
///
/// A store shared by several processes (an ``InvalidatingCacheStore``) names the entries other
/// processes changed by their store keys; ``decode`` turns them back into keys, so that a
/// ``TieredCache`` drops just those from memory. The built-in encodings decode; a custom one
/// without `decode` makes every such change drop the whole memory level.
public struct StoreKeyEncoding<Key>: Sendable {
    /// Turns a key into the store's key.
    public let encode: @Sendable (Key) throws -> String
    /// Turns a store key back into the key it encodes, or `nil` when it encodes none; `nil`
    /// when the encoding cannot be reversed.
    public let decode: (@Sendable (String) -> Key?)?

    /// An encoding made of your own functions: `encode` must give different keys different
    /// strings, and the same string for one key in every run; `decode`, if given, reverses it.
    public static func custom(
        _ encode: @escaping @Sendable (Key) throws -> String,
        decode: (@Sendable (String) -> Key?)? = nil
    ) -> StoreKeyEncoding {
        StoreKeyEncoding(encode: encode, decode: decode)
    }
}

extension StoreKeyEncoding where Key: LosslessStringConvertible & Sendable {
    /// The key's `description`: `"42"` for `42`, the string itself for a `String`.
    public static var description: StoreKeyEncoding {
        StoreKeyEncoding(encode: { $0.description }, decode: { Key($0) })
    }
}

extension StoreKeyEncoding where Key: Codable & Sendable {
    /// The key's JSON, object keys sorted (so equal keys give equal text).
    public static var json: StoreKeyEncoding {
        StoreKeyEncoding(
            encode: { key in
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                return String(decoding: try encoder.encode(key), as: UTF8.self)
            },
            decode: { text in try? JSONDecoder().decode(Key.self, from: Data(text.utf8)) }
        )
    }
}

extension StoreKeyEncoding where Key == UUID {
    /// The UUID's `uuidString`.
    public static var uuid: StoreKeyEncoding {
        StoreKeyEncoding(encode: { $0.uuidString }, decode: { UUID(uuidString: $0) })
    }
}
