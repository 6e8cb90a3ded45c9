import Synchronization

/// Counts live `Tracked` instances, to prove a cache releases what it lets go.
final class LifetimeTracker: Sendable {
    private let live = Atomic<Int>(0)

    var liveCount: Int { live.load(ordering: .relaxed) }

    func instance(_ id: Int) -> Tracked { Tracked(id, tracker: self) }

    fileprivate func born() { live.add(1, ordering: .relaxed) }
    fileprivate func died() { live.subtract(1, ordering: .relaxed) }
}

final class Tracked: Sendable {
    let id: Int
    private let tracker: LifetimeTracker

    init(_ id: Int, tracker: LifetimeTracker) {
        self.id = id
        self.tracker = tracker
        tracker.born()
    }

    deinit { tracker.died() }
}
