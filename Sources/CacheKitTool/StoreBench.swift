import CacheKit
import CacheKitBenchSupport
import CacheKitSimulator
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `cachekit bench --stores`: ns/op of the second levels (`DiskStore`, `SQLiteStore`,
/// `TieredCache`) against plain POSIX file calls and plain SQLite statements doing the same work,
/// all in one run.
enum StoreBench {
    static let subjects =
        ["DiskStore", "raw-file", "DiskStore-flushed", "raw-file-nosync"] + sqliteSubjects + [
            "TieredCache", "Cache", "dir-scan",
        ]
    /// Subjects that differ from another only in how they write: they run the set workload alone.
    static let writeOnly: Set = ["DiskStore-flushed", "raw-file-nosync"]
    static let workloads = ["get-hit", "get-miss", "set", "open"]

    static let usage = """
        usage: cachekit bench --stores [options]

        Measures ns/op of the stores and their baselines, each doing the same work, in one run:
          DiskStore     a file per entry, its own index;          raw-file-nosync  temporary file,
                        files not flushed (the default)                            write, rename (set)
          DiskStore-flushed  the same, durability .powerLoss     raw-file    open/pread/close to read;
                        (set)                                                temporary file, write, fsync,
                                                                             rename to write
          SQLiteStore   one WAL database                          raw-sqlite  one prepared SELECT or
                                                                              INSERT OR REPLACE on the
                                                                              same table
          TieredCache   a Cache in front of a DiskStore           Cache       a plain Cache<String, Data>
        SQLiteStore and raw-sqlite are measured where cachekit is built with CacheKit's SQLite trait
        (swift run -c release --traits SQLite cachekit bench --stores).
        Workloads: get-hit (reads of stored keys; TieredCache's hit its memory level), get-miss
        (reads of absent keys), set (writes over the stored keys), each at every value size; and
        open (the time to open a DiskStore of --open-entries entries, against dir-scan: listing
        and stat-ing the same files, as a cache that keeps no index must at startup). Each round
        runs every case once; figures are medians over rounds, ratios medians of per-round ratios.

        options:
          --sizes LIST        value sizes in bytes (default 256,4096,262144)
          --entries N         entries stored before the reads (default 1_000)
          --ops N             operations per case (default 2_000; at most 64 MiB of values per case)
          --open-entries N    entries of the store the open workload opens (default 100_000;
                              writing them once takes about a minute)
          --repetitions N     rounds (default 5)
          --workloads LIST    \(workloads.joined(separator: ",")) (default: all)
          --subjects LIST     \(subjects.joined(separator: ",")) (default: all)
          --directory PATH    where the stores are made (default: a new temporary directory,
                              removed at the end)
          --json              print a JSON array of {subject, workload, valueBytes, entries, nsPerOp}
        """

    /// One figure of the table or the JSON.
    struct Row: Codable {
        var subject: String
        var workload: String
        var valueBytes: Int
        var entries: Int
        var nsPerOp: Double
    }

    /// A row with the rounds it came from (for ratios of per-round figures).
    struct Measured {
        var row: Row
        var result: BenchResult
    }

    struct Options {
        var sizes: [Int]
        var entries: Int
        var ops: Int
        var openEntries: Int
        var repetitions: Int
        var workloads: [String]
        var subjects: Set<String>
        var root: URL
        var json: Bool
    }

    static func run(_ args: Arguments) throws {
        if args.flag("help") {
            print(usage)
            return
        }
        let given = args.string("directory")
        let root =
            given.map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("cachekit-stores-\(getpid())")
        let options = Options(
            sizes: try args.list("sizes", default: ["256", "4096", "262144"], allowed: nil).map { text in
                guard let size = Int(text), (1...(64 << 20)).contains(size) else {
                    throw Arguments.Failure(
                        description: "--sizes: '\(TraceError.escaped(text))' is not a size from 1 byte to 64 MiB"
                    )
                }
                return size
            },
            entries: try args.int("entries", default: 1_000, maximum: 1 << 20),
            ops: try args.int("ops", default: 2_000, maximum: 1 << 24),
            openEntries: try args.int("open-entries", default: 100_000, maximum: 1 << 22),
            repetitions: try args.int("repetitions", default: 5),
            workloads: try args.list("workloads", default: workloads, allowed: workloads),
            subjects: Set(try args.list("subjects", default: subjects, allowed: subjects)),
            root: root,
            json: args.flag("json")
        )
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { if given == nil { try? FileManager.default.removeItem(at: root) } }
        warnIfDebug()
        var rows: [Measured] = []
        for workload in options.workloads where workload != "open" {
            for size in options.sizes {
                rows += try measure(workload, valueBytes: size, options)
            }
        }
        if options.workloads.contains("open") { rows += try measureOpen(options) }
        if options.json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(rows.map(\.row)), as: UTF8.self))
        } else {
            printTable(rows, options)
        }
    }

    /// The ops of one case at `valueBytes`: `--ops`, but at most 64 MiB of values.
    static func ops(_ options: Options, valueBytes: Int) -> Int {
        max(16, min(options.ops, (64 << 20) / valueBytes))
    }

    /// Runs every chosen subject on `workload` with values of `valueBytes`.
    static func measure(_ workload: String, valueBytes: Int, _ options: Options) throws -> [Measured] {
        let count = ops(options, valueBytes: valueBytes)
        let entries = options.entries
        var random = SplitMix64(seed: 42)
        let value = Data((0..<valueBytes).map { _ in UInt8.random(in: 0...255, using: &random) })
        let keys: [String] =
            switch workload {
            case "get-miss": (0..<count).map { "missing-\($0)" }
            default: (0..<count).map { _ in "key-\(Int.random(in: 0..<entries, using: &random))" }
            }
        var subjects: [(String, any StoreSubject)] = []
        for name in Self.subjects where options.subjects.contains(name) && name != "dir-scan" {
            if writeOnly.contains(name) && workload != "set" { continue }
            let directory = options.root.appendingPathComponent("\(name)-\(workload)-\(valueBytes)")
            guard let subject = try makeSubject(name, directory: directory, capacity: entries) else { continue }
            try runBlocking {
                for index in 0..<entries { try await subject.set("key-\(index)", value) }
            }
            subjects.append((name, subject))
        }
        defer { for (_, subject) in subjects { runBlocking { await subject.close() } } }
        let isSet = workload == "set"
        let cases = subjects.map { name, subject in
            BenchCase(name) {
                try! runBlocking {
                    let start = ContinuousClock.now
                    for key in keys {
                        if isSet { try await subject.set(key, value) } else { blackHole(try await subject.get(key)) }
                    }
                    return (ContinuousClock.now - start).nanoseconds / Double(keys.count)
                }
            }
        }
        let label = "\(workload) \(valueBytes) B"
        return runRounds(cases, workload: label, repetitions: options.repetitions, quiet: options.json).map {
            Measured(
                row: Row(
                    subject: $0.subject,
                    workload: workload,
                    valueBytes: valueBytes,
                    entries: entries,
                    nsPerOp: $0.nsPerOp
                ),
                result: $0
            )
        }
    }

    /// Opens a DiskStore of `--open-entries` entries, against listing and stat-ing its files.
    static func measureOpen(_ options: Options) throws -> [Measured] {
        let directory = options.root.appendingPathComponent("open")
        let value = Data(repeating: 7, count: 16)
        let store = try makeSubject("DiskStore", directory: directory, capacity: options.openEntries)!
        if !options.json {
            FileHandle.standardError.write(Data("  open: writing \(options.openEntries) entries\n".utf8))
        }
        // 32 writers at a time: each write waits for its file to reach the disk, and the store
        // writes files outside its lock, so the waits overlap.
        let writers = 32
        let total = options.openEntries
        try runBlocking {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        for index in stride(from: writer, to: total, by: writers) {
                            try await store.set("key-\(index)", value)
                        }
                    }
                }
                try await group.waitForAll()
            }
            await store.close()
        }
        var cases: [BenchCase] = []
        if options.subjects.contains("DiskStore") {
            cases.append(
                BenchCase("DiskStore") {
                    let start = ContinuousClock.now
                    let reopened = try! makeSubject("DiskStore", directory: directory, capacity: options.openEntries)!
                    let elapsed = ContinuousClock.now - start
                    runBlocking { await reopened.close() }
                    return elapsed.nanoseconds
                }
            )
        }
        if options.subjects.contains("dir-scan") {
            cases.append(
                BenchCase("dir-scan") {
                    let start = ContinuousClock.now
                    let files = scan(directory.path, depth: 2)
                    precondition(files >= options.openEntries, "dir-scan found \(files) files")
                    return (ContinuousClock.now - start).nanoseconds
                }
            )
        }
        return runRounds(cases, workload: "open", repetitions: options.repetitions, quiet: options.json).map {
            Measured(
                row: Row(
                    subject: $0.subject,
                    workload: "open",
                    valueBytes: 16,
                    entries: options.openEntries,
                    nsPerOp: $0.nsPerOp
                ),
                result: $0
            )
        }
    }

    /// Lists `path` and stats every entry, descending `depth` levels; returns the files seen.
    static func scan(_ path: String, depth: Int) -> Int {
        guard let directory = opendir(path) else { return 0 }
        defer { closedir(directory) }
        var files = 0
        var info = stat()
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            let child = path + "/" + name
            guard stat(child, &info) == 0 else { continue }
            if (info.st_mode & S_IFMT) == S_IFDIR {
                if depth > 0 { files += scan(child, depth: depth - 1) }
            } else {
                files += 1
            }
        }
        return files
    }

    static func printTable(_ rows: [Measured], _ options: Options) {
        print("cachekit bench --stores: \(options.entries) entries stored, median of \(options.repetitions) rounds")
        let baselines = [
            "DiskStore": "raw-file", "DiskStore-flushed": "raw-file", "SQLiteStore": "raw-sqlite",
            "TieredCache": "Cache",
        ]
        let table = rows.map { measured -> [String] in
            let row = measured.row
            let baseline =
                switch (row.subject, row.workload) {
                case (_, "open") where row.subject != "dir-scan": "dir-scan"
                // Neither flushes the file it writes.
                case ("DiskStore", "set"): "raw-file-nosync"
                default: baselines[row.subject]
                }
            let other = rows.first {
                $0.row.subject == baseline && $0.row.workload == row.workload && $0.row.valueBytes == row.valueBytes
            }
            return [
                row.subject, row.workload, "\(row.valueBytes)", String(format: "%.0f", row.nsPerOp),
                other.map { "\(formatRatio(measured.result.ratio(to: $0.result))) \($0.row.subject)" } ?? "",
            ]
        }
        printAligned(header: ["subject", "workload", "bytes", "ns/op", "vs"], rows: table, rightAligned: [2, 3])
    }
}

extension Duration {
    /// This duration in nanoseconds.
    var nanoseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1e9 + Double(attoseconds) / 1e9
    }
}

/// Keeps the optimizer from dropping a read whose result is unused.
@inline(never)
func blackHole<T>(_ value: T) {}
