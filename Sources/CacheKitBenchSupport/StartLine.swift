import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Starts a multi-threaded benchmark case with every thread already running.
///
/// Thread 0 is the calling thread; the others are threads of their own, started first, each
/// counting itself ready and then spinning on the start line. Only when all are there does the
/// clock start and the line drop, so a case's time holds no thread creation or wake-up, and the
/// scheduler has placed each spinning thread on a core of its own before the work begins.
/// (`DispatchQueue.concurrentPerform` starts the clock before its worker wakes: a 2-thread case
/// of a few milliseconds measured 8.2 ns/op in one process with it and 20.6 in another that had
/// run other cases first.)
package final class StartLine: Sendable {
    private let ready = Atomic<Int>(0)
    private let go = Atomic<Bool>(false)
    private let finished = Atomic<Int>(0)

    /// Runs `body(t)` for each `t` in `0..<threads`, released together; returns the uptime in
    /// nanoseconds at the release. Returns when every `body` has returned.
    package static func run(threads: Int, _ body: @escaping @Sendable (Int) -> Void) -> UInt64 {
        guard threads > 1 else {
            let start = DispatchTime.now().uptimeNanoseconds
            body(0)
            return start
        }
        let line = StartLine()
        for t in 1..<threads {
            let thread = Thread {
                line.ready.wrappingAdd(1, ordering: .releasing)
                while !line.go.load(ordering: .acquiring) {}
                body(t)
                line.finished.wrappingAdd(1, ordering: .releasing)
            }
            thread.start()
        }
        while line.ready.load(ordering: .acquiring) < threads - 1 { sched_yield() }
        let start = DispatchTime.now().uptimeNanoseconds
        line.go.store(true, ordering: .releasing)
        body(0)
        while line.finished.load(ordering: .acquiring) < threads - 1 { sched_yield() }
        return start
    }
}
