import CacheKit
import CacheKitBenchSupport
import CacheKitSimulator
import Foundation

/// `cachekit simulate`: replays a trace (or a built-in workload) through every chosen policy at
/// every chosen size, beside Belady's OPT, and says which policy wins.
enum Simulate {
    static let usage = """
        usage: cachekit simulate [TRACE] [options]

        Replays TRACE (or a built-in synthetic workload) through CacheKit's eviction policies and
        Belady's OPT, and prints hits, misses, hit ratio and the gap to OPT for each policy and size.

        trace:
          TRACE                 a trace file; format from the extension (.lis ARC, .csv CSV,
                                .bin oracleGeneral, .trace/.keys/.txt one key per line)
          --format F            lines, arc, csv or oracleGeneral, for other extensions
          --key-column NAME     CSV: the key column (default: obj_id, key, id or lbn)
          --workload W          without TRACE: zipf-scans (default), zipf or loop
          --keys N              workload key space (default 100_000)
          --requests N          workload length (default 1_000_000)
          --skew S              Zipf skew (default 0.9)
          --seed N              workload seed (default 42)

        what to run:
          --policy LIST         lru,fifo,lfu,sieve,s3fifo,arc,wtinylfu,adaptive, opt (the bound),
                                default (what Cache uses: wtinylfu), or all
                                (default: all)
          --size N | --sizes LIST  cache sizes in entries, or percentages of the unique keys
                                (--sizes 1%,10%); default 1%,5%,10%
          --json                print a JSON array (policy, size, requests, hits, misses, hitRatio, ...)
          --switches            also print each switch of the adaptive policy (request, from, to);
                                with --json, as each row's "switches"
          --plot FILE.svg       also write the miss-ratio curve of every policy as SVG
          --rounds N            replay each policy and size N times (at most 1000) and report the fastest
                                round's speed (hits are the same every round); default 1
          --threads N           also replay each policy and size on N threads at once (2 to 64) through a
                                Cache reading in parallel, each thread taking the next request, and
                                print its hit ratio beside one thread's in the trace's order and in the
                                order the threads served the requests (differs from run to run)
        """

    static func run(_ argv: [String]) throws {
        var argv = argv
        var tracePath: String?
        if let first = argv.first, !first.hasPrefix("-") {
            tracePath = first
            argv.removeFirst()
        }
        let args = try Arguments(
            argv,
            valueFlags: [
                "format", "key-column", "workload", "keys", "requests", "skew", "seed", "policy", "size", "sizes",
                "plot", "rounds", "threads",
            ],
            booleanFlags: ["json", "switches", "help"]
        )
        if args.flag("help") {
            print(usage)
            return
        }
        let trace = try loadTrace(path: tracePath, args)
        let unique = trace.uniqueKeyCount
        let sizes = try parseSizes(args, unique: unique)
        let (policies, wantsOPT) = try parsePolicies(args)
        let rounds = try args.int("rounds", default: 1, maximum: 1000)
        // Two or more: one thread is what the table above already gives.
        let threads =
            args.string("threads") == nil ? nil : try args.int("threads", default: 2, minimum: 2, maximum: 64)
        warnIfDebug()

        var results: [SimulationResult] = []
        let progress = Progress(
            total: sizes.count * (policies.count * (threads == nil ? 1 : 2) + (wantsOPT ? 1 : 0)),
            requests: trace.keys.count * rounds
        )
        var threaded: [SimulationResult] = []
        for size in sizes {
            if wantsOPT {
                progress.step("opt at \(size)")
                results.append(Simulator.optimal(trace.keys, size: size))
            }
            for policy in policies {
                progress.step("\(policy) at \(size)")
                results.append(Simulator.replay(trace.keys, policy: policy, size: size, rounds: rounds))
                if let threads {
                    progress.step("\(policy) at \(size) on \(threads) threads")
                    threaded.append(Simulator.replay(trace.keys, policy: policy, size: size, threads: threads))
                }
            }
        }
        progress.finish()

        if let plot = args.string("plot") {
            do {
                try MissRatioPlot.svg(results, title: trace.name).write(toFile: plot, atomically: true, encoding: .utf8)
                // On standard error, so that --json output stays one document.
                let path = URL(fileURLWithPath: plot).standardizedFileURL.path
                FileHandle.standardError.write(
                    Data("cachekit: wrote the miss-ratio curves to \(TraceError.escaped(path))\n".utf8)
                )
            } catch {
                throw Arguments.Failure(
                    description: "--plot: cannot write "
                        + "'\(TraceError.escaped(plot))': \(error.localizedDescription)"
                )
            }
        }
        if args.flag("json") {
            try printJSON(results, threaded: threaded, switches: args.flag("switches"))
        } else {
            printTable(results, trace: trace, unique: unique)
            printThreaded(threaded, beside: results)
            if args.flag("switches") { printSwitches(results) }
        }
    }

    /// Flags that shape the built-in workload, and those that describe a trace file: each kind
    /// is refused where it would do nothing.
    static let workloadFlags = ["workload", "keys", "requests", "skew", "seed"]
    static let traceFlags = ["format", "key-column"]

    static func loadTrace(path: String?, _ args: Arguments) throws -> Trace {
        let given = { (names: [String]) in names.filter { args.string($0) != nil }.map { "--" + $0 } }
        if let path {
            if let flag = given(workloadFlags).first {
                throw Arguments.Failure(description: "\(flag) applies to the built-in workload, not to a trace file")
            }
            var format: TraceFormat?
            if let name = args.string("format") {
                guard let f = TraceFormat(rawValue: name) else {
                    throw Arguments.Failure(
                        description:
                            "--format: unknown format '\(TraceError.escaped(name))' (choose "
                            + "from \(TraceFormat.allCases.map(\.rawValue).joined(separator: ", ")))"
                    )
                }
                format = f
            }
            if args.string("key-column") != nil,
                (format ?? TraceFormat(pathExtension: (path as NSString).pathExtension)) != .csv
            {
                throw Arguments.Failure(description: "--key-column applies to CSV traces only")
            }
            return try Trace.read(path: path, format: format, keyColumn: args.string("key-column"))
        }
        if let flag = given(traceFlags).first {
            throw Arguments.Failure(description: "\(flag) applies to a trace file; none was given")
        }
        // Bounded so that the generated keys (8 bytes a request, 8 a key for Zipf's table) fit in
        // memory, and so that a mistyped number fails naming its flag instead of crashing.
        let keys = try args.int("keys", default: 100_000, maximum: 1 << 28)
        let requests = try args.int("requests", default: 1_000_000, maximum: 1 << 30)
        let seed = UInt64(try args.int("seed", default: 42, minimum: 0))
        var skew = 0.9
        if let text = args.string("skew") {
            guard let s = Double(text), s >= 0, s.isFinite else {
                throw Arguments.Failure(description: "--skew must be a number >= 0 (got '\(TraceError.escaped(text))')")
            }
            skew = s
        }
        let workload: Workload
        switch args.string("workload") ?? "zipf-scans" {
        case "zipf-scans":
            workload =
                args.string("keys") == nil && args.string("requests") == nil && args.string("skew") == nil
                ? .standard
                : .zipfWithScans(
                    keys: keys,
                    skew: skew,
                    requests: requests,
                    scanEvery: max(1, requests / 10),
                    scanLength: max(1, keys / 20)
                )
        case "zipf": workload = .zipf(keys: keys, skew: skew, requests: requests)
        case "loop": workload = .loop(keys: keys, requests: requests)
        case let other:
            throw Arguments.Failure(
                description: "--workload: unknown workload '\(TraceError.escaped(other))' "
                    + "(choose from zipf-scans, zipf, loop)"
            )
        }
        return workload.trace(seed: seed)
    }

    static func parseSizes(_ args: Arguments, unique: Int) throws -> [Int] {
        if args.string("size") != nil && args.string("sizes") != nil {
            throw Arguments.Failure(description: "--size and --sizes: give one of them")
        }
        if args.string("size") != nil { return [try args.int("size", default: 1)] }
        let text = args.string("sizes") ?? "1%,5%,10%"
        var sizes: [Int] = []
        for item in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            if item.hasSuffix("%") {
                guard let percent = Double(item.dropLast()), percent > 0, percent <= 100 else {
                    throw Arguments.Failure(
                        description: "--sizes: '\(TraceError.escaped(item))' is not a percentage in (0, 100]"
                    )
                }
                sizes.append(max(1, Int((Double(unique) * percent / 100).rounded())))
            } else {
                guard let n = Int(item.replacingOccurrences(of: "_", with: "")), n > 0 else {
                    throw Arguments.Failure(
                        description: "--sizes: '\(TraceError.escaped(item))' is not a positive size or a percentage"
                    )
                }
                sizes.append(n)
            }
        }
        guard !sizes.isEmpty else { throw Arguments.Failure(description: "--sizes needs at least one size") }
        return Array(Set(sizes)).sorted()
    }

    static func parsePolicies(_ args: Arguments) throws -> ([EvictionPolicy], Bool) {
        let names = try args.list(
            "policy",
            default: ["all"],
            allowed: EvictionPolicy.allCases.map(\.name) + ["opt", "default", "all"]
        )
        var policies: [EvictionPolicy] = []
        var opt = false
        for name in names {
            switch name {
            case "all":
                policies += EvictionPolicy.allCases
                opt = true
            case "opt": opt = true
            case "default": policies.append(Self.defaultPolicy)
            default: policies.append(EvictionPolicy(name: name)!)
            }
        }
        var seen = Set<EvictionPolicy>()
        return (policies.filter { seen.insert($0).inserted }, opt)
    }

    /// The policy a `Cache` uses when none is given.
    static var defaultPolicy: EvictionPolicy { .default }

    static func printTable(_ results: [SimulationResult], trace: Trace, unique: Int) {
        print("cachekit simulate: \(trace.name): \(trace.keys.count) requests, \(unique) unique keys")
        let header = ["policy", "size", "requests", "hits", "misses", "hit ratio", "gap to OPT", "Mreq/s"]
        var rows: [[String]] = []
        for result in results {
            let opt = results.first { $0.policy == "opt" && $0.size == result.size }
            let gap = opt.map { String(format: "%.2f pts", ($0.hitRatio - result.hitRatio) * 100) } ?? "-"
            rows.append([
                result.policy, "\(result.size)", "\(result.requests)", "\(result.hits)", "\(result.misses)",
                String(format: "%.4f", result.hitRatio), result.policy == "opt" ? "" : gap,
                String(format: "%.1f", result.requestsPerSecond / 1e6),
            ])
        }
        printAligned(header: header, rows: rows, rightAligned: Set(1..<header.count))
        // The recommendation: the best policy at each size, and the best on average.
        let real = results.filter { $0.policy != "opt" }
        guard !real.isEmpty else { return }
        print("")
        // Ties go to the policy listed first (results come in the order policies were asked
        // for), so the same run always recommends the same policy.
        func first<T>(_ candidates: [T], by value: (T) -> Double) -> T? {
            candidates.reduce(nil) { best, next in best.map { value(next) > value($0) ? next : $0 } ?? next }
        }
        for size in Set(real.map(\.size)).sorted() {
            let best = first(real.filter { $0.size == size }, by: \.hitRatio)!
            print(
                "at \(size) entries the best policy is \(best.policy) (hit ratio "
                    + "\(String(format: "%.4f", best.hitRatio)))"
            )
        }
        var policies: [String] = []
        for result in real where !policies.contains(result.policy) { policies.append(result.policy) }
        let means = policies.map { policy in
            let ratios = real.filter { $0.policy == policy }.map(\.hitRatio)
            return (key: policy, value: ratios.reduce(0, +) / Double(ratios.count))
        }
        if let best = first(means, by: \.value) {
            print(
                "recommended policy for this workload: \(best.key) (mean hit ratio "
                    + "\(String(format: "%.4f", best.value)) over the sizes)"
            )
        }
    }

    /// The replays on several threads, each beside the same policy and size on one thread, in
    /// the trace's order and in the order the threads served the requests.
    static func printThreaded(_ threaded: [SimulationResult], beside results: [SimulationResult]) {
        guard let threads = threaded.first?.threads else { return }
        print("")
        print("on \(threads) threads, each taking the next request (Cache, reads in parallel):")
        let header = [
            "policy", "size", "1 thread", "\(threads) threads", "difference", "served order", "both missed",
            "policy's share",
        ]
        let points = { (ratio: Double) in String(format: "%+.2f pts", ratio * 100) }
        let rows = threaded.map { result in
            let one = oneThread(of: result, in: results)
            let requests = Double(max(1, result.requests))
            let served = Double(result.hitsInServedOrder ?? 0) / requests
            let both = Double(result.concurrentMisses) / requests
            return [
                result.policy, "\(result.size)", String(format: "%.4f", one.hitRatio),
                String(format: "%.4f", result.hitRatio), points(result.hitRatio - one.hitRatio),
                String(format: "%.4f", served), points(-both), points(result.hitRatio + both - served),
            ]
        }
        printAligned(header: header, rows: rows, rightAligned: Set(1..<header.count))
        print(
            """
            served order: one thread replaying the keys in the order the threads served them;
            both missed: requests that missed because another thread had missed the same key and
            not yet inserted it (a loader's single flight saves them); policy's share: what the
            policy hearing reads late or not at all cost against the served order
            """
        )
    }

    /// The one-thread replay of the policy and size that `result` replayed on several threads.
    static func oneThread(of result: SimulationResult, in results: [SimulationResult]) -> SimulationResult {
        results.first { $0.policy == result.policy && $0.size == result.size && $0.threads == 1 }!
    }

    /// Each adaptive result's switches, one line each.
    static func printSwitches(_ results: [SimulationResult]) {
        for result in results where result.policy == EvictionPolicy.adaptive.name {
            print("")
            let miniatures = result.miniatures.map { "\($0.policy) \(String(format: "%.4f", $0.hitRatio))" }
            print(
                "\(result.policy) at \(result.size) entries: \(result.switches.count) switches; "
                    + "miniatures' hit ratios: \(miniatures.joined(separator: ", "))"
            )
            for s in result.switches {
                print("  request \(s.request): \(s.from) -> \(s.to)")
            }
        }
    }

    struct SwitchRow: Encodable {
        var request: Int
        var from: String
        var to: String
    }

    struct Row: Encodable {
        var policy: String
        var size: Int
        var requests: Int
        var hits: Int
        var misses: Int
        var hitRatio: Double
        var seconds: Double
        var requestsPerSecond: Double
        var switches: [SwitchRow]?
        /// With `--threads`: the thread count, the hits of the replay on those threads, of one
        /// thread replaying the requests in the order they were served, and the misses two
        /// threads made of one key at once.
        var threads: Int?
        var threadedHits: Int?
        var threadedHitRatio: Double?
        var threadedHitsInServedOrder: Int?
        var threadedConcurrentMisses: Int?
    }

    static func printJSON(_ results: [SimulationResult], threaded: [SimulationResult], switches: Bool) throws {
        let rows = results.map { r -> Row in
            let onThreads = threaded.first { $0.policy == r.policy && $0.size == r.size }
            return Row(
                policy: r.policy,
                size: r.size,
                requests: r.requests,
                hits: r.hits,
                misses: r.misses,
                hitRatio: r.hitRatio,
                seconds: r.seconds,
                requestsPerSecond: r.requestsPerSecond.isFinite ? r.requestsPerSecond : 0,
                switches: switches && r.policy == EvictionPolicy.adaptive.name
                    ? r.switches.map { SwitchRow(request: $0.request, from: $0.from, to: $0.to) } : nil,
                threads: onThreads?.threads,
                threadedHits: onThreads?.hits,
                threadedHitRatio: onThreads?.hitRatio,
                threadedHitsInServedOrder: onThreads?.hitsInServedOrder,
                threadedConcurrentMisses: onThreads?.concurrentMisses
            )
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        print(String(decoding: try encoder.encode(rows), as: UTF8.self))
    }
}

/// One line on stderr per step, overwritten in place, when stderr is a terminal and the run is
/// long enough to wait for (at least 5 million requests to replay in all).
final class Progress {
    private let total: Int
    private let enabled: Bool
    private var done = 0

    init(total: Int, requests: Int) {
        self.total = total
        enabled = isatty(STDERR_FILENO) != 0 && total * requests >= 5_000_000
    }

    func step(_ label: String) {
        guard enabled else { return }
        let width = 30
        let filled = width * done / max(1, total)
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        FileHandle.standardError.write(Data("\r[\(bar)] \(done + 1)/\(total) \(label)\u{1B}[K".utf8))
        done += 1
    }

    func finish() {
        guard enabled else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
}
