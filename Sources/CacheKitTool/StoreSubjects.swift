import CacheKit
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One subject of `bench --stores`: reads and writes bytes by string key.
protocol StoreSubject: AnyObject, Sendable {
    /// Reads `key`; returns the bytes read (0 for a miss).
    func get(_ key: String) async throws -> Int
    /// Writes `value` for `key`.
    func set(_ key: String, _ value: Data) async throws
    /// Releases the subject's files.
    func close() async
}

/// The subject named `name` over `directory` (made if absent), sized to hold `capacity` entries
/// of any size; `nil` for a name with no subject of its own (baselines of other workloads).
func makeSubject(_ name: String, directory: URL, capacity: Int) throws -> (any StoreSubject)? {
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    switch name {
    case "DiskStore":
        return try runBlocking { try await DiskStoreSubject(directory: directory) }
    case "DiskStore-flushed":
        return try runBlocking { try await DiskStoreSubject(directory: directory, durability: .powerLoss) }
    case "raw-file":
        return RawFileSubject(directory: directory)
    case "raw-file-nosync":
        return RawFileSubject(directory: directory, flushes: false)
    case "TieredCache":
        return try runBlocking {
            TieredSubject(
                TieredCache<String, Data>(
                    countLimit: capacity,
                    store: try await DiskStore(directory: directory, byteLimit: Int.max / 2),
                    codec: .data,
                    keys: .description
                )
            )
        }
    case "Cache":
        return CacheSubject(Cache<String, Data>(countLimit: capacity))
    default:
        return try makeSQLiteSubject(name, directory: directory)
    }
}

/// Runs `body` to completion on the concurrency pool and waits for it on this thread: the tool's
/// measurements are synchronous, the stores asynchronous.
func runBlocking<T: Sendable, Failure: Error>(
    _ body: @escaping @Sendable () async throws(Failure) -> T
) throws(Failure) -> T {
    let result = _Mutex<Result<T, Failure>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        let outcome: Result<T, Failure>
        do throws(Failure) {
            outcome = .success(try await body())
        } catch {
            outcome = .failure(error)
        }
        result.withLock { $0 = outcome }
        done.signal()
    }
    done.wait()
    return try result.withLock { $0! }.get()
}

final class DiskStoreSubject: StoreSubject {
    let store: DiskStore
    init(directory: URL, durability: DiskStore.Durability = .processCrash) async throws {
        store = try await DiskStore(directory: directory, byteLimit: Int.max / 2, durability: durability)
    }
    func get(_ key: String) async throws -> Int { try await store.entry(forKey: key)?.value.count ?? 0 }
    func set(_ key: String, _ value: Data) async throws { try await store.setEntry(value, forKey: key, expiresAt: nil) }
    func close() async { try? await store.close() }
}

final class TieredSubject: StoreSubject {
    let cache: TieredCache<String, Data>
    init(_ cache: TieredCache<String, Data>) { self.cache = cache }
    func get(_ key: String) async throws -> Int { await cache.value(forKey: key)?.count ?? 0 }
    func set(_ key: String, _ value: Data) async throws { try await cache.setValue(value, forKey: key) }
    func close() async { try? await cache.close() }
}

final class CacheSubject: StoreSubject {
    let cache: Cache<String, Data>
    init(_ cache: Cache<String, Data>) { self.cache = cache }
    func get(_ key: String) async throws -> Int { cache.value(forKey: key)?.count ?? 0 }
    func set(_ key: String, _ value: Data) async throws { cache.setValue(value, forKey: key) }
    func close() async {}
}

/// The same bytes with plain POSIX calls: a file per key; `open`/`pread`/`close` to read, a
/// temporary file written, `fsync`ed (unless `flushes` is off) and renamed into place to write.
final class RawFileSubject: StoreSubject {
    let directory: String
    let flushes: Bool
    init(directory: URL, flushes: Bool = true) {
        self.directory = directory.path
        self.flushes = flushes
    }

    func get(_ key: String) async throws -> Int {
        let descriptor = open(directory + "/" + key, O_RDONLY)
        guard descriptor >= 0 else { return 0 }
        defer { closeDescriptor(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return 0 }
        var data = Data(count: Int(info.st_size))
        let read = data.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        return read
    }

    func set(_ key: String, _ value: Data) async throws {
        let path = directory + "/" + key
        let temporary = path + ".tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard descriptor >= 0 else { throw CacheStoreError.ioFailure(path: temporary, operation: "open", errno: errno) }
        let written = value.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        let synced = flushes ? fsync(descriptor) : 0
        closeDescriptor(descriptor)
        guard written == value.count, synced == 0, rename(temporary, path) == 0 else {
            throw CacheStoreError.ioFailure(path: path, operation: "write", errno: errno)
        }
    }

    func close() async {}
}

/// `close(2)`, under a name that the subjects' own `close()` does not hide.
func closeDescriptor(_ descriptor: Int32) {
    _ = close(descriptor)
}
