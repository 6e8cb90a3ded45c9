import CacheKitSimulator
import Dispatch

/// One workload's operations, made before timing: keys and, for `mix` and `read90`, which
/// operations read.
package struct Plan: Sendable {
    /// The workloads a plan can make, in the order the benchmarks list them.
    package static let workloads = ["get-hit", "get-miss", "set-evict", "mix", "read90"]

    package let workload: String
    package let capacity: Int
    let keys: [Int]
    let reads: [Bool]

    /// Keys the workload uses lie in `0..<keyUniverse`.
    package var keyUniverse: Int {
        switch workload {
        case "set-evict": capacity + keys.count
        default: 2 * capacity
        }
    }

    /// Makes `ops` operations of `workload` for a target of `capacity` entries: get-hit reads
    /// keys it holds, get-miss keys it does not, set-evict sets a new key each time, mix is 50%
    /// get and 50% set over twice the capacity, read90 90% get and 10% set over the capacity.
    package init(workload: String, capacity: Int, ops: Int) {
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
    package func measureOnce<T: BenchTarget>(threads: Int, make: () -> T) -> Double where T: SendableMetatype {
        let target = make()
        for key in 0..<capacity { target.set(key, key) }
        target.settle()
        let box = UncheckedSendable(target)
        let chunk = keys.count / threads
        let plan = self
        let start = StartLine.run(threads: threads) { t in
            let end = t == threads - 1 ? plan.keys.count : (t + 1) * chunk
            blackHole(plan.run(box.value.worker(t), (t * chunk)..<end))
        }
        // Writes a SharedCache still holds in its queue are part of the work: applied before
        // the clock stops, or set-evict would leave a third of its writes uncounted.
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
