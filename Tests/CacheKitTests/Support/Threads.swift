import Dispatch
import Foundation
import Synchronization

/// Runs `body(0)`, …, `body(count - 1)` at once, each on a thread of its own, and returns when
/// all have finished.
///
/// The stress tests use this rather than `DispatchQueue.concurrentPerform`, which runs no more
/// iterations at a time than there are cores (two on CI's machines) and may run several on one
/// thread, one after another: with four iterations, two could finish before the other two began.
/// Here every thread waits at a start line until all have arrived, so all `count` bodies are
/// under way together and the scheduler interleaves them even on two cores.
///
/// An `#expect` that fails inside `body` fails the run, at its own line, but Swift Testing
/// reports it under «unknown» rather than the test's name: these threads do not carry the
/// test's context. The line tells which test it was.
///
/// The caller suspends rather than blocks while the threads run: a blocked thread of the
/// concurrency pool (two threads on two cores) could starve the tasks the bodies wait for, such
/// as an autosave woken by a clock the bodies advance, and tests run in parallel.
func runOnThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) async {
    await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in
        let start = StartLine(runners: count)
        let group = DispatchGroup()
        for index in 0..<count {
            group.enter()
            let thread = Thread {
                start.arriveAndWait()
                body(index)
                group.leave()
            }
            thread.stackSize = 4 << 20  // as a main thread's: `#expect` and the caches nest deeply in debug builds
            thread.start()
        }
        group.notify(queue: .global()) { finished.resume() }
    }
}

/// Runs `body` on a new thread of its own, for work that spins or blocks: on Linux, Dispatch's
/// global queues share their few threads with Swift's tasks, which such work would starve.
func startThread(_ body: @escaping @Sendable () -> Void) {
    let thread = Thread(block: body)
    thread.stackSize = 4 << 20
    thread.start()
}

/// A start line for threads: none passes until every runner has arrived.
final class StartLine: Sendable {
    private let runners: Int
    private let arrived = Atomic<Int>(0)

    init(runners: Int) { self.runners = runners }

    func arriveAndWait() {
        arrived.add(1, ordering: .acquiringAndReleasing)
        while arrived.load(ordering: .acquiring) < runners { sched_yield() }
    }
}

/// Hands a value to other threads where the test itself guarantees safe use.
final class Handoff<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
