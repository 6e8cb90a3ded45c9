#if Redis
import CacheKit
import Foundation
import Synchronization

/// A ``CacheKit/CacheStore`` on a Redis server, which every process of an application shares; with
/// a `TieredCache` over it, each process keeps a near cache in memory that Redis keeps coherent.
///
/// ```swift
/// let store = RedisStore(configuration: RedisConfiguration(host: "cache.internal"), keyPrefix: "articles:")
/// let articles = TieredCache<String, Article>(countLimit: 10_000, store: store, expiresAfter: .seconds(600))
/// let article = try await articles.value(forKey: id) { id in try await database.article(id) }
/// ```
///
/// ## Entries
/// Each entry is one Redis string under `keyPrefix` + its store key, written with `SET … PX`, so
/// that Redis frees it when its lifetime ends. The value carries a 12-byte header with the
/// deadline on the store's clock, so a read learns it in the same round trip. A value under the
/// prefix without that header (written by another program) is a miss, reported to the problem
/// handler and left in place. Redis's own `maxmemory` and `maxmemory-policy` bound what it holds:
/// the store sets no count or byte limit of its own, and refuses only values larger than
/// ``maximumValueBytes``.
///
/// ## Near caching
/// A `TieredCache` over a `RedisStore` follows the store's invalidations
/// (``CacheKit/InvalidatingCacheStore``):
/// - **Read your writes.** A process's write reaches its own memory level at once.
/// - **Others' writes.** When another process writes or removes a key, Redis pushes an
///   invalidation and the copy leaves memory. With ``Invalidation/tracking`` (the default) Redis's
///   `CLIENT TRACKING` in broadcast mode announces every change to a key under the prefix, by
///   anyone; with ``Invalidation/channel(_:)`` each store publishes the keys it changes on a
///   pub/sub channel (for servers without tracking, before Redis 6).
///   Broadcast mode is chosen over tracking the keys a connection has read because a key a
///   process wrote but has not read since would otherwise never be announced to it.
/// - **Own changes come back.** Redis announces a process's own writes to it too, so a value it
///   writes leaves its memory level when the push arrives and is read once more from Redis.
/// - **A lost connection.** When the connection that receives invalidations is lost (closed,
///   reset, or a ping unanswered within the configuration's command timeout), memory is emptied
///   and bypassed until the connection is back and tracking is armed again: reads go to Redis,
///   and when Redis is down too, to the loader (or they fail), never to a stale copy.
/// - **Removing everything.** ``removeAll()`` deletes the keys under the prefix (`SCAN` and
///   `UNLINK`); each deletion is announced, and with a channel the store also announces the
///   removal of everything, so every process's memory level is emptied.
///
/// ## Errors
/// Operations throw ``CacheKit/CacheStoreError/unavailable(path:reason:)`` when Redis cannot be
/// reached or a reply does not come within the command timeout (a write that fails so may or may
/// not have happened), and ``CacheKit/CacheStoreError/serverError(path:message:)`` with Redis's
/// own words when it refuses a command.
public final class RedisStore: InvalidatingCacheStore {
    /// How a store learns that other processes changed entries.
    public enum Invalidation: Sendable, Hashable {
        /// Redis's `CLIENT TRACKING` in broadcast mode for the key prefix: Redis announces every
        /// change to a key under it. Needs Redis 6 or later and RESP3.
        case tracking
        /// Each store publishes the keys it changes on this pub/sub channel and listens to it: for
        /// servers without tracking. Changes made to Redis by other programs are not announced.
        case channel(String)
        /// None: memory copies are not invalidated (for a store only one process uses).
        case none
    }

    /// The server and how to reach it.
    public let configuration: RedisConfiguration
    /// What every key of this store begins with in Redis.
    public let keyPrefix: String
    /// How the store learns of changes made elsewhere.
    public let invalidation: Invalidation
    /// The largest value the store accepts, in bytes.
    public let maximumValueBytes: Int
    /// The clock deadlines are measured on.
    public let clock: WallClock
    /// The connection pool for the store's commands.
    public let client: RedisClient
    /// Names the server in errors: `redis://host:port/database`.
    public let path: String
    let problemHandler: (@Sendable (CacheStoreProblem) -> Void)?
    let pushConnection: RedisPushConnection?
    let isClosed = _Mutex(false)
    let listeners: InvalidationListeners

    /// Creates a store on the server `configuration` names. Connections open on first use; with
    /// invalidations, a connection for them opens at once and keeps reconnecting until ``close()``.
    ///
    /// - Parameters:
    ///   - configuration: The server, credentials, timeouts and pool size.
    ///   - keyPrefix: What every key of this store begins with in Redis (may be empty).
    ///   - invalidation: How the store learns of changes made by other processes.
    ///   - pingInterval: How often the invalidation connection is pinged, to find a silent loss.
    ///   - maximumValueBytes: The largest value accepted (at most the client's reply limit for a
    ///     blob, less the entry's header).
    ///   - clock: The clock deadlines are measured on. Tests pass `WallClock.manual(_:origin:)`.
    ///   - problemHandler: Hears of entries that could not be read (reported as misses). Called
    ///     with no lock held.
    public init(
        configuration: RedisConfiguration = RedisConfiguration(),
        keyPrefix: String = "cachekit:",
        invalidation: Invalidation = .tracking,
        pingInterval: Duration = .seconds(1),
        maximumValueBytes: Int = 64 << 20,
        clock: WallClock = .system,
        problemHandler: (@Sendable (CacheStoreProblem) -> Void)? = nil
    ) {
        precondition(maximumValueBytes > 0, "maximumValueBytes must be positive (got \(maximumValueBytes))")
        self.configuration = configuration
        self.keyPrefix = keyPrefix
        self.invalidation = invalidation
        self.maximumValueBytes = min(
            maximumValueBytes,
            configuration.replyLimits.maximumBulkLength - RedisEntryFormat.headerBytes
        )
        self.clock = clock
        self.problemHandler = problemHandler
        client = RedisClient(configuration: configuration)
        path = "redis://\(configuration.host):\(configuration.port)/\(configuration.database)"
        let listeners = InvalidationListeners(alwaysResumed: invalidation == .none)
        self.listeners = listeners
        // The connection hands each event to the listeners' queue on its own thread.
        let enqueue: @Sendable (RedisPushEvent) -> Void = { listeners.enqueue($0) }
        switch invalidation {
        case .tracking:
            let setup: [[RedisArgument]] =
                keyPrefix.isEmpty
                ? [["CLIENT", "TRACKING", "ON", "BCAST"]]
                : [["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", RedisArgument(keyPrefix)]]
            pushConnection = RedisPushConnection(
                configuration: configuration,
                setup: setup,
                pingInterval: pingInterval,
                eventHandler: enqueue
            )
        case .channel(let channel):
            pushConnection = RedisPushConnection(
                configuration: configuration,
                setup: [["SUBSCRIBE", RedisArgument(channel)]],
                pingInterval: pingInterval,
                eventHandler: enqueue
            )
        case .none:
            pushConnection = nil
        }
        listeners.start(keyPrefix: keyPrefix, channel: invalidation.channelName)
    }

    deinit {
        listeners.stop()
        if let pushConnection, !isClosed.withLock({ $0 }) {
            let client = client
            Task {
                await pushConnection.close()
                await client.close()
            }
        }
    }

    // MARK: - CacheStore

    /// The entry for `key`: one `GET`.
    public func entry(forKey key: String) async throws(CacheStoreError) -> StoredEntry? {
        try checkOpen()
        try Self.validate(key: key)
        let bytes: [UInt8]?
        do {
            bytes = try await client.get(keyPrefix + key)
        } catch {
            throw storeError(error)
        }
        guard let bytes else { return nil }
        switch RedisEntryFormat.decode(bytes) {
        case .failure(let failure):
            problemHandler?(
                CacheStoreProblem(
                    key: key,
                    error: .corrupted(path: "\(path) \(keyPrefix)\(key)", reason: failure.reason)
                )
            )
            return nil
        case .success(let (value, expiresAt)):
            if let expiresAt, expiresAt <= clock.now() { return nil }
            return StoredEntry(value: value, expiresAt: expiresAt)
        }
    }

    /// Stores `value` for `key` with `SET … PX` (the lifetime left until `expiresAt`); with a
    /// channel, then publishes the key. A deadline already past removes the key instead.
    public func setEntry(_ value: Data, forKey key: String, expiresAt: Date?) async throws(CacheStoreError) {
        try checkOpen()
        try Self.validate(key: key)
        guard value.count <= maximumValueBytes else {
            throw .tooLarge(key: key, bytes: value.count, limit: maximumValueBytes)
        }
        var lifetime: Duration?
        if let expiresAt {
            let seconds = expiresAt.timeIntervalSince(clock.now())
            guard seconds > 0 else {
                try await removeEntry(forKey: key)
                return
            }
            lifetime = .nanoseconds(Int64(min(seconds, 1e9) * 1e9))
        }
        do {
            try await client.set(
                keyPrefix + key,
                to: RedisEntryFormat.encode(value, expiresAt: expiresAt),
                expiresAfter: lifetime
            )
        } catch {
            throw storeError(error)
        }
        try await announce(.key(key))
    }

    /// Removes the entry for `key` with `DEL`; with a channel, then publishes the key.
    @discardableResult
    public func removeEntry(forKey key: String) async throws(CacheStoreError) -> Bool {
        try checkOpen()
        try Self.validate(key: key)
        let removed: Int
        do {
            removed = try await client.del([keyPrefix + key])
        } catch {
            throw storeError(error)
        }
        try await announce(.key(key))
        return removed > 0
    }

    /// Removes every key under the prefix (`SCAN` and `UNLINK`, a batch at a time); with a
    /// channel, then announces the removal of everything.
    ///
    /// With an empty prefix this removes every key of the database.
    public func removeAll() async throws(CacheStoreError) {
        try checkOpen()
        try await forEachBatchOfKeys { keys throws(CacheStoreError) in
            do throws(RedisError) {
                _ = try await client.unlink(keys)
            } catch {
                throw storeError(error)
            }
        }
        try await announce(.everything)
    }

    /// Counts the keys under the prefix and the bytes of their values (`SCAN` and `STRLEN`). The
    /// `STRLEN`s of each page of keys are sent together, so they share round trips.
    ///
    /// - Complexity: O(n) in the keys of the database: Redis keeps no count per prefix.
    public func usage() async throws(CacheStoreError) -> CacheStoreUsage {
        try checkOpen()
        var usage = CacheStoreUsage(count: 0, bytes: 0)
        try await forEachBatchOfKeys { keys throws(CacheStoreError) in
            for length in try await lengths(of: keys) where length > 0 {
                usage.count += 1
                usage.bytes += max(0, length - RedisEntryFormat.headerBytes)
            }
        }
        return usage
    }

    /// The `STRLEN` of each of `keys` (0 for a key that is gone), sent concurrently: the client
    /// pipelines them on its connections.
    private func lengths(of keys: [String]) async throws(CacheStoreError) -> [Int] {
        let client = client
        let result = await withTaskGroup(of: Result<Int, RedisError>.self) { group in
            for key in keys {
                group.addTask {
                    do throws(RedisError) {
                        let reply = try await client.send("STRLEN", [RedisArgument(key)])
                        guard case .integer(let length) = reply else { return .success(0) }
                        return .success(Int(length))
                    } catch {
                        return .failure(error)
                    }
                }
            }
            var lengths: [Int] = []
            lengths.reserveCapacity(keys.count)
            for await length in group {
                switch length {
                case .success(let length): lengths.append(length)
                case .failure(let error): return Result<[Int], RedisError>.failure(error)
                }
            }
            return .success(lengths)
        }
        switch result {
        case .success(let lengths): return lengths
        case .failure(let error): throw storeError(error)
        }
    }

    /// Closes the store's connections. Later calls throw ``CacheKit/CacheStoreError/closed(path:)``.
    public func close() async throws(CacheStoreError) {
        let wasClosed = isClosed.withLock { closed in
            defer { closed = true }
            return closed
        }
        guard !wasClosed else { return }
        listeners.stop()
        await pushConnection?.close()
        await client.close()
    }

    // MARK: - Internals

    func checkOpen() throws(CacheStoreError) {
        if isClosed.withLock({ $0 }) { throw .closed(path: path) }
    }

    /// The store error for a client error.
    func storeError(_ error: RedisError) -> CacheStoreError {
        switch error {
        case .server(let message):
            .serverError(path: path, message: message)
        case .closed:
            .closed(path: path)
        case .connectionFailed, .connectionClosed, .timeout, .protocolViolation, .unexpectedReply:
            .unavailable(path: path, reason: error.description)
        }
    }

    /// Calls `body` with each batch of keys under the prefix that `SCAN` returns.
    func forEachBatchOfKeys(_ body: ([String]) async throws(CacheStoreError) -> Void) async throws(CacheStoreError) {
        let pattern = Self.globEscaped(keyPrefix) + "*"
        var cursor = "0"
        repeat {
            let page: (cursor: String, keys: [String])
            do {
                page = try await client.scan(cursor: cursor, match: pattern, count: 1_000)
            } catch {
                throw storeError(error)
            }
            if !page.keys.isEmpty { try await body(page.keys) }
            cursor = page.cursor
        } while cursor != "0"
    }

    /// `text` with Redis's glob characters escaped, for `SCAN … MATCH`.
    static func globEscaped(_ text: String) -> String {
        var escaped = ""
        for character in text {
            if "*?[]\\^".contains(character) { escaped.append("\\") }
            escaped.append(character)
        }
        return escaped
    }

    /// What a store announces on its channel.
    enum Announcement {
        case key(String)
        case everything
    }

    /// Publishes a change on the invalidation channel, if the store has one.
    func announce(_ announcement: Announcement) async throws(CacheStoreError) {
        guard case .channel(let channel) = invalidation else { return }
        let message: [UInt8]
        switch announcement {
        case .key(let key): message = [UInt8(ascii: "k")] + Array(key.utf8)
        case .everything: message = [UInt8(ascii: "*")]
        }
        do {
            _ = try await client.publish(channel, message)
        } catch {
            throw storeError(error)
        }
    }
}

extension RedisStore.Invalidation {
    var channelName: String? {
        if case .channel(let name) = self { return name }
        return nil
    }
}
#endif
