import CacheKit
import CacheKitSimulator
import Dispatch
import Foundation

/// `cachekit bench`: ns/op of CacheKit's caches against `Dictionary` and `NSCache`, in one run.
enum Bench {
    static let workloads = ["get-hit", "get-miss", "set-evict", "mix", "read90"]
    static let subjects = [
        "SerialCache", "Cache", "Cache+ttl", "Cache-stats", "Cache-noevict", "Cache-hasher", "SharedCache",
        "SharedCache-unbounded", "SharedCache-private",
        "Dictionary", "Dictionary+lock", "NSCache", "SlotSketch", "SlotSketch+lock", "SlotSketch+spin", "InlineSketch",
        "InlineSketch+lock",
    ]

    static let usage = """
        usage: cachekit bench [options]

        Measures ns/op for get-hit, get-miss, set-evict (every set a new key at capacity), mix
        (50% get, 50% set, keys uniform over twice the capacity) and read90 (90% get, 10% set, keys
        uniform over the capacity), for SerialCache, Cache and SharedCache with
        each policy, against Dictionary (same lookups and inserts) and Foundation's NSCache, all
        in one run: each round runs every case once, and each figure is the median over the rounds. NSCache runs a tenth of the operations
        (it is ~20x slower); ns/op stays comparable. Cache+ttl is Cache with a one-hour time to
        live on every entry (so the clock is read on every operation); Cache-stats is Cache with
        statistics switched off. Their cost is printed as a percentage over Cache. Cache-noevict
        (mix only) is Cache with room for every key the mix uses, so, like Dictionary, it never
        evicts. Cache-hasher is Cache keyed by a struct wrapping the Int, which its Hashable
        conformance hashes with the standard library's Hasher (SipHash), as any key of a type
        of your own is; CacheKit hashes Int keys itself, more cheaply. SlotSketch and
        InlineSketch are not CacheKit: two minimal exact-LRU caches for Int
        keys that hash them as CacheKit does, one with CacheKit's layout (records in a slot
        array, an index of slot numbers), one with each record inside its hash bucket, to show how much of the cost over Dictionary
        the layout itself takes (each is checked against a reference LRU first); a "+lock" subject
        takes a Synchronization.Mutex around each operation, as Cache does, and SlotSketch+spin
        a spin lock whose unlock is a plain store (a measurement of what the Mutex's unlock
        costs, not a lock to use). For SharedCache the
        run prints its read cost against Cache (get-hit) and its read90 throughput on 2 threads
        against 1; SharedCache-unbounded is SharedCache with no limit (YMCache's default), so no
        policy hears its reads (its policy column is empty); it runs get-hit, get-miss and read90.
        SharedCache-private gives each thread an unbounded SharedCache of its own: nothing is
        shared, so its scaling is the most that splitting one cache into parts could reach.
        Dictionary runs get-hit and get-miss on each thread count too (reads only, no lock: the
        most read throughput the machine gives), the others on 1. Throughput on N threads is ops / wall time: ns/op halves when 2 threads scale.

        options:
          --capacity N        entries the caches hold (default 50_000)
          --ops N             operations per case (default 1_000_000)
          --repetitions N     runs per case; the median is reported (default 5)
          --threads LIST      thread counts for Cache, NSCache, the SharedCache subjects and Dictionary's reads (default 1,2); the others run on 1
          --workloads LIST    \(workloads.joined(separator: ",")) (default: all)
          --subjects LIST     \(subjects.joined(separator: ",")) (default: all)
          --policies LIST     \(EvictionPolicy.allCases.map(\.name).joined(separator: ",")) (default: all)
          --json              print a JSON array instead of the table
          --memory            measure bytes per entry instead (see --entries), of Dictionary, Cache,
                              SerialCache and NSCache (--subjects picks among them; --policies
                              picks Cache's, and SerialCache's, which is LRU alone by default)
          --entries N         entries for --memory (default 1_000_000)
          --line-transfer     measure instead how long a cache line takes to move between two
                              threads' cores (--ops round trips, --repetitions times): what
                              each write one thread makes and another reads costs
        """

    struct Result: Codable {
        var subject: String
        var policy: String
        var workload: String
        var threads: Int
        var nsPerOp: Double
        /// ns/op of each round, in round order (not in the JSON).
        var rounds: [Double] = []

        enum CodingKeys: String, CodingKey {
            case subject, policy, workload, threads, nsPerOp
        }

        /// This case's cost over `baseline`'s: the median of the per-round ratios. Both ran in
        /// each round, one after the other, so a slow spell on this shared machine slows both
        /// and cancels out, which a ratio of the two medians does not do.
        func ratio(to baseline: Result) -> Double {
            let ratios = zip(rounds, baseline.rounds).map { $0 / $1 }.sorted()
            guard !ratios.isEmpty else { return nsPerOp / baseline.nsPerOp }
            return ratios.count % 2 == 1
                ? ratios[ratios.count / 2]
                : (ratios[ratios.count / 2 - 1] + ratios[ratios.count / 2]) / 2
        }
    }

    /// The most entries `--capacity` and `--entries` take: 2^28, 8 GiB of keys and values.
    static let maxEntries = 1 << 28

    static func run(_ arguments: [String]) throws {
        let args = try Arguments(
            arguments,
            valueFlags: [
                "capacity", "ops", "repetitions", "threads", "workloads", "subjects", "policies", "entries",
                "memory-one",
            ],
            booleanFlags: ["json", "memory", "line-transfer", "help"]
        )
        if args.flag("help") {
            print(usage)
            return
        }
        if args.flag("line-transfer") {
            for name in ["capacity", "threads", "workloads", "subjects", "policies", "entries", "memory-one"]
            where args.string(name) != nil {
                throw Arguments.Failure(description: "--\(name) does not apply to --line-transfer")
            }
            if args.flag("memory") {
                throw Arguments.Failure(description: "--memory and --line-transfer measure different things; give one")
            }
            LineTransfer.run(
                repetitions: try args.int("repetitions", default: 5),
                rounds: try args.int("ops", default: 1_000_000, maximum: 1 << 30),
                json: args.flag("json")
            )
            return
        }
        if let spec = args.string("memory-one") {
            try MemoryBench.runOne(spec, entries: args.int("entries", default: 1_000_000, maximum: maxEntries))
            return
        }
        if args.flag("memory") {
            // `--subjects` among the structures it measures, and `--policies` for `Cache` and
            // (when given) `SerialCache`, which is measured with LRU alone by default.
            let policies = try args.list(
                "policies",
                default: EvictionPolicy.allCases.map(\.name),
                allowed: EvictionPolicy.allCases.map(\.name)
            ).compactMap { EvictionPolicy(name: $0) }
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
        let capacity = try args.int("capacity", default: 50_000, maximum: maxEntries)
        let ops = try args.int("ops", default: 1_000_000, maximum: 1 << 30)
        let repetitions = try args.int("repetitions", default: 5)
        let threadCounts = try args.list("threads", default: ["1", "2"], allowed: (1...64).map(String.init))
            .compactMap(Int.init)
        let chosenWorkloads = try args.list("workloads", default: workloads, allowed: workloads)
        let chosenSubjects = try args.list("subjects", default: subjects, allowed: subjects)
        let policies = try args.list(
            "policies",
            default: EvictionPolicy.allCases.map(\.name),
            allowed: EvictionPolicy.allCases.map(\.name)
        ).compactMap { EvictionPolicy(name: $0) }
        warnIfDebug()
        // A sketch is checked whether it runs bare or behind the lock.
        if chosenSubjects.contains(where: { $0.hasPrefix("SlotSketch") }) {
            try LRUSketchCheck.verify("SlotSketch", make: SlotSketch.init)
        }
        if chosenSubjects.contains(where: { $0.hasPrefix("InlineSketch") }) {
            try LRUSketchCheck.verify("InlineSketch", make: InlineSketch.init)
        }

        var results: [Result] = []
        for workload in chosenWorkloads {
            let plan = Plan(workload: workload, capacity: capacity, ops: ops)
            // Every case of a workload runs once per round, rounds repeated: a noisy moment on this
            // shared machine then hits all subjects alike, and the medians stay comparable.
            var cases: [(subject: String, policy: String, threads: Int, run: () -> Double)] = []
            if chosenSubjects.contains("Dictionary") {
                let bounded = workload == "set-evict" ? capacity : nil
                cases.append(
                    ("Dictionary", "", 1, { plan.measureOnce(threads: 1) { DictionaryTarget(boundedTo: bounded) } })
                )
                // Reads only, no lock: safe on several threads, and the most read throughput this
                // machine gives any structure (the ceiling for SharedCache's read scaling).
                if ["get-hit", "get-miss"].contains(workload) {
                    for threads in threadCounts where threads > 1 {
                        cases.append(
                            (
                                "Dictionary", "", threads,
                                { plan.measureOnce(threads: threads) { DictionaryTarget(boundedTo: nil) } }
                            )
                        )
                    }
                }
            }
            for policy in policies {
                if chosenSubjects.contains("SerialCache") {
                    cases.append(
                        (
                            "SerialCache", policy.name, 1,
                            {
                                plan.measureOnce(threads: 1) {
                                    SerialCache<Int, Int>(countLimit: capacity, policy: policy)
                                }
                            }
                        )
                    )
                }
                // Cache right before its variants, so that each round runs them back to back.
                if chosenSubjects.contains("Cache") {
                    for threads in threadCounts {
                        cases.append(
                            (
                                "Cache", policy.name, threads,
                                {
                                    plan.measureOnce(threads: threads) {
                                        Cache<Int, Int>(countLimit: capacity, policy: policy)
                                    }
                                }
                            )
                        )
                    }
                }
                for (subject, make) in [
                    (
                        "Cache+ttl",
                        {
                            Cache<Int, Int>(
                                countLimit: capacity,
                                policy: policy,
                                expiration: .afterWrite(.seconds(3_600))
                            )
                        }
                    ),
                    (
                        "Cache-stats",
                        {
                            let cache = Cache<Int, Int>(countLimit: capacity, policy: policy)
                            cache.isRecordingStatistics = false
                            return cache
                        }
                    ),
                    (
                        "Cache-noevict",
                        { Cache<Int, Int>(countLimit: plan.keyUniverse, policy: policy) }
                    ),
                ] as [(String, () -> Cache<Int, Int>)]
                where chosenSubjects.contains(subject) && (subject != "Cache-noevict" || workload == "mix") {
                    cases.append((subject, policy.name, 1, { plan.measureOnce(threads: 1, make: make) }))
                }
                if chosenSubjects.contains("Cache-hasher") {
                    cases.append(
                        (
                            "Cache-hasher", policy.name, 1,
                            {
                                plan.measureOnce(threads: 1) { HasherKeyedCache(countLimit: capacity, policy: policy) }
                            }
                        )
                    )
                }
                if chosenSubjects.contains("SharedCache") {
                    for threads in threadCounts {
                        cases.append(
                            (
                                "SharedCache", policy.name, threads,
                                {
                                    plan.measureOnce(threads: threads) {
                                        SharedCache<Int, Int>(countLimit: capacity, policy: policy)
                                    }
                                }
                            )
                        )
                    }
                }
            }
            // The minimal designs, bare and with a lock per operation as Cache takes (one thread).
            // Each closure is generic over its concrete type, so every subject runs specialized.
            func single<T: BenchTarget & SendableMetatype>(_ subject: String, _ make: @escaping () -> T) {
                guard chosenSubjects.contains(subject) else { return }
                cases.append((subject, "", 1, { plan.measureOnce(threads: 1, make: make) }))
            }
            let bounded = workload == "set-evict" ? capacity : nil
            single("Dictionary+lock") { LockedTarget(DictionaryTarget(boundedTo: bounded)) }
            single("SlotSketch") { SlotSketch(capacity: capacity) }
            single("SlotSketch+lock") { LockedTarget(SlotSketch(capacity: capacity)) }
            single("SlotSketch+spin") { SpinLockedTarget(SlotSketch(capacity: capacity)) }
            single("InlineSketch") { InlineSketch(capacity: capacity) }
            single("InlineSketch+lock") { LockedTarget(InlineSketch(capacity: capacity)) }
            // Unbounded, it would grow without end on set-evict and the mix: reads only.
            if chosenSubjects.contains("SharedCache-unbounded"), ["get-hit", "get-miss", "read90"].contains(workload) {
                for threads in threadCounts {
                    cases.append(
                        (
                            "SharedCache-unbounded", "", threads,
                            { plan.measureOnce(threads: threads) { SharedCache<Int, Int>() } }
                        )
                    )
                }
            }
            if chosenSubjects.contains("SharedCache-private"), ["get-hit", "get-miss", "read90"].contains(workload) {
                for threads in threadCounts {
                    cases.append(
                        (
                            "SharedCache-private", "", threads,
                            { plan.measureOnce(threads: threads) { PrivateSharedCaches(threads: threads) } }
                        )
                    )
                }
            }
            if chosenSubjects.contains("NSCache") {
                let small = Plan(workload: workload, capacity: capacity, ops: max(1, ops / 10))
                let numbers = (0..<small.keyUniverse).map { NSNumber(value: $0) }
                for threads in threadCounts {
                    cases.append(
                        (
                            "NSCache", "", threads,
                            {
                                small.measureOnce(threads: threads) {
                                    NSCacheTarget(countLimit: capacity, numbers: numbers)
                                }
                            }
                        )
                    )
                }
            }
            var samples = Array(repeating: [Double](), count: cases.count)
            for round in 0..<repetitions {
                if !args.flag("json") {
                    FileHandle.standardError.write(Data("  \(workload): round \(round + 1) of \(repetitions)\n".utf8))
                }
                for (i, c) in cases.enumerated() { samples[i].append(c.run()) }
            }
            for (i, c) in cases.enumerated() {
                let sorted = samples[i].sorted()
                results.append(
                    Result(
                        subject: c.subject,
                        policy: c.policy,
                        workload: workload,
                        threads: c.threads,
                        nsPerOp: sorted[sorted.count / 2],
                        rounds: samples[i]
                    )
                )
            }
        }
        if args.flag("json") {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(results), as: UTF8.self))
        } else {
            printTable(results, capacity: capacity, ops: ops, repetitions: repetitions)
        }
    }

    static func warnIfDebug() {
        #if DEBUG
        FileHandle.standardError.write(
            Data("warning: this is a debug build; figures are meaningless. Use swift run -c release.\n".utf8)
        )
        #endif
    }

    static func printTable(_ results: [Result], capacity: Int, ops: Int, repetitions: Int) {
        print("cachekit bench: capacity \(capacity), \(ops) ops per case, median of \(repetitions)")
        func find(_ subject: String, _ policy: String, _ workload: String, threads: Int = 1) -> Result? {
            results.first {
                $0.subject == subject && $0.policy == policy && $0.workload == workload && $0.threads == threads
            }
        }
        var rows: [[String]] = []
        for r in results {
            let ratio = find("Dictionary", "", r.workload).map { String(format: "%.2fx", r.ratio(to: $0)) } ?? "-"
            rows.append([r.subject, r.policy, r.workload, "\(r.threads)", String(format: "%.1f", r.nsPerOp), ratio])
        }
        printAligned(
            header: ["subject", "policy", "workload", "threads", "ns/op", "vs Dictionary"],
            rows: rows,
            rightAligned: [3, 4, 5]
        )
        print("")
        print("Ratios are medians of per-round ratios (both cases ran in every round).")
        if let dictionary = find("Dictionary", "", "mix") {
            // Cache first (the issue's figure), then what separates it from Dictionary.
            for (subject, policy, what) in [
                ("Cache", "lru", "Cache(lru)"),
                ("Cache-noevict", "lru", "Cache(lru) with room for every key (never evicts, as Dictionary)"),
                ("Cache-hasher", "lru", "Cache(lru) with keys hashed by Hasher, as a key type of your own is"),
                ("SerialCache", "lru", "SerialCache(lru), no lock"),
                ("SlotSketch", "", "a minimal LRU with CacheKit's layout (SlotSketch)"),
                ("SlotSketch+lock", "", "the same behind a Mutex, as Cache (SlotSketch+lock)"),
                ("SlotSketch+spin", "", "the same behind a spin lock, unlocked by a plain store (SlotSketch+spin)"),
                ("InlineSketch", "", "a minimal LRU with records in the hash table (InlineSketch)"),
                ("InlineSketch+lock", "", "the same behind a Mutex (InlineSketch+lock)"),
                ("Dictionary+lock", "", "Dictionary behind a Mutex (Dictionary+lock)"),
            ] {
                guard let other = find(subject, policy, "mix") else { continue }
                print(String(format: "mix: \(what) costs %.2fx Dictionary", other.ratio(to: dictionary)))
            }
        }
        if let cache = find("Cache", "lru", "mix"), let nsCache = find("NSCache", "", "mix") {
            print(String(format: "mix: Cache(lru) is %.1fx faster than NSCache", nsCache.ratio(to: cache)))
        }
        // SharedCache: a read against Cache's, and how read-mostly throughput scales.
        for policy in Set(results.map(\.policy)).sorted() where !policy.isEmpty {
            if let shared = find("SharedCache", policy, "get-hit"), let cache = find("Cache", policy, "get-hit") {
                print(
                    String(
                        format: "get-hit, \(policy): a SharedCache read costs %.2fx a Cache read",
                        shared.ratio(to: cache)
                    )
                )
            }
            if let one = find("SharedCache", policy, "read90"),
                let two = find("SharedCache", policy, "read90", threads: 2)
            {
                print(
                    String(
                        format: "read90, \(policy): SharedCache on 2 threads has %.2fx the throughput of 1 thread",
                        one.ratio(to: two)
                    )
                )
            }
        }
        if let one = find("Dictionary", "", "get-hit"), let two = find("Dictionary", "", "get-hit", threads: 2) {
            print(
                String(
                    format:
                        "get-hit: Dictionary reads (no lock, no writes) on 2 threads have %.2fx the throughput of 1",
                    one.ratio(to: two)
                )
            )
        }
        if let one = find("SharedCache-unbounded", "", "read90"),
            let two = find("SharedCache-unbounded", "", "read90", threads: 2)
        {
            print(
                String(
                    format: "read90, unbounded: SharedCache on 2 threads has %.2fx the throughput of 1 thread",
                    one.ratio(to: two)
                )
            )
        }
        if let one = find("SharedCache-private", "", "read90"),
            let two = find("SharedCache-private", "", "read90", threads: 2)
        {
            print(
                String(
                    format:
                        "read90, a private SharedCache per thread (nothing shared): 2 threads have %.2fx the throughput of 1",
                    one.ratio(to: two)
                )
            )
        }
        // The cost of a feature: the same case with the feature on, over the case without it.
        for workload in workloads {
            for policy in Set(results.map(\.policy)).sorted() where !policy.isEmpty {
                guard let cache = find("Cache", policy, workload) else { continue }
                if let ttl = find("Cache+ttl", policy, workload) {
                    print(
                        String(
                            format: "\(workload), \(policy): TTL costs %+.1f%% (Cache+ttl vs Cache)",
                            (ttl.ratio(to: cache) - 1) * 100
                        )
                    )
                }
                if let off = find("Cache-stats", policy, workload) {
                    print(
                        String(
                            format: "\(workload), \(policy): statistics cost %+.1f%% (Cache vs Cache-stats)",
                            (cache.ratio(to: off) - 1) * 100
                        )
                    )
                }
            }
        }
    }
}

/// One workload's operations, made before timing: keys and, for `mix`, which operations read.
struct Plan {
    let workload: String
    let capacity: Int
    let keys: [Int]
    let reads: [Bool]

    /// Keys the workload uses lie in `0..<keyUniverse`.
    var keyUniverse: Int {
        switch workload {
        case "set-evict": capacity + keys.count
        default: 2 * capacity
        }
    }

    init(workload: String, capacity: Int, ops: Int) {
        self.workload = workload
        self.capacity = capacity
        var rng = SplitMix64(seed: 42)
        switch workload {
        case "get-hit":
            keys = (0..<ops).map { _ in Int(rng.next() % UInt64(capacity)) }
            reads = []
        case "get-miss":
            keys = (0..<ops).map { _ in capacity + Int(rng.next() % UInt64(capacity)) }
            reads = []
        case "set-evict":
            keys = (0..<ops).map { capacity + $0 }
            reads = []
        case "read90":
            keys = (0..<ops).map { _ in Int(rng.next() % UInt64(capacity)) }
            reads = (0..<ops).map { _ in rng.next() % 10 != 0 }
        default:
            keys = (0..<ops).map { _ in Int(rng.next() % UInt64(2 * capacity)) }
            reads = (0..<ops).map { _ in rng.next() & 1 == 0 }
        }
    }

    /// ns/op of one run on a fresh target filled with `0..<capacity`, the operations split evenly
    /// across `threads`.
    func measureOnce<T: BenchTarget>(threads: Int, make: () -> T) -> Double where T: SendableMetatype {
        let target = make()
        for key in 0..<capacity { target.set(key, key) }
        target.settle()
        let box = UncheckedSendable(target)
        let chunk = keys.count / threads
        let plan = UncheckedSendable(self)
        let start = StartLine.run(threads: threads) { t in
            let end = t == threads - 1 ? plan.value.keys.count : (t + 1) * chunk
            blackHole(plan.value.run(box.value.worker(t), (t * chunk)..<end))
        }
        // Writes a SharedCache still holds in its queue are part of the work: applied before
        // the clock stops (a review found a third of set-evict's writes still queued).
        target.settle()
        let elapsed = DispatchTime.now().uptimeNanoseconds - start
        return Double(elapsed) / Double(keys.count)
    }

    private func run<T: BenchTarget>(_ target: T, _ range: Range<Int>) -> Int {
        var checksum = 0
        switch workload {
        case "get-hit", "get-miss":
            for i in range { checksum &+= target.get(keys[i]) ?? 1 }
        case "set-evict":
            for i in range { target.set(i, keys[i]) }
        default:
            for i in range {
                if reads[i] { checksum &+= target.get(keys[i]) ?? 1 } else { target.set(i, keys[i]) }
            }
        }
        return checksum
    }
}

/// Lets the benchmark hand a thread-safe target (`Cache`, `NSCache`) to several threads.
struct UncheckedSendable<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

/// Keeps a result alive so the optimizer cannot drop the loop that made it.
@inline(never)
func blackHole(_ value: Int) {
    if value == .min { print("") }
}
