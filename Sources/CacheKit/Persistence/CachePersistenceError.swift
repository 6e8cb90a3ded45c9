import Foundation

/// Why ``CachePersistence`` could not load or save a cache file.
///
/// Every case names the file, and its ``description`` says what went wrong and where. A missing
/// file is not an error: it loads as an empty cache. A load that fails leaves the file untouched,
/// and ``CachePersistence`` then refuses to save over it (``saveRefused(path:because:)``) until
/// you call ``CachePersistence/allowOverwritingUnreadableFile()``; so it does over a file it
/// never loaded.
public enum CachePersistenceError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file does not start with CacheKit's magic bytes: it is not a cache file.
    case foreignFile(path: String)
    /// The file was written by a newer format version than this CacheKit reads.
    case newerVersion(path: String, found: UInt16, supported: UInt16)
    /// The file ends before the header or the payload it announces does.
    case truncated(path: String, expectedBytes: Int, actualBytes: Int)
    /// The file's bytes are not what was written: a malformed header field at `offset`, or
    /// bytes after the payload.
    case corrupted(path: String, offset: Int, reason: String)
    /// The checksum over the header and payload does not match: some byte changed.
    case checksumMismatch(path: String, stored: UInt32, computed: UInt32)
    /// The file was written by another serializer (`found` is its identifier).
    case serializerMismatch(path: String, found: String, expected: String)
    /// The payload passed its checksum but the serializer could not decode it (the types of
    /// the keys or values changed, say); `field` is the coding path where decoding stopped, if
    /// known.
    case undecodable(path: String, field: String, reason: String)
    /// The serializer could not encode the entries; nothing was written.
    case unencodable(path: String, reason: String)
    /// A system call failed (`operation` names it; `errno` is the C error number).
    case ioFailure(path: String, operation: String, errno: Int32)
    /// The file exists, and the ``CachePersistence`` that would save over it has neither loaded
    /// nor saved it, or is loading it right now (the reason a save is refused, in
    /// ``saveRefused(path:because:)``).
    case notLoaded(path: String)
    /// A save was refused because the last load of this file failed with `reason`, or because
    /// the file was never loaded (`reason` is ``notLoaded(path:)``): saving would destroy a file
    /// that might still be recovered. Call ``CachePersistence/allowOverwritingUnreadableFile()``
    /// to save anyway.
    indirect case saveRefused(path: String, because: CachePersistenceError)

    /// The file the error is about.
    public var path: String {
        switch self {
        case .foreignFile(let path), .newerVersion(let path, _, _), .truncated(let path, _, _),
            .corrupted(let path, _, _), .checksumMismatch(let path, _, _), .serializerMismatch(let path, _, _),
            .undecodable(let path, _, _), .unencodable(let path, _), .ioFailure(let path, _, _),
            .notLoaded(let path), .saveRefused(let path, _):
            return path
        }
    }

    /// A sentence saying what went wrong and where.
    public var description: String {
        switch self {
        case .foreignFile(let path):
            return "\(path): not a CacheKit cache file (wrong magic bytes at offset 0)"
        case .newerVersion(let path, let found, let supported):
            return "\(path): format version \(found) at offset 8 is newer than the supported version \(supported)"
        case .truncated(let path, let expected, let actual):
            return "\(path): truncated: \(actual) bytes, the header announces \(expected)"
        case .corrupted(let path, let offset, let reason):
            return "\(path): corrupted at byte offset \(offset): \(reason)"
        case .checksumMismatch(let path, let stored, let computed):
            return "\(path): corrupted: CRC32 stored in the header is \(hex(stored)), the content's is \(hex(computed))"
        case .serializerMismatch(let path, let found, let expected):
            return "\(path): written with serializer \"\(found)\", but this persistence uses \"\(expected)\""
        case .undecodable(let path, let field, let reason):
            return "\(path): the payload could not be decoded at \(field.isEmpty ? "the top level" : field): \(reason)"
        case .unencodable(let path, let reason):
            return "\(path): the entries could not be encoded: \(reason)"
        case .ioFailure(let path, let operation, let errno):
            return "\(path): \(operation) failed: \(String(cString: strerror(errno))) (errno \(errno))"
        case .notLoaded(let path):
            return "\(path): the file exists and was never loaded by this persistence"
        case .saveRefused(let path, .notLoaded):
            return "\(path): save refused: the file exists and was never loaded; call load() first, "
                + "or allowOverwritingUnreadableFile() to replace it"
        case .saveRefused(let path, let reason):
            return "\(path): save refused: the last load failed (\(reason)); "
                + "call allowOverwritingUnreadableFile() to replace the file"
        }
    }
}

private func hex(_ value: UInt32) -> String {
    let digits = String(value, radix: 16)
    return "0x" + String(repeating: "0", count: 8 - digits.count) + digits
}
