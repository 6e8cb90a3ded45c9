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
/// Each body runs in a child task of the caller's task, on a thread of its own (the child task
/// prefers a `ThreadPerJobExecutor`), not on a thread of the concurrency pool: so it inherits
/// the test's context, and an `#expect` that fails inside it is reported under the test's name
/// (on plain threads Swift Testing reports it under «unknown»). The caller suspends rather
/// than blocks while the threads run: a blocked thread of the pool (two threads on two cores)
/// could starve the tasks the bodies wait for, such as an autosave woken by a clock the bodies
/// advance, and tests run in parallel.
func runOnThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) async {
    let start = StartLine(runners: count)
    let executor = ThreadPerJobExecutor()
    await withTaskGroup(of: Void.self) { group in
        for index in 0..<count {
            group.addTask(executorPreference: executor) {
                start.arriveAndWait()
                body(index)
            }
        }
    }
}

/// A task executor that runs every job on a new thread of its own, for tasks that block or
/// spin: the concurrency pool has as many threads as cores, and such tasks would starve it.
final class ThreadPerJobExecutor: TaskExecutor {
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        let thread = Thread { job.runSynchronously(on: executor) }
        thread.stackSize = 4 << 20  // as a main thread's: `#expect` and the caches nest deeply in debug builds
        thread.start()
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
