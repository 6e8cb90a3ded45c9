import CacheKitBenchSupport
import CacheKitSimulator

/// Checks a sketch against a reference LRU (an array in recency order) over random gets and
/// sets, so that a sketch measured by the benchmark is known to do a cache's work.
enum LRUSketchCheck {
    struct Mismatch: Error, CustomStringConvertible {
        let subject: String
        let capacity: Int
        let step: Int
        var description: String {
            "\(subject) disagrees with the reference LRU at capacity \(capacity), step \(step)"
        }
    }

    /// Checks at capacities where the list holds one, two or three entries, and at 96 and 100,
    /// whose tables are 3/4 and 2/5 full (long probe runs, and runs that wrap around the end).
    static func verify<T: BenchTarget>(_ subject: String, make: (Int) -> T) throws {
        for capacity in [1, 2, 3, 96, 100] {
            try verify(subject, capacity: capacity, make: make)
        }
    }

    static func verify<T: BenchTarget>(_ subject: String, capacity: Int, make: (Int) -> T) throws {
        let sketch = make(capacity)
        var order: [Int] = []  // least recent first
        var values: [Int: Int] = [:]
        var rng = SplitMix64(seed: 7)
        for step in 0..<100_000 {
            let key = Int(rng.next() % UInt64(3 * capacity))
            if rng.next() & 1 == 0 {
                let expected = order.firstIndex(of: key).map { values[order.remove(at: $0)]! }
                if expected != nil { order.append(key) }
                guard sketch.get(key) == expected else {
                    throw Mismatch(subject: subject, capacity: capacity, step: step)
                }
            } else {
                sketch.set(step, key)
                if let i = order.firstIndex(of: key) {
                    order.remove(at: i)
                } else if order.count == capacity {
                    values[order.removeFirst()] = nil
                }
                order.append(key)
                values[key] = step
            }
        }
        // Every key the model holds is still there, with its value.
        for key in order where sketch.get(key) != values[key] {
            throw Mismatch(subject: subject, capacity: capacity, step: 100_000)
        }
    }
}
