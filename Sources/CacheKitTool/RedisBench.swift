#if Redis
import CacheKit
import CacheKitBenchSupport
import CacheKitRedis
import CacheKitTestSupport
import Foundation
import Synchronization

/// `cachekit bench --redis`: the Redis level against one `GET` round trip on the same server, in
/// one run. Starts its own `redis-server` on a free loopback port; without one it says so and
/// measures nothing.
enum RedisBench {
    static let usage = """
        usage: cachekit bench --redis [options]

        Starts a redis-server (from PATH) on a free loopback port and measures, in one run:
          redis-GET        sequential    one GET round trip of RedisClient (the baseline)
          redis-GET        pipelined-16  16 GETs in flight on one connection, ns per GET
          RedisStore       get           RedisStore.entry(forKey:), one GET and the entry's header
          near-cache       hit           TieredCache over RedisStore, a memory hit
          invalidation     p50, p99      from a write by one TieredCache to the other's memory copy
                                         of the key being dropped (two stores, two connections)
        Each round runs every case once; figures are medians over rounds (invalidation: the
        percentiles over every write of every round).

        options:
          --ops N           operations per case (default 20_000; invalidation: N / 20 writes)
          --sizes N         value size in bytes (default 256)
          --repetitions N   rounds (default 5)
          --json            print a JSON array of {subject, workload, nsPerOp}
        """

    struct Row: Codable {
        var subject: String
        var workload: String
        var nsPerOp: Double
    }

    static func run(_ args: Arguments) throws {
        if args.flag("help") {
            print(usage)
            return
        }
        let ops = try args.int("ops", default: 20_000, maximum: 1 << 24)
        let size = try args.int("sizes", default: 256, maximum: 1 << 20)
        let repetitions = try args.int("repetitions", default: 5)
        let json = args.flag("json")
        guard RedisServerProcess.executable != nil else {
            let message = "cachekit bench --redis: redis-server is not on PATH (apt-get install redis-server); "
            FileHandle.standardError.write(Data((message + "nothing measured\n").utf8))
            if json { print("[]") }
            return
        }
        warnIfDebug()
        let server = try runBlocking { try await RedisServerProcess.start() }
        defer { server.stop() }
        let rows = try measure(server: server, ops: ops, valueBytes: size, repetitions: repetitions, quiet: json)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(rows.map(\.0)), as: UTF8.self))
        } else {
            printTable(rows, ops: ops, valueBytes: size, repetitions: repetitions)
        }
    }

    static func measure(
        server: RedisServerProcess,
        ops: Int,
        valueBytes: Int,
        repetitions: Int,
        quiet: Bool
    ) throws -> [(Row, BenchResult?)] {
        let configuration = server.configuration()
        let client = RedisClient(configuration: configuration)
        let store = RedisStore(configuration: configuration, keyPrefix: "bench:")
        let writerStore = RedisStore(configuration: configuration, keyPrefix: "bench:")
        let reader = TieredCache<String, Data>(countLimit: 1_000, store: store, codec: .data, keys: .description)
        let writer = TieredCache<String, Data>(countLimit: 1_000, store: writerStore, codec: .data, keys: .description)
        defer {
            runBlocking {
                try? await reader.close()
                try? await writer.close()
                await client.close()
            }
        }
        let value = Data((0..<valueBytes).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try runBlocking {
            try await reader.setValue(value, forKey: "hot")
            try await client.set("raw", to: Array(value))
            // The near cache's memory level is in use once the invalidation connection is armed.
            for _ in 0..<10_000 where reader.isMemoryBypassed || writer.isMemoryBypassed {
                try await Task.sleep(for: .milliseconds(1))
            }
            _ = await reader.value(forKey: "hot")
        }
        let cases = [
            BenchCase("redis-GET", policy: "sequential") {
                timed(ops) { count in for _ in 0..<count { blackHole(try await client.get("raw")) } }
            },
            BenchCase("redis-GET", policy: "pipelined-16") {
                timed(ops) { count in
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for lane in 0..<16 {
                            group.addTask {
                                for _ in stride(from: lane, to: count, by: 16) {
                                    blackHole(try await client.get("raw"))
                                }
                            }
                        }
                        try await group.waitForAll()
                    }
                }
            },
            BenchCase("RedisStore", policy: "get") {
                timed(ops) { count in for _ in 0..<count { blackHole(try await store.entry(forKey: "hot")) } }
            },
            BenchCase("near-cache", policy: "hit") {
                timed(ops * 50) { count in
                    for _ in 0..<count { blackHole(await reader.value(forKey: "hot")) }
                    precondition(reader.memory.peekValue(forKey: "hot") != nil, "the near cache's hit left memory")
                }
            },
        ]
        let results = runRounds(cases, workload: "redis", repetitions: repetitions, quiet: quiet)
        var rows = results.map { (Row(subject: $0.subject, workload: $0.policy, nsPerOp: $0.nsPerOp), Optional($0)) }
        let latencies = try runBlocking {
            try await invalidationLatencies(
                writer: writer,
                reader: reader,
                store: store,
                writes: max(20, ops / 20) * repetitions
            )
        }
        rows.append((Row(subject: "invalidation", workload: "p50", nsPerOp: percentile(latencies, 0.50)), nil))
        rows.append((Row(subject: "invalidation", workload: "p99", nsPerOp: percentile(latencies, 0.99)), nil))
        return rows
    }

    /// Runs `body` with `count` and returns its ns per operation.
    static func timed(_ count: Int, _ body: @escaping @Sendable (Int) async throws -> Void) -> Double {
        try! runBlocking {
            let start = ContinuousClock.now
            try await body(count)
            return (ContinuousClock.now - start).nanoseconds / Double(count)
        }
    }

    /// For each of `writes` writes by `writer`: the nanoseconds from just before the write to
    /// `reader`'s memory copy of the key being dropped. A handler added to the reader's store
    /// after the reader's own hears each invalidation once the reader has applied it.
    static func invalidationLatencies(
        writer: TieredCache<String, Data>,
        reader: TieredCache<String, Data>,
        store: RedisStore,
        writes: Int
    ) async throws -> [Double] {
        let keys = (0..<64).map { "invalidation-\($0)" }
        for key in keys { try await writer.setValue(Data([0]), forKey: key) }
        let watched = _Mutex<String?>(nil)
        let (drops, dropped) = AsyncStream.makeStream(of: ContinuousClock.Instant.self)
        let token = store.addInvalidationHandler { event in
            guard case .entries(let storeKeys) = event else { return }
            let hit = watched.withLock { key -> Bool in
                guard let watching = key, storeKeys.contains(watching) else { return false }
                key = nil
                return true
            }
            if hit { dropped.yield(ContinuousClock.now) }
        }
        defer { store.removeInvalidationHandler(token) }
        var iterator = drops.makeAsyncIterator()
        var latencies: [Double] = []
        latencies.reserveCapacity(writes)
        for index in 0..<writes {
            let key = keys[index % keys.count]
            // The reader holds the key (a store hit: no write of its own, so no echo of one).
            for _ in 0..<1_000 where reader.memory.peekValue(forKey: key) == nil {
                _ = await reader.value(forKey: key)
            }
            guard reader.memory.peekValue(forKey: key) != nil else { continue }
            watched.withLock { $0 = key }
            let start = ContinuousClock.now
            try await writer.setValue(Data([UInt8(truncatingIfNeeded: index)]), forKey: key)
            guard let end = await iterator.next() else { break }
            latencies.append((end - start).nanoseconds)
        }
        return latencies.sorted()
    }

    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        guard !sorted.isEmpty else { return .nan }
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
    }

    static func printTable(_ rows: [(Row, BenchResult?)], ops: Int, valueBytes: Int, repetitions: Int) {
        print(
            "cachekit bench --redis: \(valueBytes)-byte values over loopback, median of "
                + "\(repetitions) rounds of \(ops) ops"
        )
        let baseline = rows.first { $0.0.subject == "redis-GET" && $0.0.workload == "sequential" }
        let table = rows.map { row, result -> [String] in
            var versus = ""
            if let baseline, !(row.subject == "redis-GET" && row.workload == "sequential") {
                let ratio =
                    result.flatMap { r in baseline.1.map { r.ratio(to: $0) } } ?? row.nsPerOp / baseline.0.nsPerOp
                versus = "\(formatRatio(ratio)) redis-GET"
            }
            return [row.subject, row.workload, String(format: "%.0f", row.nsPerOp), versus]
        }
        printAligned(header: ["subject", "workload", "ns/op", "vs"], rows: table, rightAligned: [2])
    }
}
#else
import CacheKitBenchSupport

/// Without the Redis trait, `bench --redis` says how to build the tool with it.
enum RedisBench {
    static let usage = """
        usage: cachekit bench --redis [options]

        Measures the Redis level against one GET round trip. This build of cachekit has no Redis
        level: build it with CacheKit's Redis trait,
          swift run -c release --traits Redis cachekit bench --redis
        """

    static func run(_ args: Arguments) throws {
        throw Arguments.Failure(description: "bench --redis needs the Redis trait (swift run --traits Redis cachekit)")
    }
}
#endif
