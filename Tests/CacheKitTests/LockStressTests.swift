import Foundation
import Synchronization
import Testing

@testable import CacheKit

/// CacheKit's lock: mutual exclusion under more threads than cores, its sleepers woken, and the
/// value a `_Mutex` guards. Run under ThreadSanitizer in CI, which checks that what one holder
/// wrote happens before the next holder reads it.
@Suite("Lock stress")
struct LockStressTests {
    /// A lock and a counter it guards, shared by the threads of a test.
    final class Guarded: @unchecked Sendable {
        let lock = _Lock()
        var count = 0
    }

    @Test("sixteen threads incrementing a plain counter under the lock lose no increment")
    func mutualExclusion() async {
        let guarded = Guarded()
        // Enough for every thread to meet the others on the lock many times, spinning and
        // sleeping, on two cores; few enough to leave the cores to the other suites under TSan.
        let perThread = 4_000
        await runOnThreads(16) { thread in
            for i in 0..<perThread {
                if thread.isMultiple(of: 2) && i.isMultiple(of: 3) {
                    // Some takes go through tryLock, which must exclude as lock does.
                    while !guarded.lock.tryLock() {}
                } else {
                    guarded.lock.lock()
                }
                let seen = guarded.count
                guarded.count = seen + 1
                guarded.lock.unlock()
            }
        }
        #expect(guarded.count == 16 * perThread)
        #if os(Linux)
        let word = guarded.lock.word.pointee.load(ordering: .relaxed)
        #expect(word == 0, "free, with no sleeper left registered")
        #endif
    }

    @Test("tryLock fails while the lock is held and succeeds once it is released")
    func tryLock() {
        let lock = _Lock()
        let first = lock.tryLock()
        #expect(first)
        let second = lock.tryLock()
        #expect(!second, "held by this thread: a second take must fail, not wait")
        lock.unlock()
        let afterRelease = lock.tryLock()
        #expect(afterRelease)
        lock.unlock()
        let result = lock.withLock { 42 }
        #expect(result == 42)
    }

    #if os(Linux)
    @Test("threads that went to sleep on a held lock are all woken and all get it")
    func sleepersAreWoken() async {
        let guarded = Guarded()
        let held = Atomic<Bool>(false)
        let waiters = 8
        let registered = Atomic<Int>(0)
        await runOnThreads(waiters + 1) { thread in
            if thread == 0 {
                guarded.lock.lock()
                held.store(true, ordering: .releasing)
                // Wait, boundedly, until every other thread has given up spinning and sleeps.
                var polls = 0
                while polls < 10_000_000 {
                    let word = guarded.lock.word.pointee.load(ordering: .relaxed)
                    if Int(word / _Lock.sleeper) == waiters { break }
                    sched_yield()
                    polls += 1
                }
                registered.store(
                    Int(guarded.lock.word.pointee.load(ordering: .relaxed) / _Lock.sleeper),
                    ordering: .relaxed
                )
                guarded.lock.unlock()
            } else {
                while !held.load(ordering: .acquiring) { sched_yield() }
                guarded.lock.lock()
                guarded.count += 1
                guarded.lock.unlock()
            }
        }
        #expect(registered.load(ordering: .relaxed) == waiters, "every waiter registered as a sleeper")
        #expect(guarded.count == waiters)
        let word = guarded.lock.word.pointee.load(ordering: .relaxed)
        #expect(word == 0, "free, with no sleeper left registered")
    }
    #endif

    @Test("a _Mutex hands its value to one thread at a time and keeps every change")
    func mutexKeepsEveryChange() async {
        final class Appended: Sendable { let values = _Mutex<[Int]>([]) }
        let appended = Appended()
        await runOnThreads(8) { thread in
            for i in 0..<1_000 { appended.values.withLock { $0.append(thread * 10_000 + i) } }
        }
        let all = appended.values.withLock { $0 }
        #expect(all.count == 8_000)
        #expect(Set(all).count == 8_000)
        for thread in 0..<8 {
            let own = all.filter { $0 / 10_000 == thread }
            #expect(own == own.sorted(), "one thread's appends keep their order")
        }
    }

    @Test("a _Mutex's body may throw, and the lock is released")
    func mutexReleasesOnThrow() {
        struct Refused: Error {}
        let value = _Mutex(1)
        #expect(throws: Refused.self) {
            try value.withLock { (state: inout Int) throws(Refused) -> Void in
                state = 2
                throw Refused()
            }
        }
        #expect(value.withLock { $0 } == 2, "the change before the throw stays, and the lock is free")
    }
}
