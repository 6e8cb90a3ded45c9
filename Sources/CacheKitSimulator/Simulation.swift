import CacheKit

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
