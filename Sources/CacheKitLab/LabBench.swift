import CacheKit
import CacheKitBenchSupport
import Foundation

/// `CacheKitLab sketches` and `CacheKitLab scaling`: measurements that explain CacheKit's
/// figures rather than compare it with what a user could pick instead.
enum LabBench {
    /// The subjects of `sketches`: where the time of `Cache` over `Dictionary` goes.
    static let sketchSubjects = [
        "Dictionary", "Dictionary+lock", "SerialCache", "Cache", "SlotSketch", "SlotSketch+lock", "SlotSketch+mutex",
        "SlotSketch+spin",
        "InlineSketch", "InlineSketch+lock",
    ]

    static let sketchesUsage = """
        usage: CacheKitLab sketches [--capacity N] [--ops N] [--repetitions N] [--workloads LIST]
                                    [--subjects LIST] [--threads LIST] [--json]

        ns/op of two minimal exact-LRU caches for Int keys beside Dictionary, SerialCache (lru)
        and Cache (lru), in one run (medians of rounds; ratios are medians of per-round ratios).
        SlotSketch has CacheKit's layout (records in a slot array, an index of slot numbers);
        InlineSketch keeps each record in its hash bucket. Each is checked against a reference LRU
        first. "+lock" takes CacheKit's lock around each operation, as Cache does;
        SlotSketch+mutex takes Synchronization.Mutex instead; SlotSketch+spin a spin lock whose
        unlock is a plain store (a measurement of what the lock's unlock costs, not a lock to
        use). --threads (default 1) runs the locked subjects and Cache on each count of threads
        too (throughput on N threads is ops / wall time). Workloads: \(Plan.workloads.joined(separator: ","))
        (default: mix).
        """

    static let scalingUsage = """
        usage: CacheKitLab scaling [--capacity N] [--ops N] [--repetitions N] [--json]

        read90 throughput on 1 and 2 threads of SharedCache (lru, bounded), an unbounded
        SharedCache, one private unbounded SharedCache per thread (nothing shared: the most any
        way of splitting one cache into parts could reach) and Dictionary reads. On a machine
        whose two threads do not get two free cores, the figures say more about the machine
        than about the caches.
        """

    /// Parses the options a bench takes (`extraFlags` beside the common ones); `nil` for `--help`.
    static func options(
        _ arguments: [String],
        extraFlags: Set<String> = []
    ) throws -> (Arguments, capacity: Int, ops: Int)? {
        let args = try Arguments(
            arguments,
            valueFlags: Set(["capacity", "ops", "repetitions"]).union(extraFlags),
            booleanFlags: ["json", "help"]
        )
        if args.flag("help") { return nil }
        return (
            args, try args.int("capacity", default: 50_000, maximum: 1 << 28),
            try args.int("ops", default: 1_000_000, maximum: 1 << 30)
        )
    }

    static func sketches(_ arguments: [String]) throws {
        guard let (args, capacity, ops) = try options(arguments, extraFlags: ["workloads", "subjects", "threads"])
        else {
            print(sketchesUsage)
            return
        }
        let workloads = try args.list("workloads", default: ["mix"], allowed: Plan.workloads)
        let chosen = Set(try args.list("subjects", default: sketchSubjects, allowed: sketchSubjects))
        let repetitions = try args.int("repetitions", default: 5)
        let threadCounts = try args.threadCounts("threads", default: [1])
        warnIfDebug()
        // A sketch is checked whether it runs bare or behind a lock.
        if chosen.contains(where: { $0.hasPrefix("SlotSketch") }) {
            try LRUSketchCheck.verify("SlotSketch", make: SlotSketch.init)
        }
        if chosen.contains(where: { $0.hasPrefix("InlineSketch") }) {
            try LRUSketchCheck.verify("InlineSketch", make: InlineSketch.init)
        }
        var results: [BenchResult] = []
        for workload in workloads {
            let plan = Plan(workload: workload, capacity: capacity, ops: ops)
            let bounded = workload == "set-evict" ? capacity : nil
            var cases: [BenchCase] = []
            func add<T: BenchTarget & SendableMetatype>(
                _ subject: String,
                policy: String = "",
                _ make: @escaping () -> T
            ) {
                guard chosen.contains(subject) else { return }
                // Only what takes a lock may be shared by threads.
                let shared = subject == "Cache" || subject.contains("+")
                for threads in shared ? threadCounts : [1] {
                    cases.append(
                        BenchCase(subject, policy: policy, threads: threads) {
                            plan.measureOnce(threads: threads, make: make)
                        }
                    )
                }
            }
            add("Dictionary") { DictionaryTarget(boundedTo: bounded) }
            add("Dictionary+lock") { LockedTarget(DictionaryTarget(boundedTo: bounded)) }
            add("SerialCache", policy: "lru") { SerialCache<Int, Int>(countLimit: capacity, policy: .lru) }
            add("Cache", policy: "lru") { Cache<Int, Int>(countLimit: capacity, policy: .lru) }
            add("SlotSketch") { SlotSketch(capacity: capacity) }
            add("SlotSketch+lock") { LockedTarget(SlotSketch(capacity: capacity)) }
            add("SlotSketch+mutex") { MutexLockedTarget(SlotSketch(capacity: capacity)) }
            add("SlotSketch+spin") { SpinLockedTarget(SlotSketch(capacity: capacity)) }
            add("InlineSketch") { InlineSketch(capacity: capacity) }
            add("InlineSketch+lock") { LockedTarget(InlineSketch(capacity: capacity)) }
            results += runRounds(cases, workload: workload, repetitions: repetitions, quiet: args.flag("json"))
        }
        try report(results, json: args.flag("json"))
    }

    static func scaling(_ arguments: [String]) throws {
        guard let (args, capacity, ops) = try options(arguments) else {
            print(scalingUsage)
            return
        }
        let repetitions = try args.int("repetitions", default: 5)
        warnIfDebug()
        let plan = Plan(workload: "read90", capacity: capacity, ops: ops)
        let reads = Plan(workload: "get-hit", capacity: capacity, ops: ops)
        var cases: [BenchCase] = []
        for threads in [1, 2] {
            cases.append(
                BenchCase("SharedCache", policy: "lru", threads: threads) {
                    plan.measureOnce(threads: threads) { SharedCache<Int, Int>(countLimit: capacity, policy: .lru) }
                }
            )
            cases.append(
                BenchCase("SharedCache-unbounded", threads: threads) {
                    plan.measureOnce(threads: threads) { SharedCache<Int, Int>() }
                }
            )
            cases.append(
                BenchCase("SharedCache-private", threads: threads) {
                    plan.measureOnce(threads: threads) { PrivateSharedCaches(threads: threads) }
                }
            )
            cases.append(
                BenchCase("Dictionary-reads", threads: threads) {
                    reads.measureOnce(threads: threads) { DictionaryTarget(boundedTo: nil) }
                }
            )
        }
        let results = runRounds(cases, workload: "read90", repetitions: repetitions, quiet: args.flag("json"))
        if args.flag("json") {
            try results.printJSON()
            return
        }
        try report(results, json: false)
        for subject in ["SharedCache", "SharedCache-unbounded", "SharedCache-private", "Dictionary-reads"] {
            let policy = subject == "SharedCache" ? "lru" : ""
            guard let one = results.find(subject, policy, "read90"),
                let two = results.find(subject, policy, "read90", threads: 2)
            else { continue }
            print("\(subject): 2 threads have \(formatRatio(one.ratio(to: two))) the throughput of 1")
        }
    }

    /// Prints `results` as JSON or as a table with each case's cost over `Dictionary`'s.
    static func report(_ results: [BenchResult], json: Bool) throws {
        if json {
            try results.printJSON()
            return
        }
        printAligned(
            header: ["subject", "policy", "workload", "threads", "ns/op", "vs Dictionary"],
            rows: results.map { r in
                let baseline =
                    results.find("Dictionary", "", r.workload) ?? results.find("Dictionary-reads", "", r.workload)
                return [
                    r.subject, r.policy, r.workload, "\(r.threads)", String(format: "%.1f", r.nsPerOp),
                    baseline.map { formatRatio(r.ratio(to: $0)) } ?? "-",
                ]
            },
            rightAligned: [3, 4, 5]
        )
    }
}
