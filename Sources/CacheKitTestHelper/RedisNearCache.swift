// A second process with a near cache: a `TieredCache<String, String>` over a `RedisStore`, so
// that the Redis tests can check coherence across processes. Not a product.
//
// Usage: CacheKitTestHelper redis PORT PREFIX INVALIDATION [PASSWORD]
//        CacheKitTestHelper redis --chaos PORT PREFIX INVALIDATION ID WRITERS READERS OPERATIONS KEYS SEED
//                                 LOG
//
// INVALIDATION is `tracking` or `channel:NAME`. The ping interval is 100 ms and the command
// timeout 1 s, so that a lost connection is found quickly.
//
// Interactive (the first form): one command per line on standard input, one answer line each:
//   ready             waits (at most 60 s) until the memory level is in use -> `ready`
//   get KEY           TieredCache.value(forKey:loader:), the loader failing -> `value V` or `failed`
//   set KEY VALUE     TieredCache.setValue -> `ok` or `error DESCRIPTION`
//   remove KEY        TieredCache.removeValue -> `ok` or `error DESCRIPTION`
//   removeall         TieredCache.removeAll -> `ok` or `error DESCRIPTION`
//   memory KEY        what the memory level holds -> `value V` or `nil`
//   dropped KEY       waits (at most 60 s) until memory no longer holds KEY -> `dropped` or `held`
//   bypassed          waits (at most 60 s) until the memory level is bypassed -> `bypassed`
//   quit              exits
//
// Chaos (the second form): WRITERS writer tasks and READERS reader tasks each run an equal share
// of OPERATIONS operations on keys `c0`…`c{KEYS-1}`, chosen by a generator seeded with SEED. A writer writes
// `ID-w-n` (unique across processes); a reader reads with a loader that fails. Each operation
// appends one line to LOG when it ends, with CLOCK_MONOTONIC nanoseconds (one clock for every
// process of the machine): `W ID KEY VALUE START END ok|failed` or `R ID KEY VALUE|- START END`.
// A worker whose operation failed waits 5 ms before its next, as a real client would; a reader
// waits 0.3 ms after each read. Progress
// goes to standard output as `progress N` every 100 operations, and `done` at the end; the helper
// then waits for `quit` (or the end of its input) before it exits.
#if Redis
import CacheKit
import CacheKitRedis
import CacheKitSimulator
import Foundation

#if canImport(Glibc)
import Glibc
#endif

private struct Failed: Error {}

private func monotonicNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

private func makeCache(
    port: Int,
    prefix: String,
    invalidation: String,
    password: String?
) -> TieredCache<String, String> {
    let mode: RedisStore.Invalidation =
        invalidation.hasPrefix("channel:") ? .channel(String(invalidation.dropFirst("channel:".count))) : .tracking
    let configuration = RedisConfiguration(
        port: port,
        password: password,
        connectTimeout: .seconds(1),
        commandTimeout: .seconds(1),
        reconnectBackoff: RedisBackoff(initial: .milliseconds(20), maximum: .milliseconds(200))
    )
    let store = RedisStore(
        configuration: configuration,
        keyPrefix: prefix,
        invalidation: mode,
        pingInterval: .milliseconds(100)
    )
    return TieredCache<String, String>(countLimit: 10_000, store: store)
}

/// Polls `condition` every millisecond for at most 60 seconds.
private func waitUntil(_ condition: () -> Bool) async -> Bool {
    for _ in 0..<60_000 {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return condition()
}

private func interactive(_ cache: TieredCache<String, String>) async {
    while let line = readLine() {
        let words = line.split(separator: " ", maxSplits: 2).map(String.init)
        guard let command = words.first else { continue }
        switch (command, words.count) {
        case ("ready", 1):
            say(await waitUntil { !cache.isMemoryBypassed } ? "ready" : "not ready")
        case ("bypassed", 1):
            say(await waitUntil { cache.isMemoryBypassed } ? "bypassed" : "in use")
        case ("get", 2):
            let value = try? await cache.value(forKey: words[1]) { _ in throw Failed() }
            say(value.map { "value \($0)" } ?? "failed")
        case ("set", 3):
            do {
                try await cache.setValue(words[2], forKey: words[1])
                say("ok")
            } catch {
                say("error \(error)")
            }
        case ("remove", 2):
            do {
                try await cache.removeValue(forKey: words[1])
                say("ok")
            } catch {
                say("error \(error)")
            }
        case ("removeall", 1):
            do {
                try await cache.removeAll()
                say("ok")
            } catch {
                say("error \(error)")
            }
        case ("memory", 2):
            say(cache.memory.peekValue(forKey: words[1]).map { "value \($0)" } ?? "nil")
        case ("dropped", 2):
            say(await waitUntil { cache.memory.peekValue(forKey: words[1]) == nil } ? "dropped" : "held")
        case ("quit", 1):
            return
        default:
            say("unknown command: \(line)")
        }
    }
}

/// The chaos log: lines appended by many tasks, one write each.
private final class Log: Sendable {
    let handle: FileHandle
    init(path: String) throws {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        guard let handle = FileHandle(forWritingAtPath: path) else { throw Failed() }
        self.handle = handle
    }
    func append(_ line: String) { handle.write(Data((line + "\n").utf8)) }
}

/// Counts the operations of a chaos run done, and reports progress.
private actor Counter {
    var done = 0
    func count() {
        done += 1
        if done % 100 == 0 { say("progress \(done)") }
    }
}

private func chaos(_ arguments: [String]) async throws {
    guard arguments.count == 12, let port = Int(arguments[2]), let writers = Int(arguments[6]),
        let readers = Int(arguments[7]), let operations = Int(arguments[8]), let keys = Int(arguments[9]),
        let seed = UInt64(arguments[10])
    else {
        FileHandle.standardError.write(Data("usage: --chaos PORT PREFIX INVALIDATION ID W R OPS KEYS SEED LOG\n".utf8))
        exit(2)
    }
    let id = arguments[5]
    let cache = makeCache(port: port, prefix: arguments[3], invalidation: arguments[4], password: nil)
    let log = try Log(path: arguments[11])
    let counter = Counter()
    let share = operations / (writers + readers)
    _ = await waitUntil { !cache.isMemoryBypassed }
    say("ready")
    await withTaskGroup(of: Void.self) { group in
        for worker in 0..<(writers + readers) {
            group.addTask {
                var random = SplitMix64(seed: seed &* 1_000 &+ UInt64(worker))
                var written = 0
                for _ in 0..<share {
                    let key = "c\(Int.random(in: 0..<keys, using: &random))"
                    let start = monotonicNanoseconds()
                    if worker < writers {
                        written += 1
                        let value = "\(id)-\(worker)-\(written)"
                        let outcome: String
                        do {
                            try await cache.setValue(value, forKey: key)
                            outcome = "ok"
                        } catch {
                            outcome = "failed"
                        }
                        log.append("W \(id) \(key) \(value) \(start) \(monotonicNanoseconds()) \(outcome)")
                        // As a real writer would, wait a little after a failure.
                        if outcome == "failed" { try? await Task.sleep(for: .milliseconds(5)) }
                    } else {
                        let value = try? await cache.value(forKey: key) { _ in throw Failed() }
                        log.append("R \(id) \(key) \(value ?? "-") \(start) \(monotonicNanoseconds())")
                        // Memory hits are quick: a pause keeps the readers reading while the
                        // writers write, rather than finishing first.
                        try? await Task.sleep(for: value == nil ? .milliseconds(5) : .microseconds(300))
                    }
                    await counter.count()
                }
            }
        }
    }
    say("done")
    // Stays connected until told to quit, so that the other process's faults still find it.
    while let line = readLine(), line != "quit" {}
}

/// `redis [--chaos] PORT …` (`arguments[0]` is the subcommand).
func redisNearCache(_ arguments: [String]) async throws -> Never {
    if arguments.count > 1, arguments[1] == "--chaos" {
        try await chaos(arguments)
    } else if arguments.count == 4 || arguments.count == 5, let port = Int(arguments[1]) {
        let cache = makeCache(
            port: port,
            prefix: arguments[2],
            invalidation: arguments[3],
            password: arguments.count == 5 ? arguments[4] : nil
        )
        await interactive(cache)
    } else {
        FileHandle.standardError.write(
            Data("usage: CacheKitTestHelper redis PORT PREFIX INVALIDATION [PASSWORD]\n".utf8)
        )
        exit(2)
    }
    exit(0)
}
#endif
