import CacheKit
import Foundation
import Synchronization

/// What one policy at one size did on a trace.
public struct SimulationResult: Sendable, Equatable {
    /// The policy's name (`lru`, `sieve`, …, or `opt` for the bound).
    public var policy: String
    /// The cache size in entries.
    public var size: Int
    /// Requests replayed.
    public var requests: Int
    /// Requests whose key was cached.
    public var hits: Int
    /// Requests whose key was not cached (and was then inserted).
    public var misses: Int
    /// Seconds spent replaying (reading the trace excluded).
    public var seconds: Double
    /// For ``EvictionPolicy/adaptive``: each time it moved to another policy, in order (the
    /// latest 1,024); empty for every other policy.
    public var switches: [PolicySwitch]
    /// For ``EvictionPolicy/adaptive``: each candidate's name and the hit ratio of its
    /// miniature simulation on the sampled keys; empty for every other policy.
    public var miniatures: [MiniatureResult] = []
    /// How many threads replayed the requests together (see
    /// ``Simulator/replay(_:policy:size:threads:)``); 1 for every other replay.
    public var threads = 1
    /// For a replay on several threads: the hits of one thread replaying the same keys in the
    /// order the threads served them (each request's turn taken once served), with the policy
    /// hearing every read at once. The difference from ``hits`` is what late and lost reads cost
    /// the policy; the difference from a replay in the trace's order is the scheduler's.
    /// `nil` for a one-thread replay.
    public var hitsInServedOrder: Int?
    /// For a replay on several threads: the misses whose insertion found the key already
    /// inserted by another thread that missed it at the same time; 0 for a one-thread replay.
    public var concurrentMisses = 0

    /// Creates a result record.
    public init(
        policy: String,
        size: Int,
        requests: Int,
        hits: Int,
        misses: Int,
        seconds: Double,
        switches: [PolicySwitch] = []
    ) {
        self.policy = policy
        self.size = size
        self.requests = requests
        self.hits = hits
        self.misses = misses
        self.seconds = seconds
        self.switches = switches
    }

    /// Hits over requests.
    public var hitRatio: Double { requests == 0 ? 0 : Double(hits) / Double(requests) }
    /// Misses over requests.
    public var missRatio: Double { 1 - hitRatio }
    /// Replay speed.
    public var requestsPerSecond: Double { seconds > 0 ? Double(requests) / seconds : .infinity }
}

/// An adaptive policy's move from one policy to another during a replay.
public struct PolicySwitch: Sendable, Equatable {
    /// The request (counting from 1) whose new key the switch came before.
    public var request: Int
    /// The policy's name before the switch.
    public var from: String
    /// The policy's name after it.
    public var to: String

    /// Creates a switch record.
    public init(request: Int, from: String, to: String) {
        self.request = request
        self.from = from
        self.to = to
    }
}

/// How one candidate of an adaptive policy did in its miniature simulation.
public struct MiniatureResult: Sendable, Equatable {
    /// The candidate's name.
    public var policy: String
    /// Its hit ratio on the sampled keys.
    public var hitRatio: Double

    /// Creates a record.
    public init(policy: String, hitRatio: Double) {
        self.policy = policy
        self.hitRatio = hitRatio
    }
}

/// Replays traces through CacheKit's own caches, and computes the optimal bound.
public enum Simulator {
    /// Replays `keys` through a `SerialCache` with `policy` and `countLimit: size`: the same
    /// engine and policy code a `Cache` runs. A request is a hit when the key is cached (which
    /// counts as a use); on a miss the key is inserted.
    ///
    /// Keys are hashed with a fixed function (`TraceKey`) instead of the process-seeded
    /// `Hasher`, so that policies that sample hashes (W-TinyLFU's sketch, the ghosts of ARC and
    /// S3-FIFO) give the same figures on every run.
    ///
    /// - Complexity: O(*n*) for *n* requests.
    public static func replay(_ keys: [Int], policy: EvictionPolicy, size: Int) -> SimulationResult {
        precondition(size > 0, "size must be positive (got \(size))")
        let cache = SerialCache<TraceKey, Bool>(countLimit: size, policy: policy)
        let clock = ContinuousClock()
        let start = clock.now
        let hits = cache._replay(keys.lazy.map { TraceKey(id: $0) }, insertingOnMiss: true)
        let elapsed = clock.now - start
        var result = SimulationResult(
            policy: policy.name,
            size: size,
            requests: keys.count,
            hits: hits,
            misses: keys.count - hits,
            seconds: elapsed.seconds,
            switches: cache._policySwitches.map {
                PolicySwitch(request: $0.request, from: $0.from.name, to: $0.to.name)
            }
        )
        result.miniatures = cache._miniatureHitRatios.map {
            MiniatureResult(policy: $0.policy.name, hitRatio: $0.hitRatio)
        }
        return result
    }

    /// Replays `keys` through a `Cache` with `policy` and `countLimit: size` on `threads` threads
    /// at once, to measure what concurrency costs the policy's hit ratio.
    ///
    /// Each thread takes the next request in trace order (from one shared counter), reads the
    /// key, and on a miss inserts it, so the cache sees the trace's order but for the requests
    /// in flight on other threads. The cache reads in parallel from the first request (as a
    /// `Cache` does once threads contend for it): its policy hears reads late, out of order
    /// between threads, or not at all when a read buffer is full while another thread replays
    /// it. Two threads may miss the same key at once; each counts a miss.
    ///
    /// The counts depend on how the scheduler interleaves the threads, so two runs differ. Two
    /// things move them away from ``replay(_:policy:size:)``'s: the scheduler, which serves the
    /// requests in another order (a thread that took a request and lost its core serves it
    /// thousands of requests late), and the policy's late and lost reads. To tell them apart,
    /// each request takes a turn once served (after its read, or after the insertion that
    /// follows a miss, when other threads can first see it), and the result's
    /// ``SimulationResult/hitsInServedOrder`` replays the keys in those turns' order on one
    /// thread: what the cache would have hit had it heard every read at once. That order counts
    /// a hit where two threads missed one key at once, the second before the first inserted it
    /// (``SimulationResult/concurrentMisses``, what a loader's single flight saves); the rest of
    /// the difference is the policy's.
    ///
    /// - Precondition: `size > 0` and `threads >= 1`.
    /// - Complexity: O(*n*) for *n* requests.
    public static func replay(_ keys: [Int], policy: EvictionPolicy, size: Int, threads: Int) -> SimulationResult {
        precondition(size > 0, "size must be positive (got \(size))")
        precondition(threads >= 1, "threads must be at least 1 (got \(threads))")
        let cache = Cache<TraceKey, Bool>(countLimit: size, policy: policy)
        cache._shareReads()
        let requests = SharedRequests(keys)
        let clock = ContinuousClock()
        let start = clock.now
        // Every replaying thread is new, the caller only waits: new threads read first one after
        // another, so that each takes a stripe of its own (see `_StripedLock.currentStripe`).
        let group = DispatchGroup()
        for _ in 0..<threads {
            group.enter()
            let thread = Thread {
                requests.replay(through: cache)
                group.leave()
            }
            thread.stackSize = 4 << 20  // as deep as the main thread's, for debug builds
            thread.start()
        }
        group.wait()
        let elapsed = clock.now - start
        let hits = requests.hits.load(ordering: .acquiring)
        let servedHits = requests.replayServed(policy: policy, size: size)
        var result = SimulationResult(
            policy: policy.name,
            size: size,
            requests: keys.count,
            hits: hits,
            misses: keys.count - hits,
            seconds: elapsed.seconds
        )
        result.threads = threads
        result.hitsInServedOrder = servedHits
        result.concurrentMisses = requests.concurrentMisses.load(ordering: .acquiring)
        return result
    }

    /// Replays `keys` `rounds` times, each through a fresh cache, and returns the fastest round.
    ///
    /// The counts are the same every round; only the time differs. On a shared machine other
    /// processes only ever add time to a round, so the fastest round is the best estimate of the
    /// replay's own speed (what `cachekit simulate --rounds` prints).
    ///
    /// - Precondition: `rounds >= 1`.
    public static func replay(_ keys: [Int], policy: EvictionPolicy, size: Int, rounds: Int) -> SimulationResult {
        fastest(of: rounds) { replay(keys, policy: policy, size: size) }
    }

    /// The result of `run` with the fewest seconds over `rounds` calls, checking that the counts
    /// agree.
    static func fastest(of rounds: Int, _ run: () -> SimulationResult) -> SimulationResult {
        precondition(rounds >= 1, "rounds must be at least 1 (got \(rounds))")
        var best = run()
        for _ in 1..<rounds {
            let next = run()
            precondition(
                next.hits == best.hits && next.misses == best.misses,
                "two replays of the same requests disagree: \(best.hits) and \(next.hits) hits"
            )
            if next.seconds < best.seconds { best = next }
        }
        return best
    }

    /// Belady's MIN with forced insertion: every missed key is admitted, and when the cache is
    /// full the victim is the cached key whose next request lies furthest in the future. No
    /// policy that admits every miss can miss less.
    ///
    /// - Complexity: O(*n* log *n*) time and O(*n*) memory for *n* requests.
    public static func optimal(_ keys: [Int], size: Int) -> SimulationResult {
        precondition(size > 0, "size must be positive (got \(size))")
        let clock = ContinuousClock()
        let start = clock.now
        let n = keys.count
        // nextUse[i]: where keys[i] is requested next; never again counts as n + i (distinct, later
        // than any real request, so ties cannot arise).
        var nextUse = [Int](repeating: 0, count: n)
        var lastSeen: [Int: Int] = [:]
        lastSeen.reserveCapacity(Swift.min(n, 1 << 20))
        for i in stride(from: n - 1, through: 0, by: -1) {
            nextUse[i] = lastSeen.updateValue(i, forKey: keys[i]) ?? (n + i)
        }
        lastSeen = [:]
        // cached[key] = the key's next use; the heap holds (next use, key) pairs, some stale.
        // No more keys can be cached than the trace has requests: a size beyond that (any
        // `Int`, from the command line) sizes nothing by itself.
        let room = Swift.min(size, n)
        var cached: [Int: Int] = [:]
        cached.reserveCapacity(room)
        var heap = MaxHeap()
        var hits = 0
        for i in 0..<n {
            let key = keys[i]
            if cached[key] != nil {
                hits += 1
            } else if cached.count == size {
                while true {
                    let top = heap.popMax()
                    if cached[top.key] == top.nextUse {
                        cached[top.key] = nil
                        break
                    }
                }
            }
            cached[key] = nextUse[i]
            heap.push(nextUse: nextUse[i], key: key)
            if heap.count > 4 * room + 1024 {  // drop stale pairs so memory tracks the cache size
                heap = MaxHeap(cached.map { ($0.value, $0.key) })
            }
        }
        return SimulationResult(
            policy: "opt",
            size: size,
            requests: n,
            hits: hits,
            misses: n - hits,
            seconds: (clock.now - start).seconds
        )
    }
}

/// A trace's requests handed out in order to the threads replaying them, the hits they count,
/// and the order they served them in.
private final class SharedRequests: @unchecked Sendable {
    let keys: [Int]
    let next = Atomic<Int>(0)
    let turns = Atomic<Int>(0)
    let hits = Atomic<Int>(0)
    /// Misses whose insertion found the key inserted by another thread meanwhile.
    let concurrentMisses = Atomic<Int>(0)
    /// The keys in the order of their turns. Each turn is written by the one thread that took
    /// it, and read after every thread has finished.
    private let servedKeys: UnsafeMutableBufferPointer<Int>

    init(_ keys: [Int]) {
        self.keys = keys
        servedKeys = .allocate(capacity: keys.count)
        servedKeys.initialize(repeating: 0)
    }

    deinit { servedKeys.deallocate() }

    /// The hits of one thread replaying the keys in the order they were served, through a
    /// `SerialCache` with `policy` and `countLimit: size`. Once every thread has finished.
    func replayServed(policy: EvictionPolicy, size: Int) -> Int {
        let cache = SerialCache<TraceKey, Bool>(countLimit: size, policy: policy)
        return cache._replay(servedKeys.lazy.map { TraceKey(id: $0) }, insertingOnMiss: true)
    }

    /// Takes requests until none is left: a read, on a miss an insertion, then its turn.
    func replay(through cache: Cache<TraceKey, Bool>) {
        var hits = 0
        var concurrentMisses = 0
        while true {
            let index = next.add(1, ordering: .relaxed).oldValue
            guard index < keys.count else { break }
            let key = TraceKey(id: keys[index])
            if cache[key] != nil {
                hits += 1
            } else if cache.setValue(true, forKey: key).outcome == .replaced {
                concurrentMisses += 1
            }
            servedKeys[turns.add(1, ordering: .relaxed).oldValue] = keys[index]
        }
        self.hits.add(hits, ordering: .releasing)
        self.concurrentMisses.add(concurrentMisses, ordering: .releasing)
    }
}

/// A binary max-heap of (next use, key) pairs, ordered by next use.
struct MaxHeap {
    private var items: [(nextUse: Int, key: Int)] = []

    init() {}

    init(_ pairs: [(Int, Int)]) {
        items = pairs.map { (nextUse: $0.0, key: $0.1) }
        for i in stride(from: items.count / 2 - 1, through: 0, by: -1) { siftDown(i) }
    }

    var count: Int { items.count }

    mutating func push(nextUse: Int, key: Int) {
        items.append((nextUse, key))
        var i = items.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard items[parent].nextUse < items[i].nextUse else { break }
            items.swapAt(parent, i)
            i = parent
        }
    }

    mutating func popMax() -> (nextUse: Int, key: Int) {
        let top = items[0]
        let last = items.removeLast()
        if !items.isEmpty {
            items[0] = last
            siftDown(0)
        }
        return top
    }

    private mutating func siftDown(_ start: Int) {
        var i = start
        while true {
            let l = 2 * i + 1
            let r = l + 1
            var largest = i
            if l < items.count && items[l].nextUse > items[largest].nextUse { largest = l }
            if r < items.count && items[r].nextUse > items[largest].nextUse { largest = r }
            if largest == i { return }
            items.swapAt(i, largest)
            i = largest
        }
    }
}

extension Duration {
    var seconds: Double {
        let (s, attoseconds) = components
        return Double(s) + Double(attoseconds) / 1e18
    }
}

/// A trace's key with a fixed hash: the SplitMix64 finalizer of its id, whatever the process's
/// hash seed. Replays are then reproducible to the request. (Trace keys come from files the user
/// chose, so the flooding protection that per-process seeds give is not needed here.) Tests use
/// it too, where a cache's decisions must not depend on the process.
package struct TraceKey: Hashable {
    package var id: Int

    package init(id: Int) { self.id = id }

    package func hash(into hasher: inout Hasher) { hasher.combine(id) }

    // The hash a `SerialCache` uses (`hashValue` is `_rawHashValue(seed: 0)`).
    package func _rawHashValue(seed: Int) -> Int {
        var z = UInt64(bitPattern: Int64(id)) &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int(bitPattern: UInt(z ^ (z >> 31)))
    }
}
