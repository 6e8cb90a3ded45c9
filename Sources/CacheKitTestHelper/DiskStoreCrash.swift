// Writes and removes DiskStore entries in a loop until it is killed: `DiskStoreCrashTests` kills
// it with SIGKILL at random moments and checks that every entry the reopened store lists reads
// back valid, or is reported and dropped, and that the limits hold.
//
// Usage: CacheKitTestHelper disk-store-crash DIRECTORY
//        CacheKitTestHelper disk-store-crash --write-once DIRECTORY KEY
//
// The store has a count limit of 30 and a byte limit of 4 000. Keys are `k0` … `k39`. The value
// written for a key at version v (nanoseconds since 1970, so later writes have larger versions
// across restarts) is `key|v|`, then 0 to 299 bytes made from the key and v, then the 64-bit
// FNV-1a hash of all that, little-endian: the test can tell a valid value from a damaged one
// and which write it was. After each write or removal returns, the helper prints `s KEY V` or
// `r KEY`; it prints `ready` once the store is open.
//
// With `--write-once`, the helper opens the store with the same limits, tries one write of a
// value of that format for KEY, prints `ok` or `error: ` and the error's description, closes
// the store and exits with status 0: `DiskStoreDamageTests` runs it as `nobody`, to whom file
// modes apply when the tests run as root. If the store cannot be opened or closed, the helper
// says so on standard error and exits with status 1.
import CacheKit
import Foundation

private func fnv(_ bytes: some Sequence<UInt8>) -> UInt64 {
    var hash: UInt64 = 0xCBF2_9CE4_8422_2325
    for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
    return hash
}

private func value(key: String, version: UInt64) -> Data {
    var bytes = Array("\(key)|\(version)|".utf8)
    var state = fnv(bytes)
    for _ in 0..<Int(state % 300) {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        bytes.append(UInt8(truncatingIfNeeded: state >> 56))
    }
    withUnsafeBytes(of: fnv(bytes).littleEndian) { bytes += $0 }
    return Data(bytes)
}

/// Opens the store in `directory` with the helper's limits.
private func openStore(_ directory: String) async throws(CacheStoreError) -> DiskStore {
    try await DiskStore(directory: URL(fileURLWithPath: directory), countLimit: 30, byteLimit: 4_000)
}

/// `disk-store-crash [--write-once] DIRECTORY [KEY]` (`arguments[0]` is the subcommand).
func diskStoreCrash(_ arguments: [String]) async -> Never {
    if arguments.count == 4, arguments[1] == "--write-once" {
        do {
            let store = try await openStore(arguments[2])
            let key = arguments[3]
            do {
                let version = UInt64(Date().timeIntervalSince1970 * 1e9)
                try await store.setEntry(value(key: key, version: version), forKey: key, expiresAt: nil)
                say("ok")
            } catch {
                say("error: \(error)")
            }
            try await store.close()
            exit(0)
        } catch {
            FileHandle.standardError.write(Data("CacheKitTestHelper: \(error)\n".utf8))
            exit(1)
        }
    }
    guard arguments.count == 2 else {
        let usage = """
            usage: CacheKitTestHelper disk-store-crash DIRECTORY
                   CacheKitTestHelper disk-store-crash --write-once DIRECTORY KEY

            """
        FileHandle.standardError.write(Data(usage.utf8))
        exit(2)
    }

    do {
        let store = try await openStore(arguments[1])
        say("ready")
        var generator = SystemRandomNumberGenerator()
        while true {
            let key = "k\(Int.random(in: 0..<40, using: &generator))"
            if Int.random(in: 0..<5, using: &generator) == 0 {
                try await store.removeEntry(forKey: key)
                say("r \(key)")
            } else {
                let version = UInt64(Date().timeIntervalSince1970 * 1e9)
                try await store.setEntry(value(key: key, version: version), forKey: key, expiresAt: nil)
                say("s \(key) \(version)")
            }
            if Int.random(in: 0..<4, using: &generator) == 0 { _ = try await store.entry(forKey: key) }
        }
    } catch {
        FileHandle.standardError.write(Data("CacheKitTestHelper: \(error)\n".utf8))
        exit(1)
    }
}
