import Foundation

/// Why a ``CacheStore`` operation failed.
///
/// Every case names the file, directory or database concerned; ``description`` says what went
/// wrong in one line.
public enum CacheStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Another store (in this process or another) owns the directory or database.
    case locked(path: String)
    /// The store was closed.
    case closed(path: String)
    /// A system call failed (`operation` names it; `errno` is the C error number).
    case ioFailure(path: String, operation: String, errno: Int32)
    /// A file the store keeps is damaged: `reason` says how. Stores report damage through their
    /// problem handler (``CacheStoreProblem``) and heal: a damaged entry is dropped, a damaged
    /// journal makes a `DiskStore` rebuild its index from the entry files, and a damaged SQLite
    /// database is moved aside and replaced by a new one holding the entries that could be read
    /// and verified. It is thrown only for a file that is not the store's own, which is left as
    /// it is.
    case corrupted(path: String, reason: String)
    /// The index or database was written by a newer format than this CacheKit reads.
    case newerFormat(path: String, found: Int, supported: Int)
    /// The database engine reported an error (`code` is its result code).
    case database(path: String, code: Int32, message: String)
    /// The value is larger than the store's byte limit, so it can never be stored.
    case tooLarge(key: String, bytes: Int, limit: Int)
    /// The key is empty or longer than ``CacheStore/maximumKeyBytes`` bytes of UTF-8.
    case invalidKey(key: String, reason: String)
    /// A value could not be turned into bytes, or bytes back into a value
    /// (``StoreCodec``); `reason` is the codec's message.
    case codec(key: String, reason: String)
    /// The store's server could not be reached, or the connection to it failed or timed out
    /// (`path` names the server, `reason` says what happened). An operation that fails so may or
    /// may not have taken effect on the server.
    case unavailable(path: String, reason: String)
    /// The store's server refused the operation: `message` is its reply, word for word.
    case serverError(path: String, message: String)

    public var description: String {
        switch self {
        case .locked(let path):
            "\(path) is in use by another store (its lock is held)"
        case .closed(let path):
            "the store at \(path) is closed"
        case .ioFailure(let path, let operation, let errno):
            "\(operation) failed for \(path): \(String(cString: strerror(errno))) (errno \(errno))"
        case .corrupted(let path, let reason):
            "\(path) is damaged: \(reason)"
        case .newerFormat(let path, let found, let supported):
            "\(path) has format version \(found); this CacheKit reads up to \(supported)"
        case .database(let path, let code, let message):
            "database \(path): \(message) (result code \(code))"
        case .tooLarge(let key, let bytes, let limit):
            "the value for \(key) has \(bytes) bytes, more than the store's limit of \(limit)"
        case .invalidKey(let key, let reason):
            "invalid store key \(key.prefix(80)): \(reason)"
        case .codec(let key, let reason):
            "the value for \(key) could not be converted: \(reason)"
        case .unavailable(let path, let reason):
            "\(path) is unavailable: \(reason)"
        case .serverError(let path, let message):
            "\(path) refused the operation: \(message)"
        }
    }
}

extension CacheStore {
    /// Throws ``CacheStoreError/invalidKey(key:reason:)`` unless `key` is 1 to
    /// ``maximumKeyBytes`` bytes of UTF-8.
    public static func validate(key: String) throws(CacheStoreError) {
        let bytes = key.utf8.count
        if bytes == 0 { throw .invalidKey(key: key, reason: "a key needs at least one byte") }
        if bytes > maximumKeyBytes {
            throw .invalidKey(key: key, reason: "\(bytes) bytes of UTF-8, more than \(maximumKeyBytes)")
        }
    }
}
