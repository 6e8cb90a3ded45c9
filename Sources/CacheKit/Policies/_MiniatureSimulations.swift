/// Miniature simulations (Waldspurger et al., "Cache Modeling and Optimization using Miniature
/// Simulations", USENIX ATC 2017) of the candidate policies of ``EvictionPolicy/adaptive``, and
/// the rule that picks among them.
///
/// **Sampling.** A key takes part when a multiplicative remix of its 32-bit hash falls below
/// `rate × 2³²`: spatial sampling as in SHARDS (Waldspurger et al., FAST 2015), so a sampled key
/// is sampled on every request and a miniature sees a fixed share of the keys with all their
/// requests. The rate is `512 / capacity`, at most 1: each miniature is a real CacheKit engine
/// holding `min(capacity, 512)` entries, the capacity scaled by the rate, as the paper scales
/// its mini-caches. A cache of 50,000 entries samples 1% of its keys.
///
/// **Decision.** For every pair of candidates the simulations count the sampled requests where
/// one hit and the other missed, with exponential forgetting: the counts halve every
/// `32 × 512` sampled requests (`32 × capacity` below 512 entries). Every quarter of a
/// miniature's capacity in sampled requests, the live candidate `l` is compared with each
/// other candidate `i` by McNemar's test on those paired counts: `i` beats `l` when
/// `b − c > z·√(b + c)`, with `b` the requests where `i` hit and `l` missed, `c` the reverse,
/// and `z = 3.29` (two-sided, 0.1%). Among those that beat it, the one with the largest
/// `b − c` is chosen. The test is the hysteresis: an even contest, or one decided by a few
/// requests, never switches, and a switch back needs the evidence to turn. After a choice, the
/// next test waits for a miniature's capacity of sampled requests, the cache's capacity in
/// requests, so that switches, O(capacity) each, cost O(1) per request amortized.
///
/// The miniature size, the half-life and `z` were measured over the 28 trace cases of
/// <doc:ChoosingAPolicy> (miniatures of 256 to 2,048 entries, half-lives of 4 to 64 times a
/// miniature, `z` of 2.58 and 3.29); a cost term added to the test, a first policy other than
/// W-TinyLFU and a test at every halving only each measured worse.
@usableFromInline
final class _MiniatureSimulations {
    /// The candidates, in order; the first is the live policy until the simulations choose.
    @usableFromInline
    static let candidates: [EvictionPolicy] = [.wTinyLFU, .s3fifo, .arc]

    /// The most entries one miniature holds.
    @usableFromInline
    static let miniatureCapacity = 512

    /// The z-score of McNemar's test: two-sided, 0.1%.
    static let zScore = 3.29

    /// A sampled key: its hash, hashed again by a fixed function, so that the same requests
    /// give the same decisions in every process.
    struct Key: Hashable {
        var hash: UInt32

        func hash(into hasher: inout Hasher) { hasher.combine(hash) }

        func _rawHashValue(seed: Int) -> Int {
            let z = UInt64(hash) &* 0x9E37_79B9_7F4A_7C15
            return Int(bitPattern: UInt(z ^ (z >> 29)))
        }
    }

    /// One candidate's miniature cache.
    final class Miniature {
        var core: _CacheCore<Key, Bool>

        init(policy: EvictionPolicy, capacity: Int) {
            core = _CacheCore(countLimit: capacity, totalCostLimit: 0) { _AnyPolicy(policy, slotCapacity: $0) }
        }

        /// Whether `key` was cached; a miss inserts it.
        func request(_ key: Key) -> Bool {
            var removals = _Removals<Key, Bool>()
            return core.access(key, insertingOnMiss: true, removals: &removals)
        }
    }

    /// The most switches `switches` keeps (the latest).
    static let switchLogLimit = 1_024

    private(set) var miniatures: [Miniature] = []
    /// `discordant[i * k + j]`: sampled requests where candidate `i` hit and `j` missed, decayed.
    private(set) var discordant: [Double]
    /// Sampled requests per halving of `discordant`.
    private(set) var halfLife = 0
    private var sinceHalving = 0
    /// Sampled requests between two tests.
    private(set) var checkInterval = 1
    /// Sampled requests since the last test, and since the last switch was chosen.
    private var sinceCheck = 0
    private var sinceSwitch = 0
    /// The capacity the miniatures are scaled from (`0`: none yet).
    @usableFromInline private(set) var capacity = 0
    /// The entries each miniature holds.
    private(set) var miniatureEntries = 0
    /// The sampling threshold: a key is sampled when its remixed hash is below it.
    private(set) var threshold: UInt64 = 0
    /// The latest switches, oldest first.
    private(set) var switches: [_PolicySwitch] = []

    @usableFromInline
    init() {
        let k = Self.candidates.count
        discordant = Array(repeating: 0, count: k * k)
    }

    /// Whether a key with this hash is sampled at the current rate.
    @inlinable
    @inline(__always)
    static func remix(_ hash: UInt32) -> UInt64 { (UInt64(hash) &* 0xD6E8_FEB8_6659_FD93) >> 32 }

    /// Scales the miniatures to a cache of `capacity` entries (`0`: simulate nothing). A new
    /// capacity changes the rate, hence the sample: the miniatures start afresh, and so does
    /// the evidence.
    @usableFromInline
    func scale(to capacity: Int) -> UInt64 {
        guard capacity != self.capacity else { return threshold }
        self.capacity = capacity
        for i in discordant.indices { discordant[i] = 0 }
        sinceHalving = 0
        guard capacity > 0 else {
            miniatures = []
            threshold = 0
            return 0
        }
        let entries = Swift.min(capacity, Self.miniatureCapacity)
        miniatureEntries = entries
        // rate = entries / capacity, as a share of 2^32.
        threshold = UInt64((Double(entries) / Double(capacity) * 4_294_967_296).rounded(.up))
        miniatures = Self.candidates.map { Miniature(policy: $0, capacity: entries) }
        halfLife = 32 * entries
        checkInterval = Swift.max(1, entries / 4)
        sinceSwitch = 0
        sinceCheck = 0
        return threshold
    }

    /// Replays one sampled request through every miniature. Returns the candidate to switch to
    /// when this request ends an epoch and the test picks one other than `live`, else `nil`.
    @usableFromInline
    func request(_ hash: UInt32, live: Int) -> Int? {
        let key = Key(hash: hash)
        var hits: UInt32 = 0
        for (i, miniature) in miniatures.enumerated() where miniature.request(key) {
            hits |= 1 << UInt32(i)
        }
        let k = miniatures.count
        let all: UInt32 = (1 << UInt32(k)) - 1
        if hits != 0 && hits != all {
            for i in 0..<k where hits & (1 << UInt32(i)) != 0 {
                for j in 0..<k where hits & (1 << UInt32(j)) == 0 {
                    discordant[i * k + j] += 1
                }
            }
        }
        sinceHalving += 1
        sinceSwitch += 1
        sinceCheck += 1
        if sinceHalving >= halfLife {
            sinceHalving = 0
            for i in discordant.indices { discordant[i] *= 0.5 }
        }
        // A switch costs O(capacity): at most one per `miniature capacity` sampled requests,
        // that is per `capacity` requests of the cache.
        guard sinceCheck >= checkInterval, sinceSwitch >= miniatureEntries else { return nil }
        sinceCheck = 0
        guard let choice = winner(against: live) else { return live }
        sinceSwitch = 0
        return choice
    }

    /// The candidate that beats `live` by McNemar's test with the largest margin, or `nil`.
    func winner(against live: Int) -> Int? {
        let k = miniatures.count
        var best: Int?
        var bestMargin = 0.0
        for i in 0..<k where i != live {
            let b = discordant[i * k + live]
            let c = discordant[live * k + i]
            let margin = b - c
            if margin > Self.zScore * (b + c).squareRoot() && margin > bestMargin {
                best = i
                bestMargin = margin
            }
        }
        return best
    }

    /// Records a switch in the log, dropping the oldest past `switchLogLimit`.
    @usableFromInline
    func log(_ entry: _PolicySwitch) {
        if switches.count == Self.switchLogLimit { switches.removeFirst() }
        switches.append(entry)
    }

    /// The hit ratio of each candidate's miniature since it was scaled (for the simulator).
    var hitRatios: [Double] {
        miniatures.map { m in
            let s = m.core.stats
            let requests = s.hits + s.misses
            return requests == 0 ? 0 : Double(s.hits) / Double(requests)
        }
    }
}

/// One switch of an adaptive cache's live policy (for the simulator and tests).
@usableFromInline
package struct _PolicySwitch: Equatable, Sendable {
    /// Requests the policy had heard (hits, updates and new keys) when it switched.
    package var request: Int
    /// The live policy before the switch.
    package var from: EvictionPolicy
    /// The live policy after it.
    package var to: EvictionPolicy
}

extension _StateHost {
    /// The switches of an ``EvictionPolicy/adaptive`` cache, oldest first (the latest 1,024);
    /// empty for any other policy.
    package var _policySwitches: [_PolicySwitch] {
        _withState { state in
            guard case .adaptive(let policy) = state.core.policy else { return [] }
            return policy.state.pointee.simulations.switches
        }
    }

    /// Each candidate's name and its miniature's hit ratio since the miniatures were last
    /// scaled, for an ``EvictionPolicy/adaptive`` cache; empty for any other policy.
    package var _miniatureHitRatios: [(policy: EvictionPolicy, hitRatio: Double)] {
        _withState { state in
            guard case .adaptive(let policy) = state.core.policy else { return [] }
            return Array(zip(_MiniatureSimulations.candidates, policy.state.pointee.simulations.hitRatios))
        }
    }

    /// The policy that decides evictions now: the configured one, or an adaptive cache's live
    /// candidate.
    package var _livePolicy: EvictionPolicy {
        _withState { state in
            guard case .adaptive(let policy) = state.core.policy else { return state.core.policy.policy }
            return policy.state.pointee.live.policy
        }
    }
}
