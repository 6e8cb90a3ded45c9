import Benchmark
import CacheKit
import Synchronization

// Each benchmark runs its scaled iterations (1,000 under `.kilo`) as cache operations on a cache
// filled to capacity in setup (outside the measurement); metrics are shown per operation, rounded.
// The malloc counts are the point: a get-hit and a steady-state set (evicting one entry) must
// allocate nothing. Soon after the fill ARC's and S3-FIFO's ghosts still grow (a few mallocs per
// 1,000 sets); the warmed cases measure the steady state exactly.

let capacity = 10_000
let operations = 10_000

/// A SplitMix64 stream of keys over twice the capacity (the mix's key space), from `seed`.
struct MixKeys {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int((z ^ (z >> 31)) % UInt64(2 * capacity))
    }
}

/// Keys from a fixed-seed generator, so every run measures the same operations.
let mixKeys: [Int] = {
    var keys = MixKeys(seed: 42)
    return (0..<operations).map { _ in keys.next() }
}()

/// Counts the samples of the warmed cases, so that each sample measures a stream of its own.
let warmedSamples = Atomic<UInt64>(0)

func filledCache(_ policy: EvictionPolicy) -> Cache<Int, Int> {
    let cache = Cache<Int, Int>(countLimit: capacity, policy: policy)
    for key in 0..<capacity { cache[key] = key }
    return cache
}

/// A filled cache after `warmUp` mix operations (keys over twice the capacity, as the mix): long
/// enough for ARC's and S3-FIFO's ghosts to reach their full size (about 57,000–68,000
/// operations at this capacity), so that what follows counts the steady state's allocations.
/// Returns the key stream too, for the measured operations to continue it.
func warmedCache(_ policy: EvictionPolicy, seed: UInt64, warmUp: Int = 150_000) -> (Cache<Int, Int>, MixKeys) {
    let cache = filledCache(policy)
    var keys = MixKeys(seed: seed)
    for i in 0..<warmUp {
        let key = keys.next()
        if i & 1 == 0 { blackHole(cache[key]) } else { cache[key] = i }
    }
    return (cache, keys)
}

func filledSerialCache(_ policy: EvictionPolicy) -> SerialCache<Int, Int> {
    let cache = SerialCache<Int, Int>(countLimit: capacity, policy: policy)
    for key in 0..<capacity { cache[key] = key }
    return cache
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .mallocCountTotal, .throughput],
        scalingFactor: .kilo,
        maxDuration: .seconds(2)
    )

    for policy in EvictionPolicy.allCases {
        Benchmark("Cache \(policy) get-hit") { benchmark in
            let cache = filledCache(policy)
            benchmark.startMeasurement()
            for i in benchmark.scaledIterations { blackHole(cache[i % capacity]) }
        }
        Benchmark("Cache \(policy) get-miss") { benchmark in
            let cache = filledCache(policy)
            benchmark.startMeasurement()
            for i in benchmark.scaledIterations { blackHole(cache[capacity + i]) }
        }
        Benchmark("Cache \(policy) set-evict") { benchmark in
            let cache = filledCache(policy)
            benchmark.startMeasurement()
            for i in benchmark.scaledIterations { cache[capacity + i] = i }
        }
        Benchmark("Cache \(policy) mix") { benchmark in
            let cache = filledCache(policy)
            benchmark.startMeasurement()
            for i in benchmark.scaledIterations {
                let key = mixKeys[i % operations]
                if i & 1 == 0 { blackHole(cache[key]) } else { cache[key] = i }
            }
        }
        // The same after a warm-up, unscaled: each sample is one run of `operations` mix
        // operations on a cache in its steady state, and its malloc count is that run's total,
        // not a per-operation figure rounded to an integer. No policy may allocate here (LFU
        // excepted: it allocates when a new frequency is first reached, rarely).
        Benchmark(
            "Cache \(policy) mix, warmed, per 10k ops",
            configuration: .init(
                metrics: [.wallClock, .mallocCountTotal],
                scalingFactor: .one,
                maxDuration: .seconds(2)
            )
        ) { benchmark in
            // Each sample warms a cache from a seed of its own and measures the next
            // `operations` keys of the same stream: every sample counts different operations.
            let seed = warmedSamples.add(1, ordering: .relaxed).newValue
            let (cache, stream) = warmedCache(policy, seed: seed)
            var keys = stream
            benchmark.startMeasurement()
            for i in 0..<operations {
                let key = keys.next()
                if i & 1 == 0 { blackHole(cache[key]) } else { cache[key] = i }
            }
        }
        Benchmark("SerialCache \(policy) mix") { benchmark in
            let cache = filledSerialCache(policy)
            benchmark.startMeasurement()
            for i in benchmark.scaledIterations {
                let key = mixKeys[i % operations]
                if i & 1 == 0 { blackHole(cache[key]) } else { cache[key] = i }
            }
        }
    }

    // The baseline does the same lookups and inserts as the caches' mix and stays bounded the
    // cheapest way there is: a ring of inserted keys, the oldest removed when the ring is full
    // (FIFO eviction with no bookkeeping per hit), as `cachekit bench` does.
    Benchmark("Dictionary mix") { benchmark in
        var dictionary: [Int: Int] = [:]
        var ring = Array(0..<capacity)
        var ringHead = 0
        for key in 0..<capacity { dictionary[key] = key }
        benchmark.startMeasurement()
        for i in benchmark.scaledIterations {
            let key = mixKeys[i % operations]
            if i & 1 == 0 {
                blackHole(dictionary[key])
            } else if dictionary.updateValue(i, forKey: key) == nil {
                dictionary.removeValue(forKey: ring[ringHead])
                ring[ringHead] = key
                ringHead = ringHead + 1 == capacity ? 0 : ringHead + 1
            }
        }
    }
}
