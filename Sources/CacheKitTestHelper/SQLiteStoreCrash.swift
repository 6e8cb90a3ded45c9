// Writes and removes entries of a SQLiteStore until it is killed: `SQLiteStoreCrashTests` kills it
// with SIGKILL at random moments and checks that every entry left reads back whole and that the
// limits hold.
//
// Usage: CacheKitTestHelper sqlite-store-crash PATH         (the write loop; prints "progress"
//                                                          once under way)
//        CacheKitTestHelper sqlite-store-crash --open PATH  (opens the store once; prints "opened"
//                                                          or the error)
//
// Each value carries its key, a version and a checksum (see `CrashValue`), so that a reader can
// tell a whole value from a torn or misplaced one. The store holds at most `countLimit` entries
// and `byteLimit` bytes of values; the test checks those numbers.
#if SQLite
import CacheKit
import CacheKitSQLite
import Foundation

private let countLimit = 40
private let byteLimit = 4_000

/// The bytes of version `version` of `key`'s value: the version (8 bytes, little-endian), the
/// key's length (2 bytes) and UTF-8, `length` bytes derived from key and version, and an FNV-1a
/// checksum (8 bytes) of all that.
private func crashValue(key: String, version: UInt64, length: Int) -> Data {
    var bytes = withUnsafeBytes(of: version.littleEndian) { Array($0) }
    let keyBytes = Array(key.utf8)
    bytes += withUnsafeBytes(of: UInt16(keyBytes.count).littleEndian) { Array($0) }
    bytes += keyBytes
    let seed = fnv1a(keyBytes) &+ version &* 0x9E37_79B9
    bytes += (0..<length).map { UInt8(truncatingIfNeeded: seed &+ UInt64($0) &* 131) }
    bytes += withUnsafeBytes(of: fnv1a(bytes).littleEndian) { Array($0) }
    return Data(bytes)
}

private func fnv1a(_ bytes: [UInt8]) -> UInt64 {
    bytes.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
}

/// `sqlite-store-crash [--open] PATH` (`arguments[0]` is the subcommand).
func sqliteStoreCrash(_ arguments: [String]) async -> Never {
    if arguments.count == 3, arguments[1] == "--open" {
        do {
            let store = try await SQLiteStore(path: URL(fileURLWithPath: arguments[2]), byteLimit: byteLimit)
            try await store.close()
            print("opened")
        } catch {
            print("error: \(error)")
        }
        exit(0)
    }
    guard arguments.count == 2 else {
        FileHandle.standardError.write(Data("usage: CacheKitTestHelper sqlite-store-crash [--open] PATH\n".utf8))
        exit(2)
    }

    do {
        let store = try await SQLiteStore(
            path: URL(fileURLWithPath: arguments[1]),
            countLimit: countLimit,
            byteLimit: byteLimit
        )
        var version = UInt64.random(in: 0..<(1 << 40))
        var operations = 0
        while true {
            let key = "k\(Int.random(in: 0..<100))"
            if Int.random(in: 0..<10) < 7 {
                version += 1
                let value = crashValue(key: key, version: version, length: Int.random(in: 0...300))
                try await store.setEntry(value, forKey: key, expiresAt: nil)
            } else if Bool.random() {
                _ = try await store.entry(forKey: key)
            } else {
                try await store.removeEntry(forKey: key)
            }
            operations += 1
            if operations == 50 { FileHandle.standardOutput.write(Data("progress\n".utf8)) }
        }
    } catch {
        FileHandle.standardError.write(Data("CacheKitTestHelper: \(error)\n".utf8))
        exit(1)
    }
}
#endif
