import CacheKitBenchSupport
import Dispatch
import Synchronization

/// `CacheKitLab line-transfer`: how long one cache line takes to move from one core to
/// another, measured by two threads passing a counter back and forth.
///
/// Every write that one thread makes and another then reads costs about this much: it bounds
/// how well a structure whose threads share what they write can scale (see the Performance
/// article's notes on threads).
enum LineTransfer {
    /// The one-way time in nanoseconds: thread 0 stores an odd number, thread 1 waits for it
    /// and stores the next even one, `rounds` times; each round moves the line twice.
    static func measure(rounds: Int) -> Double {
        let counter = Counter()
        let start = StartLine.run(threads: 2) { thread in
            let parity = thread == 0 ? 0 : 1
            for round in 0..<rounds {
                let expected = 2 * round + parity
                while counter.value.load(ordering: .acquiring) != expected {}
                counter.value.store(expected + 1, ordering: .releasing)
            }
        }
        let elapsed = DispatchTime.now().uptimeNanoseconds - start
        return Double(elapsed) / Double(2 * rounds)
    }

    /// The counter alone on its cache lines (128 bytes: adjacent lines are fetched in pairs).
    private final class Counter: Sendable {
        let padding = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let value = Atomic<Int>(0)
        let trailing = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    }

    /// Prints the median of `repetitions` measurements and their range.
    static func run(repetitions: Int, rounds: Int, json: Bool) {
        let samples = (0..<repetitions).map { _ in measure(rounds: rounds) }.sorted()
        let median = samples[samples.count / 2]
        if json {
            print("{\"lineTransferNanoseconds\": \(median)}")
        } else {
            print(
                "a cache line moves between the two threads' cores in "
                    + "\(formatted(median)) ns (median of \(repetitions); "
                    + "\(formatted(samples[0]))–\(formatted(samples[samples.count - 1])))"
            )
        }
    }

    private static func formatted(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }
}
