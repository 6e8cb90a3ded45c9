import CacheKit
import CacheKitBenchSupport
import Foundation

/// `cachekit bench`: ns/op of CacheKit's caches against `Dictionary` and `NSCache`, in one run.
enum Bench {
    static let subjects = [
        "SerialCache", "Cache", "Cache+ttl", "Cache-stats", "Cache-noevict", "Cache-hasher", "SharedCache",
        "SharedCache-unbounded", "Dictionary", "NSCache",
    ]

    static let usage = """
        usage: cachekit bench [options]

        Measures ns/op for get-hit, get-miss, set-evict (every set a new key at capacity), mix
        (50% get, 50% set, keys uniform over twice the capacity) and read90 (90% get, 10% set, keys
        uniform over the capacity), for SerialCache, Cache and SharedCache with each policy,
        against Dictionary (same lookups and inserts) and Foundation's NSCache, all in one run:
        each round runs every case once, and each figure is the median over the rounds; ratios
        are medians of per-round ratios. NSCache runs a tenth of the operations (it is ~20x
        slower); ns/op stays comparable.

        Cache+ttl is Cache with a one-hour time to live on every entry (so the clock is read on
        every operation); Cache-stats is Cache with statistics switched off; their cost is
        printed as a percentage over Cache. Cache-noevict (mix only) is Cache with room for every
        key the mix uses, so, like Dictionary, it never evicts. Cache-hasher is Cache keyed by a
        struct wrapping the Int, hashed by the standard library's Hasher as any key of a type of
        your own is; CacheKit hashes integer keys itself, more cheaply. SharedCache-unbounded is
        SharedCache with no limit, so no policy hears its reads; it runs get-hit, get-miss and
        read90. Dictionary also runs get-hit and get-miss on each thread count (reads only, no
        lock: the most read throughput the machine gives). Throughput on N threads is ops / wall
        time: ns/op halves when 2 threads scale.

        options:
          --capacity N        entries the caches hold (default 50_000)
          --ops N             operations per case (default 1_000_000)
          --repetitions N     rounds; each figure is the median (default 5)
          --threads LIST      thread counts for Cache, NSCache, the SharedCache subjects and
                              Dictionary's reads (default 1,2); the others run on 1
          --workloads LIST    \(Plan.workloads.joined(separator: ",")) (default: all)
          --subjects LIST     \(subjects.joined(separator: ",")) (default: all)
          --policies LIST     \(EvictionPolicy.allCases.map(\.name).joined(separator: ",")) (default: all)
          --json              print a JSON array instead of the table
          --memory            measure bytes per entry instead (see --entries), of Dictionary, Cache,
                              SerialCache and NSCache (--subjects picks among them; --policies
                              picks Cache's, and SerialCache's, which is LRU alone by default)
          --entries N         entries for --memory (default 1_000_000)
          --stores            measure the second levels instead (DiskStore, SQLiteStore,
                              TieredCache) against plain file and SQLite calls; see
                              `cachekit bench --stores --help`
          --redis             measure the Redis level instead (RedisStore, a near cache's hit and
                              its invalidations) against one GET round trip, on a redis-server it
                              starts; see `cachekit bench --redis --help`
        """

    /// The most entries `--capacity` and `--entries` take: 2^28, 8 GiB of keys and values.
    static let maxEntries = 1 << 28

    /// What one run measures, from the command line.
    struct Options {
        var capacity: Int
        var ops: Int
        var repetitions: Int
        var threadCounts: [Int]
        var workloads: [String]
        var subjects: Set<String>
        var policies: [EvictionPolicy]
        var json: Bool
    }

    static func run(_ arguments: [String]) throws {
        let args = try Arguments(
            arguments,
            valueFlags: [
                "capacity", "ops", "repetitions", "threads", "workloads", "subjects", "policies", "entries",
                "memory-one", "sizes", "open-entries", "directory",
            ],
            booleanFlags: ["json", "memory", "stores", "redis", "help"]
        )
        if args.flag("redis") {
            try RedisBench.run(args)
            return
        }
        if args.flag("stores") {
            try StoreBench.run(args)
            return
        }
        if args.flag("help") {
            print(usage)
            return
        }
        let policies = try args.list(
            "policies",
            default: EvictionPolicy.allCases.map(\.name),
            allowed: EvictionPolicy.allCases.map(\.name)
        ).compactMap { EvictionPolicy(name: $0) }
        if let spec = args.string("memory-one") {
            try MemoryBench.runOne(spec, entries: args.int("entries", default: 1_000_000, maximum: maxEntries))
            return
        }
        if args.flag("memory") {
            // `--policies` picks `Cache`'s and, when given, `SerialCache`'s (LRU alone by default).
            try MemoryBench.run(
                entries: args.int("entries", default: 1_000_000, maximum: maxEntries),
                json: args.flag("json"),
                subjects: args.list("subjects", default: MemoryBench.subjects, allowed: MemoryBench.subjects),
                policies: policies,
                serialPolicies: args.string("policies") == nil ? [.lru] : policies
            )
            return
        }
        // Bounded so that the key space (twice the capacity) and the prepared operations (16
        // bytes each) fit in memory and in the arithmetic.
        let options = Options(
            capacity: try args.int("capacity", default: 50_000, maximum: maxEntries),
            ops: try args.int("ops", default: 1_000_000, maximum: 1 << 30),
            repetitions: try args.int("repetitions", default: 5),
            threadCounts: try args.threadCounts("threads", default: [1, 2]),
            workloads: try args.list("workloads", default: Plan.workloads, allowed: Plan.workloads),
            subjects: Set(try args.list("subjects", default: subjects, allowed: subjects)),
            policies: policies,
            json: args.flag("json")
        )
        warnIfDebug()
        var results: [BenchResult] = []
        for workload in options.workloads {
            let plan = Plan(workload: workload, capacity: options.capacity, ops: options.ops)
            results += runRounds(
                cases(for: plan, options),
                workload: workload,
                repetitions: options.repetitions,
                quiet: options.json
            )
        }
        if options.json {
            try results.printJSON()
        } else {
            printTable(results, options)
        }
    }

    /// Every case of `plan`'s workload that `options` chose, each cache right before its
    /// variants so that each round runs them back to back.
    static func cases(for plan: Plan, _ options: Options) -> [BenchCase] {
        let capacity = options.capacity
        let workload = plan.workload
        var cases: [BenchCase] = []
        func add<T: BenchTarget & SendableMetatype>(
            _ subject: String,
            policy: String = "",
            threads: [Int] = [1],
            _ make: @escaping () -> T
        ) {
            guard options.subjects.contains(subject) else { return }
            for count in threads {
                cases.append(
                    BenchCase(subject, policy: policy, threads: count) { plan.measureOnce(threads: count, make: make) }
                )
            }
        }
        let reads = ["get-hit", "get-miss"].contains(workload)
        let bounded = workload == "set-evict" ? capacity : nil
        add("Dictionary") { DictionaryTarget(boundedTo: bounded) }
        // Reads only, no lock: safe on several threads, and the most read throughput this
        // machine gives any structure.
        if reads {
            add("Dictionary", threads: options.threadCounts.filter { $0 > 1 }) { DictionaryTarget(boundedTo: nil) }
        }
        for policy in options.policies {
            let name = policy.name
            add("SerialCache", policy: name) { SerialCache<Int, Int>(countLimit: capacity, policy: policy) }
            add("Cache", policy: name, threads: options.threadCounts) {
                Cache<Int, Int>(countLimit: capacity, policy: policy)
            }
            add("Cache+ttl", policy: name) {
                Cache<Int, Int>(countLimit: capacity, policy: policy, expiration: .afterWrite(.seconds(3_600)))
            }
            add("Cache-stats", policy: name) {
                let cache = Cache<Int, Int>(countLimit: capacity, policy: policy)
                cache.isRecordingStatistics = false
                return cache
            }
            if workload == "mix" {
                add("Cache-noevict", policy: name) { Cache<Int, Int>(countLimit: plan.keyUniverse, policy: policy) }
            }
            add("Cache-hasher", policy: name) { HasherKeyedCache(countLimit: capacity, policy: policy) }
            add("SharedCache", policy: name, threads: options.threadCounts) {
                SharedCache<Int, Int>(countLimit: capacity, policy: policy)
            }
        }
        // Unbounded, it would grow without end on set-evict and the mix: reads only.
        if reads || workload == "read90" {
            add("SharedCache-unbounded", threads: options.threadCounts) { SharedCache<Int, Int>() }
        }
        if options.subjects.contains("NSCache") {
            let small = Plan(workload: workload, capacity: capacity, ops: max(1, options.ops / 10))
            let numbers = (0..<small.keyUniverse).map { NSNumber(value: $0) }
            for threads in options.threadCounts {
                cases.append(
                    BenchCase("NSCache", threads: threads) {
                        small.measureOnce(threads: threads) { NSCacheTarget(countLimit: capacity, numbers: numbers) }
                    }
                )
            }
        }
        return cases
    }

    static func printTable(_ results: [BenchResult], _ options: Options) {
        print(
            "cachekit bench: capacity \(options.capacity), \(options.ops) ops per case, median "
                + "of \(options.repetitions)"
        )
        let rows = results.map { r in
            [
                r.subject, r.policy, r.workload, "\(r.threads)", String(format: "%.1f", r.nsPerOp),
                results.find("Dictionary", "", r.workload).map { formatRatio(r.ratio(to: $0)) } ?? "-",
            ]
        }
        printAligned(
            header: ["subject", "policy", "workload", "threads", "ns/op", "vs Dictionary"],
            rows: rows,
            rightAligned: [3, 4, 5]
        )
        print("")
        print("Ratios are medians of per-round ratios (both cases ran in every round).")
        printSummary(results)
    }

    /// The comparisons a reader looks for, one per line.
    static func printSummary(_ results: [BenchResult]) {
        let policies = Set(results.map(\.policy)).filter { !$0.isEmpty }.sorted()
        if let dictionary = results.find("Dictionary", "", "mix") {
            for (subject, what) in [
                ("Cache", "Cache"),
                ("Cache-noevict", "Cache with room for every key (never evicts, as Dictionary)"),
                ("Cache-hasher", "Cache with keys hashed by Hasher, as a key type of your own is"),
                ("SerialCache", "SerialCache, no lock"),
            ] {
                for policy in policies {
                    guard let other = results.find(subject, policy, "mix") else { continue }
                    print("mix, \(policy): \(what) costs \(formatRatio(other.ratio(to: dictionary))) Dictionary")
                }
            }
        }
        if let nsCache = results.find("NSCache", "", "mix") {
            for policy in policies {
                guard let cache = results.find("Cache", policy, "mix") else { continue }
                print(String(format: "mix, \(policy): Cache is %.1fx faster than NSCache", nsCache.ratio(to: cache)))
            }
        }
        for policy in policies {
            if let shared = results.find("SharedCache", policy, "get-hit"),
                let cache = results.find("Cache", policy, "get-hit")
            {
                print(
                    "get-hit, \(policy): a SharedCache read costs \(formatRatio(shared.ratio(to: cache))) a Cache read"
                )
            }
        }
        // Throughput on 2 threads against 1 (this figure depends on the machine's free cores).
        for (subject, policy, workload) in [("Dictionary", "", "get-hit"), ("SharedCache-unbounded", "", "read90")]
            + policies.map({ ("SharedCache", $0, "read90") })
        {
            if let one = results.find(subject, policy, workload),
                let two = results.find(subject, policy, workload, threads: 2)
            {
                let label = policy.isEmpty ? subject : "\(subject) (\(policy))"
                print("\(workload): \(label) on 2 threads has \(formatRatio(one.ratio(to: two))) the throughput of 1")
            }
        }
        // The cost of a feature: the same case with the feature on, over the case without it.
        for workload in Plan.workloads {
            for policy in policies {
                guard let cache = results.find("Cache", policy, workload) else { continue }
                if let ttl = results.find("Cache+ttl", policy, workload) {
                    let cost = (ttl.ratio(to: cache) - 1) * 100
                    print(String(format: "\(workload), \(policy): TTL costs %+.1f%% (Cache+ttl vs Cache)", cost))
                }
                if let off = results.find("Cache-stats", policy, workload) {
                    let cost = (cache.ratio(to: off) - 1) * 100
                    print(
                        String(format: "\(workload), \(policy): statistics cost %+.1f%% (Cache vs Cache-stats)", cost)
                    )
                }
            }
        }
    }
}
