import CacheKit
import CacheKitTestSupport
import Foundation
import Testing

@testable import CacheKitSimulator

/// `../shared/traces/` beside the package, when this checkout has it (`CACHEKIT_TRACE_DIRECTORY`
/// names another folder instead).
enum SharedTraces {
    static let directory =
        ProcessInfo.processInfo.environment["CACHEKIT_TRACE_DIRECTORY"].map { URL(fileURLWithPath: $0) }
        ?? URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("shared/traces")
    static func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// The traces are absent under CI.
    typealias Missing = MissingTraces

    /// The condition of a trace suite's `.enabled` trait: whether the suite runs. It runs when
    /// the folder's `README.md` (the reference figures) is present. When it is absent the suite
    /// skips, except under CI (`CI=true` in `environment`), where this throws ``Missing`` and
    /// the suite fails: a CI run without the traces must not pass by skipping them.
    static func required(
        in folder: URL = directory,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> Bool {
        let path = folder.appendingPathComponent("README.md").path
        if FileManager.default.fileExists(atPath: path) { return true }
        if environment["CI"] == "true" { throw Missing(path: path) }
        return false
    }
}

@Suite("OPT and the simulator")
struct SimulatorTests {
    /// A plainly written Belady: on a miss with a full cache, scan forward for each cached key.
    static func referenceOPT(_ keys: [Int], size: Int) -> Int {
        var cached: [Int] = []
        var misses = 0
        for (i, key) in keys.enumerated() {
            if cached.contains(key) { continue }
            misses += 1
            if cached.count == size {
                let victim = cached.max { a, b in
                    (keys[(i + 1)...].firstIndex(of: a) ?? Int.max) < (keys[(i + 1)...].firstIndex(of: b) ?? Int.max)
                }!
                cached.removeAll { $0 == victim }
            }
            cached.append(key)
        }
        return misses
    }

    @Test("OPT agrees with a plainly written Belady on random traces")
    func optMatchesReference() {
        var state: UInt64 = 7
        for round in 0..<200 {
            let length = 1 + round % 60
            let keySpace = 2 + round % 9
            let keys = (0..<length).map { _ in
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return Int(state >> 33) % keySpace
            }
            for size in 1...4 {
                #expect(
                    Simulator.optimal(keys, size: size).misses == Self.referenceOPT(keys, size: size),
                    "keys \(keys) size \(size)"
                )
            }
        }
    }

    @Test("a workload with an impossible parameter stops, naming it")
    func workloadPreconditions() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = Workload.loop(keys: 0, requests: 10).trace()
        }.map { #expect(String(decoding: $0.standardErrorContent, as: UTF8.self).contains("keys must be positive")) }
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = Workload.zipfWithScans(keys: 5, skew: 1, requests: 10, scanEvery: 0, scanLength: 1).trace()
        }.map { #expect(String(decoding: $0.standardErrorContent, as: UTF8.self).contains("scanEvery")) }
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = Workload.zipf(keys: 5, skew: .nan, requests: 10).trace()
        }.map { #expect(String(decoding: $0.standardErrorContent, as: UTF8.self).contains("skew")) }
    }

    @Test("OPT never misses more than any policy")
    func optIsABound() {
        let trace = Workload.standard.trace()
        let opt = Simulator.optimal(trace.keys, size: 2000)
        for policy in EvictionPolicy.allCases {
            #expect(opt.misses <= Simulator.replay(trace.keys, policy: policy, size: 2000).misses, "\(policy)")
        }
    }

    @Test("synthetic workloads are repeatable and shaped as described")
    func workloads() {
        #expect(Workload.standard.trace().keys == Workload.standard.trace().keys)
        #expect(Workload.standard.trace().keys.count == 1_000_000)
        let loop = Workload.loop(keys: 10, requests: 25).trace().keys
        #expect(loop == (0..<25).map { $0 % 10 })
        let zipf = Workload.zipf(keys: 1000, skew: 1.0, requests: 100_000).trace().keys
        let rank0 = zipf.filter { $0 == 0 }.count
        let rank9 = zipf.filter { $0 == 9 }.count
        #expect(rank0 > 5 * rank9, "rank 1 is ten times as popular as rank 10 at skew 1")
        #expect(zipf.allSatisfy { (0..<1000).contains($0) })
        let scans = Workload.zipfWithScans(keys: 100, skew: 0.9, requests: 1000, scanEvery: 300, scanLength: 50)
            .trace().keys
        #expect(scans.count == 1000)
        #expect(Array(scans[300..<350]) == Array(100..<150), "the first scan: 50 fresh keys after 300 requests")
    }

    @Test("--rounds keeps the fastest round, and every round replays to the same counts")
    func fastestRound() {
        var times = [0.5, 0.2, 0.9, 0.3][...]
        let best = Simulator.fastest(of: 4) {
            SimulationResult(policy: "lru", size: 1, requests: 10, hits: 4, misses: 6, seconds: times.popFirst()!)
        }
        #expect(best.seconds == 0.2 && times.isEmpty)
        let keys = Workload.zipf(keys: 1_000, skew: 0.9, requests: 20_000).trace(seed: 3).keys
        let once = Simulator.replay(keys, policy: .s3fifo, size: 100)
        let thrice = Simulator.replay(keys, policy: .s3fifo, size: 100, rounds: 3)
        #expect(thrice.hits == once.hits && thrice.misses == once.misses && thrice.requests == 20_000)
    }
}

@Suite("Trace files")
struct TraceFileTests {
    func write(_ text: String, _ name: String) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("cachekit-\(UUID().uuidString)-\(name)")
        try Data(text.utf8).write(to: url)
        return url.path
    }

    @Test("each text format reads, markers and blank lines skipped")
    func formats() throws {
        #expect(try Trace.read(path: write("1\n*\n2\n\n3\r\n", "a.trace")).keys == [1, 2, 3])
        #expect(try Trace.read(path: write("5 3 0 0\n1 1 0 0\n", "a.lis")).keys == [5, 6, 7, 1])
        #expect(try Trace.read(path: write("time,obj_id,size\n1,10,4\n2,abc,4\n3,10,4\n", "a.csv")).keys.count == 3)
        let csv = try Trace.read(path: write("t,lbn\n1,7\n2,8\n", "b.csv"), keyColumn: "lbn")
        #expect(csv.keys == [7, 8])
        #expect(try Trace.read(path: write("9\n8", "c.data"), format: .lines).keys == [9, 8])
        // CSV key fields are trimmed ("42" and " 42" are one key); blank lines before the header
        // are skipped.
        let spaced = try Trace.read(path: write("\n\na, obj_id\n1, 42\n2,42\t\n3,\tabc \n4,abc\n", "s.csv"))
        #expect(spaced.keys.count == 4 && spaced.keys[0] == 42 && spaced.keys[1] == 42)
        #expect(spaced.keys[2] == spaced.keys[3])
    }

    @Test("bad input names the file and line")
    func errors() throws {
        let bad = try write("1\n2\nx3\n", "bad.trace")
        #expect(throws: TraceError.malformedLine(path: bad, line: 3, text: "x3", expected: "one integer key")) {
            try Trace.read(path: bad)
        }
        let badArc = try write("1 2 0 0\nseven\n", "bad.lis")
        #expect(
            throws: TraceError.malformedLine(
                path: badArc,
                line: 2,
                text: "seven",
                expected: "'start count ...' with integers"
            )
        ) {
            try Trace.read(path: badArc)
        }
        // start + count past Int.max, and a count no real request has, are malformed lines,
        // not a crash or a giant allocation.
        let overflowing = try write("1 1 0 0\n9223372036854775807 2 0 0\n", "o.lis")
        #expect(
            throws: TraceError.malformedLine(
                path: overflowing,
                line: 2,
                text: "9223372036854775807 2 0 0",
                expected: "start + count within 64-bit integers"
            )
        ) {
            try Trace.read(path: overflowing)
        }
        let huge = try write("0 100000000000 0 0\n", "h.lis")
        #expect(
            throws: TraceError.malformedLine(
                path: huge,
                line: 1,
                text: "0 100000000000 0 0",
                expected: "a count of at most 1048576 blocks"
            )
        ) {
            try Trace.read(path: huge)
        }
        let emptyKey = try write("t,obj_id\n1,5\n2, \n", "k.csv")
        #expect(throws: TraceError.malformedLine(path: emptyKey, line: 3, text: "2,", expected: "a key in field 2")) {
            try Trace.read(path: emptyKey)
        }
        let unknown = try write("1\n", "x.weird")
        #expect(throws: TraceError.unknownFormat(path: unknown)) { try Trace.read(path: unknown) }
        let empty = try write("*\n\n", "e.trace")
        #expect(throws: TraceError.empty(path: empty)) { try Trace.read(path: empty) }
        let noColumn = try write("a,b\n1,2\n", "n.csv")
        #expect(throws: TraceError.missingColumn(path: noColumn, line: 1, column: "obj_id|key|id|lbn", header: "a,b")) {
            try Trace.read(path: noColumn)
        }
        // The header's own line, past blank lines before it.
        let lateHeader = try write("\n\nfoo,bar\n1,2\n", "late.csv")
        #expect(
            throws: TraceError.missingColumn(path: lateHeader, line: 3, column: "obj_id|key|id|lbn", header: "foo,bar")
        ) {
            try Trace.read(path: lateHeader)
        }
        #expect(
            "\(TraceError.missingColumn(path: "f.csv", line: 3, column: "key", header: "a"))"
                == "f.csv:3: no column 'key' in the header 'a'"
        )
        let truncated = try write(String(repeating: "x", count: 30), "t.bin")
        #expect(throws: TraceError.truncatedRecord(path: truncated, byteOffset: 24)) { try Trace.read(path: truncated) }
        #expect(throws: TraceError.self) { try Trace.read(path: "/nonexistent/trace.lis") }
        #expect(
            "\(TraceError.malformedLine(path: "f", line: 3, text: "x", expected: "y"))"
                == "f:3: malformed line 'x': expected y"
        )
    }

    @Test("the whole 64-bit range of keys reads, and a byte order mark before a CSV header is skipped")
    func keyRangeAndByteOrderMark() throws {
        let extremes = try write("-9223372036854775808\n9223372036854775807\n-1\n", "x.trace")
        #expect(try Trace.read(path: extremes).keys == [.min, .max, -1])
        let over = try write("-9223372036854775809\n", "o.trace")
        #expect(throws: TraceError.self) { try Trace.read(path: over) }
        let bom = try write("\u{FEFF}obj_id,x\n7,1\n8,1\n", "b.csv")
        #expect(try Trace.read(path: bom).keys == [7, 8])
    }

    @Test("a trace past the request limit, a folder and a missing file are refused, each saying which")
    func refusedFiles() throws {
        let arc = try write("0 3\n10 3\n20 3\n", "big.lis")
        #expect(throws: TraceError.tooManyRequests(path: arc, line: 3, limit: 8)) {
            try Trace.read(path: arc, format: nil, keyColumn: nil, limit: 8)
        }
        #expect(try Trace.read(path: arc, format: nil, keyColumn: nil, limit: 9).keys.count == 9)
        let lines = try write("1\n2\n3\n", "big.trace")
        #expect(throws: TraceError.tooManyRequests(path: lines, line: 3, limit: 2)) {
            try Trace.read(path: lines, format: nil, keyColumn: nil, limit: 2)
        }
        let records = try write(String(repeating: "x", count: 72), "big.bin")
        #expect(throws: TraceError.tooManyRequests(path: records, line: 0, limit: 2)) {
            try Trace.read(path: records, format: nil, keyColumn: nil, limit: 2)
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "cachekit-\(UUID().uuidString).trace"
        )
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(throws: TraceError.unreadable(path: folder.path, reason: "it is a directory")) {
            try Trace.read(path: folder.path)
        }
        #expect(throws: TraceError.unreadable(path: "/nonexistent/trace", reason: "no such file")) {
            try Trace.read(path: "/nonexistent/trace")
        }
        #expect(
            "\(TraceError.tooManyRequests(path: "t.lis", line: 3, limit: 8))"
                == "t.lis:3: the trace holds more than 8 requests, the most one replay keeps in memory"
        )
    }

    @Test("OPT takes any size, however far beyond the trace, without reserving memory for it")
    func optHugeSize() {
        let keys = [1, 2, 1, 3, 2]
        for size in [5, 1 << 40, Int.max] {
            let result = Simulator.optimal(keys, size: size)
            #expect(result.misses == 3)
            #expect(result.size == size)
        }
    }

    @Test("a file larger than one read chunk streams across chunk boundaries")
    func chunked() throws {
        let keys = (0..<300_000).map { $0 * 7 }
        let path = try write(keys.map(String.init).joined(separator: "\n"), "big.trace")
        #expect(try Trace.read(path: path).keys == keys)
    }
}

@Suite(
    "Reference traces",
    .enabled("../shared/traces is absent; skipped (with CI=true, a failure)") { try SharedTraces.required() }
)
struct ReferenceTraceTests {
    /// OPT misses from `../shared/traces/README.md`.
    static let opt: [(trace: String, size: Int, misses: Int)] = [
        ("OLTP.lis", 1000, 424_052), ("OLTP.lis", 2000, 361_996), ("gli.trace", 1000, 2819),
        ("gli.trace", 2000, 2529), ("loop.trace", 1000, 6500), ("sprite.trace", 708, 11561),
        ("multi2.trace", 568, 11867), ("2_pools.trace", 994, 31535), ("cloudPhysicsIO.csv", 4897, 71620),
        ("cloudPhysicsIO.oracleGeneral.bin", 4897, 71620), ("web12.keys", 1376, 19085),
    ]

    @Test("OPT reproduces the reference miss counts", arguments: opt)
    func optMisses(trace: String, size: Int, misses: Int) throws {
        let keys = try Trace.read(path: SharedTraces.path(trace), keyColumn: trace.hasSuffix(".csv") ? "lbn" : nil).keys
        #expect(Simulator.optimal(keys, size: size).misses == misses)
    }

    @Test("the CSV and the binary form of a trace hold the same keys")
    func csvMatchesBinary() throws {
        let csv = try Trace.read(path: SharedTraces.path("cloudPhysicsIO.csv"), keyColumn: "lbn")
        let bin = try Trace.read(path: SharedTraces.path("cloudPhysicsIO.oracleGeneral.bin"))
        #expect(csv.keys == bin.keys)
        #expect(csv.keys.count == 113_872)
    }

    /// The hit-ratio table of `../shared/traces/README.md`: OPT, then the reference columns ARC,
    /// S3-FIFO, LIRS, 2Q and Caffeine 2.6.2.
    static let hitRatios: [(trace: String, size: Int, opt: Double, references: [Double])] = [
        ("OLTP.lis", 1000, 0.5361, [0.3895, 0.4084, 0.3458, 0.4053, 0.3562]),
        ("OLTP.lis", 2000, 0.6040, [0.4608, 0.4701, 0.4245, 0.4651, 0.4206]),
        ("gli.trace", 1000, 0.5313, [0.2131, 0.3505, 0.5072, 0.3077, 0.4427]),
        ("gli.trace", 2000, 0.5796, [0.5741, 0.5214, 0.5796, 0.4790, 0.5711]),
        ("loop.trace", 1000, 0.9871, [0.0000, 0.8962, 0.9773, 0.9731, 0.9708]),
        ("sprite.trace", 708, 0.9137, [0.8553, 0.8615, 0.8404, 0.8574, 0.8026]),
        ("multi2.trace", 568, 0.5490, [0.3983, 0.4930, 0.5164, 0.3757, 0.5119]),
        ("2_pools.trace", 994, 0.6846, [0.5430, 0.5435, 0.5432, 0.5421, 0.5436]),
        ("cloudPhysicsIO.csv", 4897, 0.3710, [0.2272, 0.2475, 0.2482, 0.2258, 0.2518]),
        ("web12.keys", 1376, 0.8004, [0.7089, 0.7226, 0.7018, 0.7151, 0.7057]),
    ]

    @Test("the default policy meets the hit-ratio goal: the smallest mean gap to OPT, never 3 points behind")
    func hitRatioGoal() throws {
        var gap = 0.0
        var referenceGaps = [Double](repeating: 0, count: 5)
        for row in Self.hitRatios {
            let keys = try Trace.read(
                path: SharedTraces.path(row.trace),
                keyColumn: row.trace.hasSuffix(".csv") ? "lbn" : nil
            ).keys
            let hitRatio = Simulator.replay(keys, policy: .default, size: row.size).hitRatio
            gap += row.opt - hitRatio
            for (i, reference) in row.references.enumerated() { referenceGaps[i] += row.opt - reference }
            let best = row.references.max()!
            #expect(hitRatio >= best - 0.03, "\(row.trace) at \(row.size): \(hitRatio) against \(best)")
        }
        #expect(gap < referenceGaps.min()!, "mean gap \(gap * 10) points against \(referenceGaps.min()! * 10)")
    }

    @Test("replay reproduces the reference LRU and SIEVE misses on OLTP")
    func replay() throws {
        let keys = try Trace.read(path: SharedTraces.path("OLTP.lis")).keys
        #expect(Simulator.replay(keys, policy: .lru, size: 1000).misses == 614_023)
        #expect(Simulator.replay(keys, policy: .sieve, size: 2000).misses == 537_648)
    }
}

@Suite("Reference traces' condition")
struct SharedTracesRequirementTests {
    @Test("the suite runs when the traces are present; absent, it skips, or fails with CI=true, naming them")
    func condition() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("CacheKitTraces-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(try SharedTraces.required(in: folder, environment: [:]) == false)
        #expect(try SharedTraces.required(in: folder, environment: ["CI": "false"]) == false)
        let error = #expect(throws: SharedTraces.Missing.self) {
            try SharedTraces.required(in: folder, environment: ["CI": "true"])
        }
        #expect(error?.path == folder.appendingPathComponent("README.md").path)
        #expect(error?.description.contains("CI=true") == true)
        try Data("# traces\n".utf8).write(to: folder.appendingPathComponent("README.md"))
        #expect(try SharedTraces.required(in: folder, environment: ["CI": "true"]))
        #expect(try SharedTraces.required(in: folder, environment: [:]))
    }
}

/// `Simulator.replay(_:policy:size:threads:)`: a trace replayed on several threads through a
/// `Cache` reading in parallel.
@Suite("Replays on several threads")
struct ThreadedReplayTests {
    static let keys = Workload.zipf(keys: 2_000, skew: 0.9, requests: 60_000).trace(seed: 5).keys

    @Test("on one thread a Cache reading in parallel replays to the serial counts", arguments: EvictionPolicy.allCases)
    func oneThreadMatchesTheSerialReplay(policy: EvictionPolicy) {
        let serial = Simulator.replay(Self.keys, policy: policy, size: 200)
        let threaded = Simulator.replay(Self.keys, policy: policy, size: 200, threads: 1)
        #expect(threaded.hits == serial.hits, "\(policy): \(threaded.hits) hits against \(serial.hits)")
        #expect(threaded.requests == 60_000 && threaded.threads == 1)
    }

    @Test(
        "four threads replay every request once and keep the hit ratio near one thread's",
        arguments: EvictionPolicy.allCases
    )
    func fourThreadsKeepTheHitRatio(policy: EvictionPolicy) throws {
        let serial = Simulator.replay(Self.keys, policy: policy, size: 200)
        let threaded = Simulator.replay(Self.keys, policy: policy, size: 200, threads: 4)
        #expect(threaded.hits + threaded.misses == 60_000 && threaded.threads == 4)
        #expect(threaded.concurrentMisses <= threaded.misses)
        // Reads that never reached the policy would make LRU a FIFO, 5 points below it on this
        // workload; the bound leaves room for the scheduler's interleavings.
        #expect(
            abs(threaded.hitRatio - serial.hitRatio) <= 0.02,
            "\(policy): \(threaded.hitRatio) on four threads, \(serial.hitRatio) on one"
        )
        // Against one thread replaying the requests in the order the threads served them, with
        // the misses two threads made of one key at once counted as the hits that order makes
        // them, what is left is the policy's late and lost reads. W-TinyLFU's adaptive window
        // moves its hit ratio by half a point when 1% of neighbouring requests swap (OLTP at
        // 1,000 entries, one thread), so it and the adaptive policy keep the first bound only.
        let inOrder = try #require(threaded.hitsInServedOrder)
        let policyShare = Double(threaded.hits + threaded.concurrentMisses - inOrder) / 60_000
        // The bound is a point, not the half point the traces keep in the median: the tests run
        // in parallel on as few as two cores, and a thread that loses its core while replaying
        // makes the others drop reads. Reads lost wholesale cost LRU 5 points here.
        if policy != .wTinyLFU && policy != .adaptive {
            #expect(abs(policyShare) <= 0.01, "\(policy): \(policyShare * 100) points for late and lost reads")
        }
    }
}

/// The `cachekit` tool's argument checks, run as a user runs it.
@Suite("cachekit's arguments")
struct CommandLineTests {
    /// The package's executable `name`, built next to the test bundle (the test target depends
    /// on it), if it is there.
    static func executable(named name: String) -> URL? {
        var candidates: [URL] = []
        if let executable = Bundle.main.executableURL { candidates.append(executable.deletingLastPathComponent()) }
        candidates.append(URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent())
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent())
        return candidates.map { $0.appendingPathComponent(name) }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    /// `cachekit`, the command-line tool.
    static let tool = executable(named: "cachekit")
    /// `CacheKitLab`, the package's performance instruments.
    static let lab = executable(named: "CacheKitLab")

    /// Calls `body` with a new temporary directory holding a trace file named `name` with
    /// `lines`, removed when `body` returns.
    func withTrace<R>(_ lines: String, named name: String = "t.trace", _ body: (_ trace: URL) throws -> R) throws -> R {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let trace = directory.appendingPathComponent(name)
        try lines.write(to: trace, atomically: true, encoding: .utf8)
        return try body(trace)
    }

    /// Runs `program` (`cachekit` unless given) with `arguments`; its exit status, standard
    /// output and standard error (both small in these tests: each is read to its end in turn).
    func execute(
        _ arguments: [String],
        program: URL? = Self.tool
    ) throws -> (status: Int32, output: String, errors: String) {
        // The tests that call this run only when the program was found.
        try runToEnd(try #require(program), arguments)
    }

    /// Runs `program` (`cachekit` unless given) with `arguments`; its exit status and standard
    /// error.
    func run(_ arguments: [String], program: URL? = Self.tool) throws -> (status: Int32, errors: String) {
        let result = try execute(arguments, program: program)
        return (result.status, result.errors)
    }

    @Test(
        "a mistyped subcommand is refused as one, and a bad option prints its subcommand's usage",
        .enabled(if: tool != nil, "cachekit not found next to the test bundle; build it first")
    )
    func unknownSubcommandAndUsage() throws {
        let mistyped = try run(["frobnicate"])
        #expect(mistyped.status == 2)
        #expect(mistyped.errors.contains("unknown subcommand 'frobnicate'"), "\(mistyped.errors)")
        let missingTrace = try run(["missing.trace"])
        #expect(missingTrace.status != 0)
        #expect(
            !missingTrace.errors.contains("unknown subcommand"),
            "a path-like name is a trace: \(missingTrace.errors)"
        )
        let badBenchFlag = try run(["bench", "--frobnicate", "1"])
        #expect(badBenchFlag.status == 2)
        #expect(badBenchFlag.errors.contains("usage: cachekit bench [options]"), "\(badBenchFlag.errors)")
        let badSimulateFlag = try run(["simulate", "--frobnicate", "1"])
        #expect(badSimulateFlag.errors.contains("usage: cachekit simulate"), "\(badSimulateFlag.errors)")
    }

    @Test(
        "error messages write control characters escaped, and --plot says where it wrote",
        .enabled(if: tool != nil, "cachekit not found next to the test bundle; build it first")
    )
    func escapedQuotesAndPlotPath() throws {
        let mistyped = try run(["frob\u{1B}[2Jnicate\u{7}"])
        #expect(mistyped.status == 2)
        #expect(mistyped.errors.contains("unknown subcommand 'frob\\u{1B}[2Jnicate\\u{7}'"), "\(mistyped.errors)")
        #expect(!mistyped.errors.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 })
        let badSize = try run(["simulate", "--sizes", "1\n2"])
        #expect(badSize.errors.contains("'1\\n2'"), "\(badSize.errors)")
        try withTrace("1\n\u{1B}x\n") { trace in
            let malformed = try run(["simulate", trace.path, "--sizes", "1"])
            #expect(malformed.status != 0)
            #expect(malformed.errors.contains("malformed line '\\u{1B}x'"), "\(malformed.errors)")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("plot-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let plot = directory.appendingPathComponent("curves.svg").path
        let plotted = try run([
            "simulate", "--workload", "loop", "--keys", "50", "--requests", "500", "--sizes", "10", "--json", "--plot",
            plot,
        ])
        #expect(plotted.status == 0, "\(plotted.errors)")
        #expect(plotted.errors.contains("wrote the miss-ratio curves to \(plot)"), "\(plotted.errors)")
        #expect(FileManager.default.fileExists(atPath: plot))
    }

    @Test(
        "a flag that would do nothing is refused, naming it",
        .enabled(if: tool != nil, "cachekit not found next to the test bundle; build it first"),
        arguments: [
            (["--keys", "5"], "--keys applies to the built-in workload, not to a trace file"),
            (["--seed", "1"], "--seed applies to the built-in workload, not to a trace file"),
            (["--key-column", "id"], "--key-column applies to CSV traces only"),
            (["--rounds", "1001"], "--rounds must be a whole number from 1 to 1000 (got '1001')"),
            (["--threads", "1"], "--threads must be a whole number from 2 to 64 (got '1')"),
        ]
    )
    func inapplicableFlags(flags: [String], message: String) throws {
        try withTrace("1\n2\n1\n") { trace in
            let valid = try run(["simulate", trace.path, "--sizes", "1"])
            #expect(valid.status == 0, "\(valid.errors)")
            let refused = try run(["simulate", trace.path, "--sizes", "1"] + flags)
            #expect(refused.status != 0)
            #expect(refused.errors.contains(message), "\(refused.errors)")
        }
    }

    @Test(
        "simulate --threads prints each policy's hit ratio on those threads beside one thread's",
        .enabled(if: tool != nil, "cachekit not found next to the test bundle; build it first")
    )
    func simulateOnThreads() throws {
        let workload = ["simulate", "--workload", "zipf", "--keys", "500", "--requests", "20000", "--sizes", "50"]
        let json = try execute(workload + ["--policy", "lru,fifo,opt", "--threads", "3", "--json"])
        #expect(json.status == 0, "\(json.errors)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [[String: Any]])
        #expect(rows.map { $0["policy"] as? String } == ["opt", "lru", "fifo"])
        #expect(rows.map { $0["threads"] as? Int } == [nil, 3, 3], "OPT has no replay on threads")
        for row in rows.dropFirst() {
            let hits = try #require(row["threadedHits"] as? Int)
            let inOrder = try #require(row["threadedHitsInServedOrder"] as? Int)
            let bothMissed = try #require(row["threadedConcurrentMisses"] as? Int)
            #expect((0...20_000).contains(hits) && (0...20_000).contains(inOrder) && (0...20_000).contains(bothMissed))
            #expect(abs(try #require(row["threadedHitRatio"] as? Double) - Double(hits) / 20_000) < 1e-9)
        }
        let table = try execute(workload + ["--policy", "lru", "--threads", "2"])
        #expect(table.status == 0, "\(table.errors)")
        #expect(table.output.contains("on 2 threads, each taking the next request"), "\(table.output)")
        #expect(table.output.contains("served order"), "\(table.output)")
    }

    /// The rows `cachekit bench --json` prints for `arguments` (after `bench`), expecting it to
    /// succeed; or those of `CacheKitLab`, given it as `program` and its subcommand first in
    /// `arguments`.
    func benchRows(_ arguments: [String], program: URL? = Self.tool) throws -> [[String: Any]] {
        let process = Process()
        process.executableURL = program
        process.arguments = (program == Self.tool ? ["bench"] : []) + arguments + ["--json"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return try JSONSerialization.jsonObject(with: data) as? [[String: Any]] ?? []
    }

    @Test(
        "bench measures an unbounded SharedCache on 1 and 2 threads, with no policy",
        .enabled(if: tool != nil, "cachekit not found next to the test bundle; build it first")
    )
    func benchUnboundedSharedCache() throws {
        let rows = try benchRows([
            "--subjects", "SharedCache-unbounded", "--workloads", "read90", "--threads", "1,2",
            "--ops", "2000", "--capacity", "500", "--repetitions", "1",
        ])
        #expect(rows.map { $0["subject"] as? String } == ["SharedCache-unbounded", "SharedCache-unbounded"])
        #expect(rows.map { $0["policy"] as? String } == ["", ""])
        #expect(rows.map { $0["threads"] as? Int } == [1, 2])
        #expect(rows.allSatisfy { ($0["nsPerOp"] as? Double ?? 0) > 0 })
    }

    @Test(
        "bench measures Cache-hasher on every workload and Cache-noevict on the mix only",
        .enabled(if: tool != nil, "cachekit not found next to the test bundle; build it first")
    )
    func benchCacheVariants() throws {
        let rows = try benchRows([
            "--subjects", "Cache-noevict,Cache-hasher", "--workloads", "get-hit,mix", "--policies", "lru",
            "--threads", "1", "--ops", "5000", "--capacity", "500", "--repetitions", "1",
        ])
        let cases = rows.map { "\($0["workload"] as? String ?? "?") \($0["subject"] as? String ?? "?")" }
        #expect(cases == ["get-hit Cache-hasher", "mix Cache-noevict", "mix Cache-hasher"])
        #expect(rows.allSatisfy { ($0["nsPerOp"] as? Double ?? 0) > 0 })
    }

    @Test(
        "bench offers the comparisons for users, not the lab's sketches",
        .enabled(if: tool != nil, "cachekit not found next to the test bundle; build it first")
    )
    func benchLeavesSketchesToTheLab() throws {
        let refused = try run(["bench", "--subjects", "SlotSketch", "--ops", "10"])
        #expect(refused.status != 0)
        #expect(refused.errors.contains("--subjects: unknown value 'SlotSketch'"), "\(refused.errors)")
    }

    @Test(
        "the lab measures the LRU sketches, bare and locked, on every workload asked",
        .enabled(if: lab != nil, "CacheKitLab not found next to the test bundle; build it first")
    )
    func labSketches() throws {
        let sketches = ["SlotSketch", "SlotSketch+lock", "SlotSketch+spin", "InlineSketch", "InlineSketch+lock"]
        let rows = try benchRows(
            [
                "sketches", "--subjects", (["Dictionary"] + sketches).joined(separator: ","), "--workloads",
                "get-hit,mix", "--ops", "5000", "--capacity", "500", "--repetitions", "1",
            ],
            program: Self.lab
        )
        let cases = rows.map { "\($0["workload"] as? String ?? "?") \($0["subject"] as? String ?? "?")" }
        #expect(
            cases == (["Dictionary"] + sketches).map { "get-hit \($0)" }
                + (["Dictionary"] + sketches).map { "mix \($0)" }
        )
        #expect(rows.allSatisfy { ($0["nsPerOp"] as? Double ?? 0) > 0 })
    }

    @Test(
        "the lab measures read90 scaling of SharedCache variants on 1 and 2 threads",
        .enabled(if: lab != nil, "CacheKitLab not found next to the test bundle; build it first")
    )
    func labScaling() throws {
        let rows = try benchRows(
            ["scaling", "--ops", "2000", "--capacity", "500", "--repetitions", "1"],
            program: Self.lab
        )
        let subjects = ["SharedCache", "SharedCache-unbounded", "SharedCache-private", "Dictionary-reads"]
        let cases = rows.map { "\($0["subject"] as? String ?? "?") \($0["threads"] as? Int ?? 0)" }
        #expect(cases == subjects.map { "\($0) 1" } + subjects.map { "\($0) 2" })
        #expect(rows.allSatisfy { ($0["nsPerOp"] as? Double ?? 0) > 0 })
    }

    @Test(
        "bench runs Dictionary's reads on every thread count and its writes on one thread",
        .enabled(if: tool != nil, "cachekit not found next to the test bundle; build it first")
    )
    func benchDictionaryThreads() throws {
        let rows = try benchRows([
            "--subjects", "Dictionary", "--workloads", "get-hit,get-miss,mix", "--threads", "1,2",
            "--ops", "2000", "--capacity", "500", "--repetitions", "1",
        ])
        let cases = rows.map { "\($0["workload"] as? String ?? "?") \($0["threads"] as? Int ?? 0)" }
        #expect(cases == ["get-hit 1", "get-hit 2", "get-miss 1", "get-miss 2", "mix 1"])
    }

    @Test(
        "numbers too large for memory are refused naming their flag; sizes beyond the trace work",
        .enabled(if: tool != nil, "cachekit not found next to the test bundle; build it first"),
        arguments: [
            (["simulate", "--workload", "zipf", "--keys", "9223372036854775807", "--requests", "10"], "--keys"),
            (["simulate", "--workload", "loop", "--keys", "5", "--requests", "9223372036854775807"], "--requests"),
            (["bench", "--capacity", "5000000000000000000", "--subjects", "Dictionary"], "--capacity"),
            (["bench", "--ops", "9223372036854775807", "--subjects", "Dictionary"], "--ops"),
            (["bench", "--memory", "--entries", "99999999999999"], "--entries"),
        ]
    )
    func hugeNumbers(arguments: [String], flag: String) throws {
        let refused = try run(arguments)
        #expect(refused.status != 0)
        #expect(refused.errors.contains("\(flag) must be a whole number from 1 to"), "\(refused.errors)")
    }

    @Test(
        "a size far beyond the trace simulates every policy and OPT",
        .enabled(if: tool != nil, "cachekit not found next to the test bundle; build it first")
    )
    func sizeBeyondTrace() throws {
        try withTrace("1\n2\n1\n") { trace in
            let result = try run(["simulate", trace.path, "--size", "9223372036854775807"])
            #expect(result.status == 0, "\(result.errors)")
        }
    }

    @Test(
        "policies that tie are recommended in the order they were asked for, the same every run",
        .enabled(if: tool != nil, "cachekit not found next to the test bundle; build it first")
    )
    func tiesAreDeterministic() throws {
        try withTrace("1\n2\n1\n2\n3\n1\n") { trace in try checkTies(trace) }
    }

    func checkTies(_ trace: URL) throws {
        for order in ["sieve,lru,fifo", "fifo,sieve,lru"] {
            for _ in 0..<3 {  // each process seeds its hashing anew
                let result = try execute(["simulate", trace.path, "--sizes", "3", "--policy", order])
                #expect(result.status == 0)
                let first = String(order.prefix { $0 != "," })
                #expect(result.output.contains("at 3 entries the best policy is \(first) "), "\(result.output)")
                #expect(result.output.contains("recommended policy for this workload: \(first) "), "\(result.output)")
            }
        }
    }

    @Test(
        "the miss-ratio plot is well-formed XML whatever the trace's name",
        .enabled(if: tool != nil, "cachekit not found next to the test bundle; build it first")
    )
    func plotEscapesNames() throws {
        try withTrace("1\n2\n1\n3\n", named: "we&ird<\"x\u{01}.trace") { trace in try checkPlot(of: trace) }
    }

    func checkPlot(of trace: URL) throws {
        let plot = trace.deletingLastPathComponent().appendingPathComponent("mrc.svg")
        let result = try run(["simulate", trace.path, "--sizes", "1,2", "--plot", plot.path])
        #expect(result.status == 0, "\(result.errors)")
        // What would make it malformed XML: a control character XML does not allow, or a markup
        // character of the name left raw. (No XML parser here: FoundationXML needs libxml2.)
        let svg = try String(contentsOf: plot, encoding: .utf8)
        #expect(!svg.unicodeScalars.contains { $0.value < 0x20 && ![0x09, 0x0A, 0x0D].contains($0.value) })
        #expect(svg.contains("we&amp;ird&lt;&quot;x\u{FFFD}.trace"), "\(svg)")
        #expect(!svg.contains("we&ird"))
    }

    @Test(
        "bench --memory measures the subjects and policies asked for",
        .enabled(if: tool != nil, "cachekit not found next to the test bundle; build it first")
    )
    func memoryBenchSubjects() throws {
        let rows = try benchRows([
            "--memory", "--entries", "1000", "--subjects", "SerialCache,Dictionary", "--policies", "fifo",
        ])
        let cases = rows.map { "\($0["subject"] as? String ?? "?") \($0["policy"] as? String ?? "?")" }
        #expect(cases == ["Dictionary ", "SerialCache fifo"])
    }

    #if os(Linux)
    /// The children of `pid` whose command line holds `marker` (from /proc).
    static func children(of pid: Int32, holding marker: String) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { candidate in
            guard let status = try? String(contentsOfFile: "/proc/\(candidate)/status", encoding: .utf8),
                status.split(separator: "\n").contains("PPid:\t\(pid)"),
                let command = try? String(contentsOfFile: "/proc/\(candidate)/cmdline", encoding: .utf8)
            else { return false }
            return command.contains(marker)
        }
    }

    /// Whether `pid` still runs (a zombie, waiting for a parent to reap it, does not).
    static func isRunning(_ pid: Int32) -> Bool {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return false }
        return !status.contains("State:\tZ")
    }

    @Test(
        "a bench --memory child ends when its parent is killed with SIGKILL",
        .enabled(if: tool != nil, "cachekit not found next to the test bundle; build it first")
    )
    func memoryChildEndsWithParent() throws {
        let parent = Process()
        parent.executableURL = Self.tool
        // NSCache fills slowly: 5,000,000 entries keep the child busy for seconds.
        parent.arguments = ["bench", "--memory", "--subjects", "NSCache", "--entries", "5000000"]
        parent.standardOutput = FileHandle.nullDevice
        parent.standardError = FileHandle.nullDevice
        try parent.run()
        // Polled on this thread, without suspending: an async wait, resumed by a concurrency
        // pool that the other tests of a parallel run keep busy, woke only after the child had
        // finished (and the parent with it). Waited for by the clock, not by a count of tries.
        var deadline = ContinuousClock.now.advanced(by: .seconds(60))
        var child: Int32?
        while child == nil, parent.isRunning, ContinuousClock.now < deadline {
            child = Self.children(of: parent.processIdentifier, holding: "--memory-one").first
            if child == nil { usleep(2_000) }
        }
        let parentRan = parent.isRunning
        kill(parent.processIdentifier, SIGKILL)
        parent.waitUntilExit()
        let started = try #require(
            child,
            "the measuring child never started (parent still running: \(parentRan), status \(parent.terminationStatus))"
        )
        deadline = ContinuousClock.now.advanced(by: .seconds(60))
        var stillRunning = true
        while stillRunning, ContinuousClock.now < deadline {
            stillRunning = Self.isRunning(started)
            if stillRunning { usleep(2_000) }
        }
        #expect(!stillRunning, "the child outlived its parent")
        if stillRunning { kill(started, SIGKILL) }
    }
    #endif

    @Test(
        "the lab's line-transfer measures a time, and refuses flags it does not take",
        .enabled(if: lab != nil, "CacheKitLab not found next to the test bundle; build it first")
    )
    func lineTransfer() throws {
        let measured = try execute(
            ["line-transfer", "--ops", "1000", "--repetitions", "1", "--json"],
            program: Self.lab
        )
        #expect(measured.status == 0, "\(measured.errors)")
        let object = try JSONSerialization.jsonObject(with: Data(measured.output.utf8)) as? [String: Double]
        #expect((object?["lineTransferNanoseconds"] ?? 0) > 0, "\(measured.output)")
        for flag in ["--subjects", "--threads"] {
            let refused = try run(["line-transfer", "--ops", "10", flag, "2"], program: Self.lab)
            #expect(refused.status != 0)
            #expect(refused.errors.contains("unknown option '\(flag)'"), "\(refused.errors)")
        }
    }

    @Test(
        "bench runs a case named twice in a list once",
        .enabled(if: tool != nil, "cachekit not found next to the test bundle; build it first")
    )
    func benchListsDeduplicated() throws {
        let rows = try benchRows([
            "--subjects", "Cache,Cache", "--workloads", "get-hit,get-hit", "--policies", "lru,lru",
            "--threads", "1,1", "--ops", "2000", "--capacity", "500", "--repetitions", "1",
        ])
        #expect(rows.count == 1)
    }

    @Test(
        "trace flags without a trace are refused",
        .enabled(if: tool != nil, "cachekit not found next to the test bundle; build it first")
    )
    func traceFlagsWithoutTrace() throws {
        let refused = try run(["simulate", "--requests", "100", "--keys", "10", "--format", "csv"])
        #expect(refused.status != 0)
        #expect(refused.errors.contains("--format applies to a trace file; none was given"), "\(refused.errors)")
    }
}
