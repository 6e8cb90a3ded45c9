#if Observability
import Synchronization

/// A key that counts how often it is turned into a string, to prove a filtered or redacted log
/// never describes it.
struct CountingKey: Hashable, Sendable, CustomStringConvertible {
    /// Shared by the keys of one test.
    final class Tally: Sendable {
        private let count = Atomic<Int>(0)
        var value: Int { count.load(ordering: .relaxed) }
        func increment() { count.add(1, ordering: .relaxed) }
    }

    let id: Int
    let tally: Tally

    var description: String {
        tally.increment()
        return "key-\(id)"
    }

    static func == (lhs: CountingKey, rhs: CountingKey) -> Bool { lhs.id == rhs.id }
    func hash(into hasher: inout Hasher) { hasher.combine(id) }
}

/// The error the tests' failing loaders throw.
struct LoadFailure: Error, Equatable, CustomStringConvertible {
    var description: String { "backend unavailable" }
}
#endif
