import CacheKit
import Foundation

/// A `CacheStore` in a dictionary, for testing what sits above a store: it counts calls, can
/// fail on demand, and can hold its writes at a gate.
actor InMemoryStore: CacheStore {
    struct Injected: Error {}

    private(set) var entries: [String: StoredEntry] = [:]
    private(set) var reads = 0
    private(set) var writes = 0
    private(set) var writesStarted = 0
    private(set) var removals = 0
    var failsReads = false
    var failsWrites = false
    /// When set, each write waits here before it lands.
    var writeGate: Gate?
    /// When set, each read waits here before it looks.
    var readGate: Gate?
    let clock: WallClock

    init(clock: WallClock) { self.clock = clock }

    func set(failsReads: Bool? = nil, failsWrites: Bool? = nil, writeGate: Gate?? = nil, readGate: Gate?? = nil) {
        if let readGate { self.readGate = readGate }
        if let failsReads { self.failsReads = failsReads }
        if let failsWrites { self.failsWrites = failsWrites }
        if let writeGate { self.writeGate = writeGate }
    }

    func put(_ bytes: Data, forKey key: String, expiresAt: Date? = nil) {
        entries[key] = StoredEntry(value: bytes, expiresAt: expiresAt)
    }

    func entry(forKey key: String) async throws(CacheStoreError) -> StoredEntry? {
        reads += 1
        if let readGate { await readGate.wait() }
        if failsReads { throw .ioFailure(path: "memory", operation: "read", errno: EIO) }
        guard let entry = entries[key] else { return nil }
        if let deadline = entry.expiresAt, deadline <= clock.now() {
            entries[key] = nil
            return nil
        }
        return entry
    }

    func setEntry(_ value: Data, forKey key: String, expiresAt: Date?) async throws(CacheStoreError) {
        writesStarted += 1
        if let writeGate { await writeGate.wait() }
        if failsWrites { throw .ioFailure(path: "memory", operation: "write", errno: ENOSPC) }
        writes += 1
        entries[key] = StoredEntry(value: value, expiresAt: expiresAt)
    }

    func removeEntry(forKey key: String) async throws(CacheStoreError) -> Bool {
        removals += 1
        return entries.removeValue(forKey: key) != nil
    }

    func removeAll() async throws(CacheStoreError) { entries = [:] }

    func usage() async throws(CacheStoreError) -> CacheStoreUsage {
        CacheStoreUsage(count: entries.count, bytes: entries.values.reduce(0) { $0 + $1.value.count })
    }

    func close() async throws(CacheStoreError) {}
}
