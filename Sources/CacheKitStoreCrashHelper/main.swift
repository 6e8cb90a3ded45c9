// Writes and removes DiskStore entries in a loop until it is killed: `DiskStoreCrashTests` kills
// it with SIGKILL at random moments and checks that every entry the reopened store lists reads
// back valid, or is reported and dropped, and that the limits hold.
//
// Usage: CacheKitStoreCrashHelper DIRECTORY
//
// The store has a count limit of 30 and a byte limit of 4 000. Keys are `k0` … `k39`. The value
// written for a key at version v (nanoseconds since 1970, so later writes have larger versions
// across restarts) is `key|v|`, then 0 to 299 bytes made from the key and v, then the 64-bit
// FNV-1a hash of all that, little-endian: the test can tell a valid value from a damaged one
// and which write it was. After each write or removal returns, the helper prints `s KEY V` or
// `r KEY`; it prints `ready` once the store is open.
import CacheKit
import Foundation

func fnv(_ bytes: some Sequence<UInt8>) -> UInt64 {
    var hash: UInt64 = 0xCBF2_9CE4_8422_2325
    for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
    return hash
}

func value(key: String, version: UInt64) -> Data {
    var bytes = Array("\(key)|\(version)|".utf8)
    var state = fnv(bytes)
    for _ in 0..<Int(state % 300) {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        bytes.append(UInt8(truncatingIfNeeded: state >> 56))
    }
    withUnsafeBytes(of: fnv(bytes).littleEndian) { bytes += $0 }
    return Data(bytes)
}

let arguments = CommandLine.arguments
guard arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: CacheKitStoreCrashHelper DIRECTORY\n".utf8))
    exit(2)
}

/// Writes `line` to standard output at once (unbuffered), so that a kill loses none of it.
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

do {
    let store = try await DiskStore(
        directory: URL(fileURLWithPath: arguments[1]),
        countLimit: 30,
        byteLimit: 4_000
    )
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
    FileHandle.standardError.write(Data("CacheKitStoreCrashHelper: \(error)\n".utf8))
    exit(1)
}
