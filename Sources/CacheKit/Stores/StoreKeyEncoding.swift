import Foundation

/// How ``TieredCache`` turns its keys into a ``CacheStore``'s string keys: the same string for
/// the same key in every process and every run, so that a store outlives the process that
/// filled it. (`Hasher` values change from run to run, so they can never be store keys.)
///
/// - ``description``: the key's `description`, for strings, integers and other types whose
///   text names them exactly (`LosslessStringConvertible`). The default for such keys.
/// - ``json``: the key's JSON with sorted object keys, for other `Encodable` keys.
/// - ``uuid``: a `UUID`'s `uuidString`.
/// - ``custom(_:)``: your own function. It must be injective (two keys, two strings) and stable.
public struct StoreKeyEncoding<Key>: Sendable {
    /// Turns a key into the store's key.
    public let encode: @Sendable (Key) throws -> String

    /// An encoding made of your own function: it must give different keys different strings,
    /// and the same string for one key in every run.
    public static func custom(_ encode: @escaping @Sendable (Key) throws -> String) -> StoreKeyEncoding {
        StoreKeyEncoding(encode: encode)
    }
}

extension StoreKeyEncoding where Key: LosslessStringConvertible & Sendable {
    /// The key's `description`: `"42"` for `42`, the string itself for a `String`.
    public static var description: StoreKeyEncoding { StoreKeyEncoding(encode: { $0.description }) }
}

extension StoreKeyEncoding where Key: Encodable & Sendable {
    /// The key's JSON, object keys sorted (so equal keys give equal text).
    public static var json: StoreKeyEncoding {
        StoreKeyEncoding(encode: { key in
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return String(decoding: try encoder.encode(key), as: UTF8.self)
        })
    }
}

extension StoreKeyEncoding where Key == UUID {
    /// The UUID's `uuidString`.
    public static var uuid: StoreKeyEncoding { StoreKeyEncoding(encode: { $0.uuidString }) }
}
