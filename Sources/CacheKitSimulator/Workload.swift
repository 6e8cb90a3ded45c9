import Foundation

/// Synthetic traces, generated from a seed so every run sees the same requests.
public enum Workload: Sendable, Equatable {
    /// Keys `0..<keys` drawn with Zipf popularity: key rank *r* has weight 1 / *r*^`skew`.
    case zipf(keys: Int, skew: Double, requests: Int)
    /// The Zipf workload with a scan after every `scanEvery` Zipf requests: `scanLength` keys never seen
    /// before, each requested once (a backup or a batch job sweeping through).
    case zipfWithScans(keys: Int, skew: Double, requests: Int, scanEvery: Int, scanLength: Int)
    /// Keys `0..<keys` requested in order, over and over (LRU's worst case when it is too small).
    case loop(keys: Int, requests: Int)

    /// The embedded default: 1,000,000 requests, Zipf 0.9 over 100,000 keys, with a scan of
    /// 5,000 new keys every 100,000 requests: a popular core that LRU alone handles well, plus the
    /// scans that flush an LRU cache.
    public static let standard = Workload.zipfWithScans(
        keys: 100_000,
        skew: 0.9,
        requests: 1_000_000,
        scanEvery: 100_000,
        scanLength: 5_000
    )

    private func validate() {
        func check(keys: Int, requests: Int, skew: Double?) {
            precondition(keys > 0, "Workload: keys must be positive (got \(keys))")
            precondition(requests >= 0, "Workload: requests must not be negative (got \(requests))")
            if let skew {
                precondition(skew >= 0 && skew.isFinite, "Workload: skew must be finite and >= 0 (got \(skew))")
            }
        }
        switch self {
        case .zipf(let keys, let skew, let requests):
            check(keys: keys, requests: requests, skew: skew)
        case .zipfWithScans(let keys, let skew, let requests, let every, let length):
            check(keys: keys, requests: requests, skew: skew)
            precondition(every > 0, "Workload: scanEvery must be positive (got \(every))")
            precondition(length >= 0, "Workload: scanLength must not be negative (got \(length))")
        case .loop(let keys, let requests):
            check(keys: keys, requests: requests, skew: nil)
        }
    }

    /// A short description, used as the trace's name.
    public var name: String {
        switch self {
        case .zipf(let keys, let skew, let requests):
            "zipf(skew \(skew), \(keys) keys, \(requests) requests)"
        case .zipfWithScans(let keys, let skew, let requests, let every, let length):
            "zipf+scans(skew \(skew), \(keys) keys, \(requests) requests, \(length)-key scan every \(every))"
        case .loop(let keys, let requests):
            "loop(\(keys) keys, \(requests) requests)"
        }
    }

    /// The trace this workload produces with `seed`.
    ///
    /// - Precondition: `keys` is positive; `requests` and `scanLength` are not negative;
    ///   `scanEvery` is positive; `skew` is finite and not negative. A violation traps with a
    ///   message naming the parameter.
    public func trace(seed: UInt64 = 42) -> Trace {
        validate()
        var rng = SplitMix64(seed: seed)
        var keys: [Int] = []
        switch self {
        case .zipf(let count, let skew, let requests):
            let zipf = ZipfSampler(keys: count, skew: skew)
            keys.reserveCapacity(requests)
            for _ in 0..<requests { keys.append(zipf.next(&rng)) }
        case .zipfWithScans(let count, let skew, let requests, let every, let length):
            let zipf = ZipfSampler(keys: count, skew: skew)
            keys.reserveCapacity(requests)
            var fresh = count  // scan keys lie above the Zipf key space and never repeat
            var sinceScan = 0  // Zipf requests since the last scan
            while keys.count < requests {
                if sinceScan == every {
                    for _ in 0..<Swift.min(length, requests - keys.count) {
                        keys.append(fresh)
                        fresh += 1
                    }
                    sinceScan = 0
                }
                if keys.count < requests {
                    keys.append(zipf.next(&rng))
                    sinceScan += 1
                }
            }
        case .loop(let count, let requests):
            keys = (0..<requests).map { $0 % count }
        }
        return Trace(name: name, keys: keys)
    }
}

/// Draws Zipf-distributed ranks by binary search over the cumulative weights.
struct ZipfSampler {
    private let cumulative: [Double]

    init(keys: Int, skew: Double) {
        precondition(keys > 0, "keys must be positive (got \(keys))")
        precondition(skew >= 0, "skew must not be negative (got \(skew))")
        var sum = 0.0
        var cumulative: [Double] = []
        cumulative.reserveCapacity(keys)
        for rank in 1...keys {
            sum += 1 / pow(Double(rank), skew)
            cumulative.append(sum)
        }
        self.cumulative = cumulative.map { $0 / sum }
    }

    func next(_ rng: inout SplitMix64) -> Int {
        let u = Double(rng.next() >> 11) / Double(1 << 53)
        var lo = 0
        var hi = cumulative.count - 1
        while lo < hi {
            let mid = (lo + hi) / 2
            if cumulative[mid] < u { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
}

/// SplitMix64: a tiny seeded generator, so a workload (or a benchmark) sees the same numbers on
/// every run.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator that starts from `seed`.
    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
