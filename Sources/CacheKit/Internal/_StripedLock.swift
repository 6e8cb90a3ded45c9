import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A reader-writer lock whose readers do not share a cache line: each reader counts itself in
/// one of several stripes chosen by its thread, so two threads reading at once touch different
/// memory and scale, where a `pthread_rwlock_t` makes every reader write the same counter.
///
/// The protocol (a "big reader" lock, Dekker-style with sequentially consistent atomics):
/// - a reader increments its stripe, then checks the writer flag; if a writer holds or wants the
///   lock, it backs out and waits, so writers are not starved;
/// - a writer sets the flag with a compare-and-exchange (one writer at a time), then waits for
///   every stripe to drain to zero.
///
/// Everything is an atomic that ThreadSanitizer sees, so it checks the data this lock guards.
/// Waiting spins with `sched_yield`: critical sections here are O(1) map operations, or a bulk
/// operation the caller asked for. Each stripe also carries a lossy buffer of the slots its readers
/// used (for the eviction policy, replayed by the next writer) and hit/miss counters.
@usableFromInline
final class _StripedLock: @unchecked Sendable {
    /// One stripe: its own cache lines (128 bytes apart from the next stripe's counters).
    @usableFromInline
    final class Stripe: @unchecked Sendable {
        @usableFromInline let readers = Atomic<Int>(0)
        @usableFromInline let hits = Atomic<Int>(0)
        @usableFromInline let misses = Atomic<Int>(0)
        /// Reads recorded since the last drain (may run past the capacity: those were dropped).
        /// Each reader claims an index with one fetch-add and publishes its read there with an
        /// atomic store; the drainer takes each element with an atomic exchange. Drains may run
        /// while readers record (under the cache's policy lock, not the exclusive lock), so a
        /// read published after its element was taken may be replayed late or overwritten: the
        /// buffer is lossy, as Caffeine's is, and never torn.
        @usableFromInline let readCount = Atomic<Int>(0)
        /// Each element is an atomic `_SlotRead.packed`, 0 when empty.
        @usableFromInline let reads: UnsafeMutablePointer<Atomic<UInt64>>
        // Keeps the next stripe's counters off this one's cache lines.
        private let padding: (Int, Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0, 0)

        init() {
            reads = .allocate(capacity: _StripedLock.readBufferCapacity)
            for index in 0..<_StripedLock.readBufferCapacity { (reads + index).initialize(to: Atomic(0)) }
        }

        deinit {
            reads.deinitialize(count: _StripedLock.readBufferCapacity)
            reads.deallocate()
        }

        /// Notes that a reader used `slot` (whose generation was `generation`); returns `false`
        /// when the buffer is full (the read is dropped, as Caffeine drops reads under load).
        @inlinable
        func record(_ slot: Int32, generation: UInt32) -> Bool {
            let index = readCount.wrappingAdd(1, ordering: .relaxed).oldValue
            guard index < _StripedLock.readBufferCapacity else { return false }
            reads[index].store(_SlotRead(slot: slot, generation: generation).packed, ordering: .releasing)
            return index + 1 < _StripedLock.readBufferCapacity
        }
    }

    @usableFromInline static let readBufferCapacity = 64

    /// The most reads the stripes can hold between two replays.
    @inlinable
    var bufferedReadCapacity: Int { stripes.count * Self.readBufferCapacity }
    @usableFromInline let stripes: [Stripe]
    @usableFromInline let stripeMask: Int
    @usableFromInline let writer = Atomic<Bool>(false)

    init(stripes count: Int = 16) {
        precondition(count > 0 && count & (count - 1) == 0, "stripe count must be a power of two")
        stripes = (0..<count).map { _ in Stripe() }
        stripeMask = count - 1
    }

    /// The calling thread's handle as a number (never 0).
    @inlinable
    static var currentThread: UInt {
        #if canImport(Darwin)
        UInt(bitPattern: pthread_self())
        #else
        UInt(pthread_self())
        #endif
    }

    /// The stripe of the calling thread.
    @inlinable
    var currentStripe: Stripe {
        // Thread handles are aligned addresses: mix the bits before masking.
        let mixed = (Self.currentThread &* 0x9E37_79B9_7F4A_7C15) >> 32
        return stripes[Int(mixed) & stripeMask]
    }

    /// Waits until no writer holds or wants the lock, then holds it shared; returns the stripe to
    /// pass to ``unlockShared(_:)``.
    @inlinable
    func lockShared() -> Stripe {
        let stripe = currentStripe
        while true {
            stripe.readers.wrappingAdd(1, ordering: .sequentiallyConsistent)
            if !writer.load(ordering: .sequentiallyConsistent) { return stripe }
            stripe.readers.wrappingSubtract(1, ordering: .releasing)
            while writer.load(ordering: .relaxed) { sched_yield() }
        }
    }

    @inlinable
    func unlockShared(_ stripe: Stripe) {
        stripe.readers.wrappingSubtract(1, ordering: .releasing)
    }

    /// Waits for other writers and for every reader to leave, then holds the lock exclusively.
    @inlinable
    func lockExclusive() {
        while !writer.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent).exchanged {
            sched_yield()
        }
        for stripe in stripes {
            while stripe.readers.load(ordering: .sequentiallyConsistent) != 0 { sched_yield() }
        }
    }

    /// Holds the lock exclusively if no writer holds or wants it; otherwise returns `false` at
    /// once. (It still waits for the readers in flight, which are O(1).)
    @inlinable
    func tryLockExclusive() -> Bool {
        guard writer.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent).exchanged
        else { return false }
        for stripe in stripes {
            while stripe.readers.load(ordering: .sequentiallyConsistent) != 0 { sched_yield() }
        }
        return true
    }

    @inlinable
    func unlockExclusive() {
        writer.store(false, ordering: .releasing)
    }

    /// Calls `body` with every buffered read, oldest first per stripe, and empties the buffers.
    /// Only one drainer at a time (the cache's policy lock); readers may record meanwhile.
    @inlinable
    func drainReads(_ body: (_SlotRead) -> Void) {
        for stripe in stripes {
            let count = Swift.min(stripe.readCount.load(ordering: .acquiring), Self.readBufferCapacity)
            guard count > 0 else { continue }
            for i in 0..<count {
                let packed = stripe.reads[i].exchange(0, ordering: .acquiring)
                if packed != 0 { body(_SlotRead(packed: packed)) }
            }
            stripe.readCount.store(0, ordering: .releasing)
        }
    }

    /// Hits and misses counted by readers since the last reset.
    /// Forgets every buffered read, in every position (a read recorded while a stripe was being
    /// emptied can sit past its count). Called with the lock held exclusively: no read is being
    /// recorded.
    func discardReads() {
        for stripe in stripes {
            for i in 0..<Self.readBufferCapacity { stripe.reads[i].store(0, ordering: .relaxed) }
            stripe.readCount.store(0, ordering: .releasing)
        }
    }

    @inlinable
    var requestCounts: (hits: Int, misses: Int) {
        stripes.reduce((0, 0)) {
            ($0.0 + $1.hits.load(ordering: .relaxed), $0.1 + $1.misses.load(ordering: .relaxed))
        }
    }

    func resetRequestCounts() {
        for stripe in stripes {
            stripe.hits.store(0, ordering: .relaxed)
            stripe.misses.store(0, ordering: .relaxed)
        }
    }
}

/// A read a reader could not tell the eviction policy about (it held the lock shared).
@usableFromInline
struct _SlotRead {
    @usableFromInline var slot: Int32
    @usableFromInline var generation: UInt32

    @inlinable
    init(slot: Int32, generation: UInt32) {
        self.slot = slot
        self.generation = generation
    }

    /// The read in one word, never 0 (the slot is stored plus one).
    @inlinable
    var packed: UInt64 { (UInt64(UInt32(bitPattern: slot)) &+ 1) << 32 | UInt64(generation) }

    @inlinable
    init(packed: UInt64) {
        slot = Int32(bitPattern: UInt32(truncatingIfNeeded: (packed >> 32) &- 1))
        generation = UInt32(truncatingIfNeeded: packed)
    }
}
