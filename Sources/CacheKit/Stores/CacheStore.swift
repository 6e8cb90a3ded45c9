// Stores/: the second level beneath the memory caches (the store protocol, its errors, codecs, key
// encodings and the wall clock) and TieredCache over both. Never reaches into the engine.

import Foundation

/// A second level beneath a memory cache: bytes by key, kept on disk, in a database or on a
/// server, so that they survive restarts and can outgrow memory.
///
/// ``DiskStore`` keeps a file per entry (large values); `SQLiteStore` (product `CacheKitSQLite`)
/// keeps many small values in one database. ``TieredCache`` puts a memory ``Cache`` in front of
/// a store and turns values into bytes with a ``StoreCodec``.
///
/// The rules every store keeps:
/// - Keys are strings: ``StoreKeyEncoding`` turns a cache's keys into them, the same way in
///   every process and run. A key is 1 to ``maximumKeyBytes`` bytes of UTF-8.
/// - A lifetime is an absolute deadline on the wall clock (`Date`), so that it means the same
///   after a restart. An entry whose deadline has passed is never returned.
/// - Limits hold when a write returns: a store never holds more than its count or byte limit
///   once ``setEntry(_:forKey:expiresAt:)`` has returned. An entry larger than the byte limit is
///   refused with ``CacheStoreError/tooLarge(key:bytes:limit:)``.
/// - A store owns its files alone: a second store opening them gets
///   ``CacheStoreError/locked(path:)``.
/// - An entry found damaged is a miss: the store drops it and reports it to its problem handler
///   (``CacheStoreProblem``). Nothing else is lost.
/// - After ``close()`` every operation throws ``CacheStoreError/closed(path:)``.
public protocol CacheStore: Sendable {
    /// The entry for `key` and its deadline, or `nil` when there is none (or it has expired, or
    /// was found damaged and dropped). Records the access for the store's eviction policy.
    func entry(forKey key: String) async throws(CacheStoreError) -> StoredEntry?

    /// Stores `value` for `key`, replacing any entry, to be dropped at `expiresAt` (`nil` for
    /// never). When it returns, the entry is durable as the store defines it and the store is
    /// within its limits (entries may have been evicted to make room).
    func setEntry(_ value: Data, forKey key: String, expiresAt: Date?) async throws(CacheStoreError)

    /// Removes the entry for `key`; returns whether there was one.
    @discardableResult
    func removeEntry(forKey key: String) async throws(CacheStoreError) -> Bool

    /// Removes every entry.
    func removeAll() async throws(CacheStoreError)

    /// How many entries the store holds and how many bytes of values, as its limits count them.
    func usage() async throws(CacheStoreError) -> CacheStoreUsage

    /// Finishes pending work (access records, background trims), releases the store's files and
    /// its lock. Later calls throw ``CacheStoreError/closed(path:)``; closing twice is harmless.
    func close() async throws(CacheStoreError)
}

extension CacheStore {
    /// The longest key a store accepts, in bytes of UTF-8.
    public static var maximumKeyBytes: Int { 4_096 }
}

/// One entry read from a ``CacheStore``.
public struct StoredEntry: Sendable, Hashable {
    /// The bytes stored.
    public var value: Data
    /// When the entry expires on the wall clock; `nil` for never.
    public var expiresAt: Date?

    /// Creates an entry.
    public init(value: Data, expiresAt: Date?) {
        self.value = value
        self.expiresAt = expiresAt
    }
}

/// What a ``CacheStore`` holds, as its limits count it.
public struct CacheStoreUsage: Sendable, Hashable {
    /// How many entries.
    public var count: Int
    /// How many bytes of values (keys and the store's own bookkeeping are not counted).
    public var bytes: Int

    /// Creates a usage.
    public init(count: Int, bytes: Int) {
        self.count = count
        self.bytes = bytes
    }
}

/// Something a ``CacheStore`` found and handled without failing the call: a damaged entry it
/// dropped, a background trim or removal that failed. Given to the store's problem handler.
public struct CacheStoreProblem: Sendable, Equatable, CustomStringConvertible {
    /// The entry concerned, if one is.
    public var key: String?
    /// What went wrong.
    public var error: CacheStoreError

    /// Creates a problem report.
    public init(key: String?, error: CacheStoreError) {
        self.key = key
        self.error = error
    }

    public var description: String {
        if let key { return "entry \(key): \(error)" }
        return error.description
    }
}
