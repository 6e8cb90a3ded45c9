import Foundation

/// How ``CachePersistence`` turns a cache's entries into bytes and back.
///
/// ```swift
/// CachePersistence(cache: cache, fileURL: url)                              // JSON
/// CachePersistence(cache: cache, fileURL: url, serializer: .propertyList)   // binary property list
/// CachePersistence(
///     cache: cache, fileURL: url,
///     serializer: .custom(identifier: "csv-v1", encode: toCSV, decode: fromCSV))
/// ```
///
/// The serializer's ``identifier`` is written in the file's header. Loading a file written by
/// another serializer fails with ``CachePersistenceError/serializerMismatch(path:found:expected:)``
/// instead of handing foreign bytes to the decoder.
public struct CacheSerializer<Key: Hashable, Value>: Sendable {
    /// Names the format in the file header: at most 255 bytes of UTF-8.
    public let identifier: String
    /// Turns entries, next victim first, into the payload.
    public let encode: @Sendable ([PersistedEntry<Key, Value>]) throws -> Data
    /// Turns a payload back into entries, next victim first.
    public let decode: @Sendable (Data) throws -> [PersistedEntry<Key, Value>]

    /// A serializer made of your own closures: YMCache's "arbitrary model transformations".
    ///
    /// - Parameters:
    ///   - identifier: Names the format in the file header (at most 255 bytes of UTF-8). Change it
    ///     when the format changes, so that old files are reported rather than misread.
    ///   - encode: Turns entries, next victim first, into bytes.
    ///   - decode: Turns those bytes back into entries in the same order.
    /// - Precondition: `identifier` is not empty and at most 255 bytes of UTF-8.
    public static func custom(
        identifier: String = "custom",
        encode: @escaping @Sendable ([PersistedEntry<Key, Value>]) throws -> Data,
        decode: @escaping @Sendable (Data) throws -> [PersistedEntry<Key, Value>]
    ) -> CacheSerializer {
        CacheSerializer(identifier: identifier, encode: encode, decode: decode)
    }

    init(
        identifier: String,
        encode: @escaping @Sendable ([PersistedEntry<Key, Value>]) throws -> Data,
        decode: @escaping @Sendable (Data) throws -> [PersistedEntry<Key, Value>]
    ) {
        precondition(
            !identifier.isEmpty && identifier.utf8.count <= 255,
            "a serializer identifier needs 1 to 255 bytes of UTF-8 (got \(identifier.utf8.count))"
        )
        self.identifier = identifier
        self.encode = encode
        self.decode = decode
    }
}

extension CacheSerializer where Key: Codable & Sendable, Value: Codable & Sendable {
    /// JSON through `JSONEncoder` and `JSONDecoder` (identifier `"json"`): an array of
    /// `{"key": …, "value": …, "cost": …}` objects, next victim first. The default.
    ///
    /// A payload whose arrays and objects nest more than 256 levels (the top-level array
    /// included) is refused before it is decoded, with
    /// ``CachePersistenceError/undecodable(path:field:reason:)``: a cache file can come from
    /// anywhere, and a recursive value type decodes one call deeper per level.
    public static var json: CacheSerializer {
        CacheSerializer(
            identifier: "json",
            encode: { try JSONEncoder().encode($0) },
            decode: { payload in
                try PayloadCheck.checkJSON(payload)
                return try JSONDecoder().decode([PersistedEntry<Key, Value>].self, from: payload)
            }
        )
    }

    /// A binary property list through `PropertyListEncoder` and `PropertyListDecoder`
    /// (identifier `"plist"`).
    ///
    /// Foundation's property-list coders write `nil` as the string `"$null"` and read that
    /// string back as `nil`: in a key or value of an optional type, the string `"$null"` comes
    /// back as `nil`. Use ``json`` (or a serializer of your own) for such data.
    ///
    /// It reads only the binary format it writes. An XML or OpenStep payload is refused before
    /// any parser sees it (Foundation's XML parser stops the process on some malformed input),
    /// and a binary payload's structure is checked first: offsets and references inside the
    /// payload, no cycles, and arrays, sets and dictionaries nested at most 256 levels. Each
    /// refusal is a ``CachePersistenceError/undecodable(path:field:reason:)``.
    public static var propertyList: CacheSerializer {
        CacheSerializer(
            identifier: "plist",
            encode: { entries in
                let encoder = PropertyListEncoder()
                encoder.outputFormat = .binary
                return try encoder.encode(entries)
            },
            decode: { payload in
                try PayloadCheck.checkBinaryPropertyList(payload)
                return try PropertyListDecoder().decode([PersistedEntry<Key, Value>].self, from: payload)
            }
        )
    }
}
