import Synchronization
import _CacheKitShims

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
///   every stripe's reader count to drain to zero.
///
/// Everything is an atomic that ThreadSanitizer sees, so it checks the data this lock guards.
/// Waiting spins with `sched_yield`: critical sections here are O(1) map operations, or a bulk
/// operation the caller asked for. Each stripe also carries a lossy buffer of the slots its readers
/// used (for the eviction policy, replayed by the next writer or by a reader whose stripe holds
/// ``replayThreshold`` reads) and hit/miss counters.
///
/// A read costs two atomic read-modify-writes, the fewest the protocol allows: the stripe's
/// word holds the reader count and the hit and miss counters side by side (see ``Stripe``), so
/// the unlock that decrements the count also counts the read; buffering the read's slot takes
/// plain loads and stores; and stripes are raw memory, not objects, so handing one to a reader
/// retains nothing. (Before, a read made six: its lock and unlock, a retain and a release of a
/// stripe object, a hit counter and a buffer index.)
@usableFromInline
final class _StripedLock: @unchecked Sendable {
    /// One stripe: where its word and its read buffer live. A plain pair of pointers, so
    /// passing it around costs no reference counting.
    ///
    /// The word (`state`): bits 0..<20 count the readers holding the stripe, bits 20..<42 the
    /// hits and 42..<64 the misses counted since they were last moved to the lock's totals. A
    /// counter is moved (``_StripedLock/harvest(_:)``) by the first reader that sees its top bit
    /// set as it takes the lock, long before it could carry into the next field.
    @frozen
    @usableFromInline
    struct Stripe {
        @usableFromInline let state: UnsafeMutablePointer<Atomic<UInt64>>
        /// Reads recorded since the last drain (may run past the capacity: those were dropped).
        @usableFromInline let readCount: UnsafeMutablePointer<Atomic<Int>>
        /// Each element is an atomic `_SlotRead.packed`, 0 when empty.
        @usableFromInline let reads: UnsafeMutablePointer<Atomic<UInt64>>

        @inlinable
        init(
            state: UnsafeMutablePointer<Atomic<UInt64>>,
            readCount: UnsafeMutablePointer<Atomic<Int>>,
            reads: UnsafeMutablePointer<Atomic<UInt64>>
        ) {
            self.state = state
            self.readCount = readCount
            self.reads = reads
        }

        /// Notes that a reader used `slot` (whose generation was `generation`); returns `false`
        /// once the buffer holds ``_StripedLock/replayThreshold`` reads, asking the caller to
        /// replay them if no one else is. A read that finds the buffer full is dropped, as
        /// Caffeine drops reads under load.
        ///
        /// The room between the threshold and the capacity is for the reads a stripe takes
        /// while another thread replays: stripes emptied by one replay fill again at about the
        /// same pace, so a buffer that asked for a replay only when full would drop every read
        /// until that replay ended.
        ///
        /// The index is claimed with a plain load and store, not a fetch-add: two threads of
        /// one stripe reading at the same instant may claim the same element, and one of the
        /// two reads is lost. The buffer is lossy anyway (full buffers drop reads, and a drain
        /// running under the policy lock may take an element before or after its read lands),
        /// and a read's element is written with one atomic store, so it is never torn.
        ///
        /// - Complexity: O(1), no read-modify-write.
        @inlinable
        @inline(__always)
        func record(_ slot: Int32, generation: UInt32) -> Bool {
            let index = readCount.pointee.load(ordering: .relaxed)
            guard index < _StripedLock.readBufferCapacity else { return false }
            reads[index].store(_SlotRead(slot: slot, generation: generation).packed, ordering: .releasing)
            readCount.pointee.store(index + 1, ordering: .relaxed)
            return index + 1 < _StripedLock.replayThreshold
        }
    }

    /// What a read counts in the statistics, added to its stripe's word by the unlock.
    @frozen
    @usableFromInline
    enum Tally {
        case none, hit, miss

        /// The amount the unlock adds to the stripe's word: one reader fewer, one more of this.
        @inlinable
        var unlockDelta: UInt64 {
            switch self {
            case .none: return 0 &- 1
            case .hit: return _StripedLock.hitUnit &- 1
            case .miss: return _StripedLock.missUnit &- 1
            }
        }
    }

    @usableFromInline static let readBufferCapacity = 64
    /// How many buffered reads make a stripe ask for a replay: Caffeine's read buffer size.
    @usableFromInline static let replayThreshold = 16
    @usableFromInline static let readerMask: UInt64 = (1 << 20) - 1
    @usableFromInline static let hitUnit: UInt64 = 1 << 20
    @usableFromInline static let missUnit: UInt64 = 1 << 42
    @usableFromInline static let counterMask: UInt64 = (1 << 22) - 1
    /// The top bit of each counter: a reader that sees either set as it takes the lock moves the
    /// counters out (``harvest(_:)``).
    @usableFromInline static let harvestBits: UInt64 = 1 << 41 | 1 << 63
    /// Bytes per stripe in `words`: a stripe's word and read count share a cache line that no
    /// other stripe touches (128, as adjacent lines are fetched in pairs).
    @usableFromInline static let stripeBytes = 128

    /// The most reads the stripes can hold between two replays.
    @inlinable
    var bufferedReadCapacity: Int { stripeCount * Self.readBufferCapacity }
    @usableFromInline let stripeCount: Int
    @usableFromInline let stripeMask: Int
    /// Stripe `i`'s word at `stripeBytes * i`, its read count right after; `nil` until
    /// ``allocate()`` for a lock made with `allocated: false`. Written once, before any thread
    /// uses the lock: its owner publishes it with a release of its own (`Cache._readsShared`).
    @exclusivity(unchecked) @usableFromInline var _words: UnsafeMutableRawPointer?
    @exclusivity(unchecked) @usableFromInline var _buffers: UnsafeMutablePointer<Atomic<UInt64>>?
    @inlinable var words: UnsafeMutableRawPointer { _words.unsafelyUnwrapped }
    @inlinable var buffers: UnsafeMutablePointer<Atomic<UInt64>> { _buffers.unsafelyUnwrapped }
    /// Whether the stripes exist (see ``allocate()``).
    var isAllocated: Bool { _words != nil }
    @usableFromInline let writer = Atomic<Bool>(false)
    /// Hits and misses moved out of the stripes' words.
    let harvestedHits = Atomic<Int>(0)
    let harvestedMisses = Atomic<Int>(0)

    /// A stripe count for this machine: twice its processors (so that a thread pool's threads,
    /// each taking the next stripe, seldom share one), as a power of two from 4 to 64.
    static let stripesForThisMachine: Int = {
        let processors = Swift.max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        var count = 4
        while count < 2 * processors && count < 64 { count *= 2 }
        return count
    }()

    /// A lock of `count` stripes (a power of two); with `allocated: false` its stripes (640
    /// bytes each) are made only by ``allocate()``, which must happen before any thread uses it.
    init(stripes count: Int = 16, allocated: Bool = true) {
        precondition(count > 0 && count & (count - 1) == 0, "stripe count must be a power of two")
        stripeCount = count
        stripeMask = count - 1
        if allocated { allocate() }
    }

    /// Makes the stripes, if they are not made yet. Before any thread takes the lock.
    func allocate() {
        guard _words == nil else { return }
        let count = stripeCount
        let words = UnsafeMutableRawPointer.allocate(byteCount: count * Self.stripeBytes, alignment: Self.stripeBytes)
        for i in 0..<count {
            let base = words + i * Self.stripeBytes
            base.bindMemory(to: Atomic<UInt64>.self, capacity: 1).initialize(to: Atomic(0))
            (base + 8).bindMemory(to: Atomic<Int>.self, capacity: 1).initialize(to: Atomic(0))
        }
        let buffers = UnsafeMutablePointer<Atomic<UInt64>>.allocate(capacity: count * Self.readBufferCapacity)
        for index in 0..<count * Self.readBufferCapacity { (buffers + index).initialize(to: Atomic(0)) }
        _words = words
        _buffers = buffers
    }

    deinit {
        guard let words = _words, let buffers = _buffers else { return }
        for i in 0..<stripeCount {
            let stripe = self.stripe(i)
            stripe.state.deinitialize(count: 1)
            stripe.readCount.deinitialize(count: 1)
        }
        words.deallocate()
        buffers.deinitialize(count: stripeCount * Self.readBufferCapacity)
        buffers.deallocate()
    }

    /// Stripe `index`.
    @inlinable
    @inline(__always)
    func stripe(_ index: Int) -> Stripe {
        let base = words + index &* Self.stripeBytes
        return Stripe(
            state: base.assumingMemoryBound(to: Atomic<UInt64>.self),
            readCount: (base + 8).assumingMemoryBound(to: Atomic<Int>.self),
            reads: buffers + index &* Self.readBufferCapacity
        )
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

    /// The stripe of the calling thread: threads in the order they first read, round the
    /// stripes, so that as many threads as stripes that first read one after another (a pool
    /// started together) each have one of their own. (A hash of their handles would put two of
    /// four threads in one of four stripes nine times in ten: both would write one cache line,
    /// and lose reads they record at the same instant.)
    @inlinable
    var currentStripe: Stripe {
        stripe(Int(_cachekit_thread_number()) & stripeMask)
    }

    /// Waits until no writer holds or wants the lock, then holds it shared; returns the stripe to
    /// pass to ``unlockShared(_:counting:)``.
    ///
    /// - Complexity: O(1) and one atomic read-modify-write when no writer holds the lock.
    @inlinable
    func lockShared() -> Stripe {
        let stripe = currentStripe
        while true {
            let old = stripe.state.pointee.wrappingAdd(1, ordering: .sequentiallyConsistent).oldValue
            if !writer.load(ordering: .sequentiallyConsistent) {
                if old & Self.harvestBits != 0 { harvest(stripe) }
                return stripe
            }
            stripe.state.pointee.wrappingSubtract(1, ordering: .releasing)
            while writer.load(ordering: .relaxed) { sched_yield() }
        }
    }

    /// Holds the lock shared, as ``lockShared()`` does, unless writers keep it for longer than a
    /// few turns of the scheduler: then returns `nil`, and the caller takes the writers' path
    /// instead (queueing on their lock, which sleeps, rather than spinning behind a stream of
    /// writers that never leaves a gap).
    ///
    /// - Complexity: O(1) and one atomic read-modify-write when no writer holds the lock.
    @inlinable
    @inline(__always)
    func tryLockShared() -> Stripe? {
        let stripe = currentStripe
        let old = stripe.state.pointee.wrappingAdd(1, ordering: .sequentiallyConsistent).oldValue
        if !writer.load(ordering: .sequentiallyConsistent) {
            if old & Self.harvestBits != 0 { harvest(stripe) }
            return stripe
        }
        stripe.state.pointee.wrappingSubtract(1, ordering: .releasing)
        return lockSharedAfterWaiting(stripe)
    }

    /// The rest of ``tryLockShared()``, out of line: spins a bounded number of times while a
    /// writer holds the lock (a write is O(1)), retrying whenever it leaves; gives up after
    /// ``sharedSpinLimit`` spins in all. It never yields: a reader that gives up queues on the
    /// writers' lock, which sleeps.
    @usableFromInline
    @inline(never)
    func lockSharedAfterWaiting(_ stripe: Stripe) -> Stripe? {
        var spins = 0
        while spins < Self.sharedSpinLimit {
            while writer.load(ordering: .relaxed) {
                spins += 1
                if spins >= Self.sharedSpinLimit { return nil }
                _cachekit_spin_hint()
            }
            let old = stripe.state.pointee.wrappingAdd(1, ordering: .sequentiallyConsistent).oldValue
            if !writer.load(ordering: .sequentiallyConsistent) {
                if old & Self.harvestBits != 0 { harvest(stripe) }
                return stripe
            }
            stripe.state.pointee.wrappingSubtract(1, ordering: .releasing)
            spins += 1
        }
        return nil
    }

    /// How long ``tryLockShared()`` spins on a writer before it gives up: about as long as a few
    /// O(1) writes, as `_Lock` spins before it sleeps.
    @usableFromInline static var sharedSpinLimit: Int { 256 }

    /// Leaves the shared lock, counting the read as `tally` says, in one atomic add.
    ///
    /// - Complexity: O(1) and one atomic read-modify-write.
    @inlinable
    func unlockShared(_ stripe: Stripe, counting tally: Tally = .none) {
        stripe.state.pointee.wrappingAdd(tally.unlockDelta, ordering: .releasing)
    }

    /// Moves a stripe's hit and miss counts to the lock's totals, so that neither fills its
    /// field: called by a reader that finds a counter's top bit set as it takes the lock, and
    /// that still holds it, so that no thread holding the lock exclusively (which reads or
    /// resets the counts) ever sees counts on their way from the word to the totals. Between
    /// the first unlock that sets a top bit and this, a field grows by at most one count per
    /// reader holding the stripe, far from carrying into the next field.
    @usableFromInline
    func harvest(_ stripe: Stripe) {
        let taken = takeCounts(stripe)
        harvestedHits.wrappingAdd(taken.hits, ordering: .relaxed)
        harvestedMisses.wrappingAdd(taken.misses, ordering: .relaxed)
    }

    /// Sets a stripe's hit and miss counters to zero, keeping its reader count; returns what
    /// they held.
    func takeCounts(_ stripe: Stripe) -> (hits: Int, misses: Int) {
        var word = stripe.state.pointee.load(ordering: .relaxed)
        while true {
            let (exchanged, current) = stripe.state.pointee.compareExchange(
                expected: word,
                desired: word & Self.readerMask,
                ordering: .relaxed
            )
            if exchanged { return Self.counts(in: word) }
            word = current
        }
    }

    /// The hit and miss counts a stripe's word holds.
    static func counts(in word: UInt64) -> (hits: Int, misses: Int) {
        (Int(word >> 20 & counterMask), Int(word >> 42 & counterMask))
    }

    /// Waits for other writers and for every reader to leave, then holds the lock exclusively.
    @inlinable
    func lockExclusive() {
        while !writer.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent).exchanged {
            sched_yield()
        }
        waitForReaders()
    }

    /// Holds the lock exclusively if no writer holds or wants it; otherwise returns `false` at
    /// once. (It still waits for the readers in flight, which are O(1).)
    @inlinable
    func tryLockExclusive() -> Bool {
        guard writer.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent).exchanged
        else { return false }
        waitForReaders()
        return true
    }

    /// Holds the lock exclusively, for a caller that already keeps other writers out (with a
    /// lock of its own, which sleeps): raises the flag and waits for the readers in flight.
    /// Release with ``unlockExclusive()`` before the caller's own lock.
    ///
    /// - Complexity: O(stripes) loads, and waits only for readers inside their O(1) sections.
    @inlinable
    func lockExclusiveAlone() {
        writer.store(true, ordering: .sequentiallyConsistent)
        waitForReaders()
    }

    /// Waits for each stripe's readers to leave: spinning first (a read is O(1)), then yielding
    /// the processor, in case a reader was descheduled inside its read.
    @inlinable
    func waitForReaders() {
        for index in 0..<stripeCount {
            let state = stripe(index).state
            var spins = 0
            while state.pointee.load(ordering: .sequentiallyConsistent) & Self.readerMask != 0 {
                if spins < Self.sharedSpinLimit {
                    spins += 1
                    _cachekit_spin_hint()
                } else {
                    sched_yield()
                }
            }
        }
    }

    @inlinable
    func unlockExclusive() {
        writer.store(false, ordering: .releasing)
    }

    /// Calls `body` with every buffered read, oldest first per stripe, and empties the buffers.
    /// Only one drainer at a time (the cache's policy lock); readers may record meanwhile.
    @inlinable
    func drainReads(_ body: (_SlotRead) -> Void) {
        for index in 0..<stripeCount {
            let stripe = stripe(index)
            let count = Swift.min(stripe.readCount.pointee.load(ordering: .acquiring), Self.readBufferCapacity)
            guard count > 0 else { continue }
            for i in 0..<count {
                let packed = stripe.reads[i].exchange(0, ordering: .acquiring)
                if packed != 0 { body(_SlotRead(packed: packed)) }
            }
            stripe.readCount.pointee.store(0, ordering: .releasing)
        }
    }

    /// Whether any stripe holds buffered reads (by its count). Called holding the lock
    /// exclusively, just after ``waitForReaders()`` loaded the same cache lines.
    @inlinable
    var hasBufferedReads: Bool {
        for index in 0..<stripeCount where stripe(index).readCount.pointee.load(ordering: .relaxed) != 0 {
            return true
        }
        return false
    }

    /// Tells the policy of `state` about the reads the stripes buffered, skipping slots whose
    /// entry changed since (by generation); returns what warming the slots read (the caller
    /// keeps it, so that the loads are not optimized away). The slots are warmed first (see
    /// `_CacheCore.warm(slots:)`): the replay relinks entries at random places. Only one
    /// replay at a time (the caller's policy lock or exclusive lock); readers may go on.
    @inlinable
    func replayReads<Key, Value>(into state: UnsafeMutablePointer<_CacheState<Key, Value>>) -> Int {
        withUnsafeTemporaryAllocation(of: _SlotRead.self, capacity: bufferedReadCapacity) { reads in
            var count = 0
            drainReads { read in
                (reads.baseAddress.unsafelyUnwrapped + count).initialize(to: read)
                count += 1
            }
            guard count > 0 else { return 0 }
            var warmed = 0
            if count > 1 {
                withUnsafeTemporaryAllocation(of: Int.self, capacity: count) { slots in
                    for i in 0..<count { slots[i] = Int(reads[i].slot) }
                    warmed = state.pointee.core.warm(slots: slots)
                }
            }
            // The bound: a read recorded as a stripe was being emptied can stay behind in its
            // buffer and be replayed later, after `removeAll` replaced the slot storage. Such a
            // read's generation is odd (its entry was live), and a free slot's is even (see
            // `bumpGeneration`), so it can match only a live entry of the new storage: a wasted
            // recency bump, never a policy operation on a free slot.
            let slots = Int32(truncatingIfNeeded: state.pointee.core.slotsUsed)
            for read in reads[0..<count]
            where read.slot < slots
                && state.pointee.core.generations.unsafelyUnwrapped[Int(read.slot)] == read.generation
            {
                state.pointee.core.recordAccess(read.slot)
            }
            return warmed
        }
    }

    /// Forgets every buffered read, in every position (a read recorded while a stripe was being
    /// emptied can sit past its count). Called with the lock held exclusively: no read is being
    /// recorded.
    @usableFromInline
    func discardReads() {
        for index in 0..<stripeCount {
            let stripe = stripe(index)
            for i in 0..<Self.readBufferCapacity { stripe.reads[i].store(0, ordering: .relaxed) }
            stripe.readCount.pointee.store(0, ordering: .releasing)
        }
    }

    /// Hits and misses counted by readers since the last reset: exact when read holding the
    /// lock exclusively (no read in flight, no harvest half done).
    var requestCounts: (hits: Int, misses: Int) {
        var hits = harvestedHits.load(ordering: .relaxed)
        var misses = harvestedMisses.load(ordering: .relaxed)
        guard isAllocated else { return (hits, misses) }
        for index in 0..<stripeCount {
            let counts = Self.counts(in: stripe(index).state.pointee.load(ordering: .relaxed))
            hits += counts.hits
            misses += counts.misses
        }
        return (hits, misses)
    }

    /// `engine`'s statistics with the requests readers counted here added: exact when read
    /// holding the lock exclusively.
    func statistics(adding engine: _StatisticsCounters) -> CacheStatistics {
        var snapshot = engine.snapshot
        let (hits, misses) = requestCounts
        snapshot.hitCount += hits
        snapshot.missCount += misses
        return snapshot
    }

    /// Sets `engine`'s counts and the readers' to zero. Holding the lock exclusively.
    func resetStatistics(_ engine: inout _StatisticsCounters) {
        engine.reset()
        resetRequestCounts()
    }

    /// Sets the counts to zero, keeping each stripe's reader count.
    func resetRequestCounts() {
        if isAllocated {
            for index in 0..<stripeCount { _ = takeCounts(stripe(index)) }
        }
        harvestedHits.store(0, ordering: .relaxed)
        harvestedMisses.store(0, ordering: .relaxed)
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
