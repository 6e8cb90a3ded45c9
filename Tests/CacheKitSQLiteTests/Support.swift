#if SQLite
import CacheKit
import CacheKitSQLite
import CacheKitTestSupport
import Foundation
import Synchronization
import Testing

/// A fresh temporary directory, removed when released.
final class TemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("CacheKitSQLite-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
    }

    deinit {
        chmod(url.path, 0o755)
        try? FileManager.default.removeItem(at: url)
    }

    func file(_ name: String = "store.sqlite") -> URL { url.appendingPathComponent(name) }
}

/// Records the problems a store reports.
final class ProblemLog: Sendable {
    private let problems = Mutex<[CacheStoreProblem]>([])

    var all: [CacheStoreProblem] { problems.withLock { $0 } }

    var handler: @Sendable (CacheStoreProblem) -> Void { { problem in self.problems.withLock { $0.append(problem) } } }
}

/// What `body` returned or threw.
func storeResult<T>(_ body: () async throws(CacheStoreError) -> T) async -> Result<T, CacheStoreError> {
    do throws(CacheStoreError) {
        return .success(try await body())
    } catch {
        return .failure(error)
    }
}

/// `count` bytes, all `byte`.
func bytes(_ count: Int, _ byte: UInt8 = 7) -> Data { Data(repeating: byte, count: count) }

/// The error `body` throws, or `nil`.
func storeError<R>(_ body: () async throws(CacheStoreError) -> R) async -> CacheStoreError? {
    do {
        _ = try await body()
        return nil
    } catch {
        return error
    }
}

/// The crash helper: `CacheKitTestHelper sqlite-store-crash`.
let sqliteCrashHelper = testHelper

/// Runs the crash helper with `arguments` to its end and returns what it printed.
func runHelper(_ helper: URL, _ arguments: [String], launcher: [String] = []) throws -> String {
    let command = launcher + [helper.path, "sqlite-store-crash"] + arguments
    return try runToEnd(URL(fileURLWithPath: command[0]), Array(command.dropFirst())).output
}

// The value format of the crash helper (Sources/CacheKitTestHelper/SQLiteStoreCrash.swift): version
// (8 bytes), key length (2 bytes) and UTF-8, bytes derived from key and version, FNV-1a checksum
// (8 bytes) of all that.

/// Whether `value` is a whole value the crash helper wrote for `key`.
func isValidCrashValue(_ value: Data, forKey key: String) -> Bool {
    let bytes = Array(value)
    let keyBytes = Array(key.utf8)
    guard bytes.count >= 18 + keyBytes.count else { return false }
    let body = Array(bytes[..<(bytes.count - 8)])
    let checksum = bytes[(bytes.count - 8)...].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    guard checksum == fnv1a(body) else { return false }
    let version = bytes[0..<8].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    let keyLength = Int(bytes[8]) | Int(bytes[9]) << 8
    guard keyLength == keyBytes.count, Array(bytes[10..<(10 + keyLength)]) == keyBytes else { return false }
    let seed = fnv1a(keyBytes) &+ version &* 0x9E37_79B9
    let payload = body[(10 + keyLength)...]
    return payload.enumerated().allSatisfy { $0.element == UInt8(truncatingIfNeeded: seed &+ UInt64($0.offset) &* 131) }
}

private func fnv1a(_ bytes: [UInt8]) -> UInt64 {
    bytes.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
}
#endif
