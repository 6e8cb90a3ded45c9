import Dispatch
import Synchronization
import Testing
import _CacheKitShims

@testable import CacheKit

/// `SharedCache`'s reader-writer lock: reader counts, hit and miss counts packed beside them in
/// one word per stripe, and the lossy read buffers.
@Suite("Striped lock")
struct StripedLockTests {
    @Test("an unlock counts the read it says, and leaves no reader behind")
    func unlockCountsTheRead() {
        let lock = _StripedLock()
        for tally in [_StripedLock.Tally.hit, .hit, .miss, .none, .hit] {
            let stripe = lock.lockShared()
            lock.unlockShared(stripe, counting: tally)
        }
        #expect(lock.requestCounts == (hits: 3, misses: 1))
        #expect(lock.tryLockExclusive(), "no reader may be left counted")
        lock.unlockExclusive()
    }

    @Test("hit and miss counts stay exact past the width of their fields")
    func countsSurviveTheirFields() {
        let lock = _StripedLock(stripes: 1)
        // 2^22 hits would carry into the miss field, and 2^22 misses out of the word, had
        // nothing moved them to the totals on the way.
        let hits = (1 << 22) + 5
        let misses = (1 << 22) + 3
        for i in 0..<max(hits, misses) {
            if i < hits {
                lock.unlockShared(lock.lockShared(), counting: .hit)
            }
            if i < misses {
                lock.unlockShared(lock.lockShared(), counting: .miss)
            }
        }
        #expect(lock.requestCounts == (hits: hits, misses: misses))
        #expect(lock.tryLockExclusive())
        lock.unlockExclusive()
    }

    @Test("counts move to the totals only while a reader holds the lock")
    func harvestHappensUnderTheLock() {
        let lock = _StripedLock(stripes: 1)
        let word = { lock.stripe(0).state.pointee.load(ordering: .relaxed) }
        for _ in 0..<(1 << 21) { lock.unlockShared(lock.lockShared(), counting: .hit) }
        #expect(word() >> 20 & _StripedLock.counterMask == 1 << 21, "the unlock that sets the top bit moves nothing")
        let held = lock.lockShared()
        #expect(word() == 1, "the next reader moved the counts out while holding the lock")
        #expect(lock.requestCounts == (hits: 1 << 21, misses: 0))
        lock.unlockShared(held)
    }

    @Test("a reset clears the counts and keeps the readers in")
    func resetKeepsReaders() {
        let lock = _StripedLock(stripes: 1)
        lock.unlockShared(lock.lockShared(), counting: .hit)
        let held = lock.lockShared()
        lock.resetRequestCounts()
        #expect(lock.requestCounts == (hits: 0, misses: 0))
        #expect(
            lock.stripe(0).state.pointee.load(ordering: .relaxed) & _StripedLock.readerMask == 1,
            "the reader still holds the lock"
        )
        lock.unlockShared(held, counting: .miss)
        #expect(lock.requestCounts == (hits: 0, misses: 1))
        #expect(lock.tryLockExclusive())
        lock.unlockExclusive()
    }

    @Test("a stripe's buffer keeps its reads in order, asks for a replay from its threshold on, drops reads when full")
    func readBufferFillsAndDrains() {
        let lock = _StripedLock(stripes: 1)
        let stripe = lock.lockShared()
        var answers: [Bool] = []
        for slot in 0..<(_StripedLock.readBufferCapacity + 10) {
            answers.append(stripe.record(Int32(slot), generation: UInt32(slot * 2 + 1)))
        }
        lock.unlockShared(stripe)
        #expect(_StripedLock.replayThreshold < _StripedLock.readBufferCapacity)
        #expect(
            answers.firstIndex(of: false) == _StripedLock.replayThreshold - 1,
            "the read that reaches the threshold asks for a replay"
        )
        #expect(!answers[_StripedLock.replayThreshold...].contains(true), "every later read asks again")
        var drained: [_SlotRead] = []
        lock.drainReads { drained.append($0) }
        #expect(drained.map(\.slot) == (0..<Int32(_StripedLock.readBufferCapacity)).map { $0 })
        #expect(drained.map(\.generation) == drained.map { UInt32($0.slot) * 2 + 1 })
        var again = 0
        lock.drainReads { _ in again += 1 }
        #expect(again == 0, "a drain empties the buffer")
        let again2 = lock.lockShared()
        #expect(again2.record(7, generation: 1), "an emptied buffer records again")
        lock.unlockShared(again2)
    }

    /// That threads starting together land in different stripes follows from consecutive
    /// numbers, which tests running in parallel (numbering threads of their own) cannot show.
    @Test("each thread keeps one number for its life, no two threads share one, and it picks the stripe")
    func threadNumbersPickStripes() async {
        let lock = _StripedLock(stripes: 8)
        let numbers = Mutex<[Int: UInt32]>([:])
        await runOnThreads(6) { index in
            let first = _cachekit_thread_number()
            for _ in 0..<100 { #expect(_cachekit_thread_number() == first, "a thread's number never changes") }
            #expect(lock.currentStripe.state == lock.stripe(Int(first) & 7).state)
            numbers.withLock { $0[index] = first }
        }
        let all = numbers.withLock { Array($0.values) }
        #expect(all.count == 6 && Set(all).count == 6, "\(all)")
    }

    @Test("readers on several threads are all counted, and a writer waits for them")
    func concurrentReadersAreCounted() async {
        let lock = _StripedLock(stripes: 2)
        let perThread = 20_000
        let threads = 4
        let inside = Atomic<Int>(0)
        let violations = Atomic<Int>(0)
        await runOnThreads(threads) { t in
            for i in 0..<perThread {
                if t == 0 && i % 100 == 0 {
                    lock.lockExclusive()
                    if inside.load(ordering: .relaxed) != 0 { violations.wrappingAdd(1, ordering: .relaxed) }
                    lock.unlockExclusive()
                }
                let stripe = lock.lockShared()
                inside.wrappingAdd(1, ordering: .relaxed)
                inside.wrappingSubtract(1, ordering: .relaxed)
                lock.unlockShared(stripe, counting: i % 3 == 0 ? .miss : .hit)
            }
        }
        let misses = threads * ((perThread + 2) / 3)
        #expect(lock.requestCounts == (hits: threads * perThread - misses, misses: misses))
        #expect(violations.load(ordering: .relaxed) == 0)
    }
}
