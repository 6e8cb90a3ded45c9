import CacheKitSimulator
import Foundation

/// The tests' generator with a fixed seed, so that a failing random test replays with its seed:
/// the simulator's SplitMix64.
package typealias SeededGenerator = SplitMix64

/// A key whose hash is fixed whatever the process's seed: the simulator's trace key.
package typealias FixedHashKey = TraceKey

extension SplitMix64 {
    /// A number in `0 ..< bound`.
    package mutating func next(below bound: Int) -> Int { Int(next() % UInt64(bound)) }
}

/// A trace folder a trace suite needs is absent under CI, where the suite must run rather than
/// skip.
package struct MissingTraces: Error, CustomStringConvertible {
    package let path: String

    package init(path: String) { self.path = path }

    package var description: String {
        let layout = "lay out ../shared/traces beside the package"
        return "\(path) is absent: with CI=true the trace suites must run, not skip (\(layout))"
    }
}
