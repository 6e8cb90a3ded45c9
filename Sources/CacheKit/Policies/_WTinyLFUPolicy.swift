/// W-TinyLFU (Einziger, Friedman & Manes, 2017), with the adaptive window Caffeine sizes by hill
/// climbing.
///
/// Three LRU queues: a small admission *window* (initially 1% of the capacity) and a segmented-LRU
/// *main* space split into *probation* and *protected* (80% of main). A new entry joins the window;
/// the window's overflow moves to probation's most recent end.
/// When the cache is full, the window's least recent entry (the *candidate*) moves to probation
/// and competes with probation's least recent entry (the *victim*): a `_FrequencySketch` of recent
/// uses decides, and the less popular one is evicted (ties evict the candidate; a candidate
/// seen 6 times or more that loses still wins 1 time in 128, so an attacker cannot pin the
/// victim). A hit in probation promotes the entry to protected; protected's overflow is demoted to
/// probation's most recent end.
///
/// Hill climbing, by Caffeine's rules: every `10 × capacity` hits and new entries, the hit ratio
/// of that sample is compared with the previous sample's. If it improved, the window keeps moving
/// in the same direction, else it turns; steps start at 6.25% of the capacity and decay by 2% per
/// sample until the hit ratio jumps by 5 points, which restarts them. Recency-heavy workloads grow
/// the window (toward LRU); frequency-heavy ones shrink it. The sketch ages on its own, shorter
/// period (see `_FrequencySketch`), so each sample spans four agings.
///
/// The first sample has no predecessor: it is compared with a hit ratio of 0, so it always reads
/// as an improvement. Its step grows the window. A window at its 1% start has almost nothing to
/// give, so a first step that shrinks it leaves the climber at the floor, reading the cache's
/// warm-up as success; a first step that grows it makes the second sample a real comparison
/// (<doc:ChoosingAPolicy> has the measurements behind this rule).
///
/// When probation holds nothing but the candidate (rare but for cost-limited caches), the
/// candidate contests protected's least recent entry; Caffeine evicts it without a contest.
///
/// Eviction order (for enumeration and the eviction veto) is probation, protected, then the window,
/// each least recent first; the next eviction itself may take the window's candidate instead.
@usableFromInline
struct _WTinyLFUPolicy: _EvictionPolicy {
    @usableFromInline static var window: UInt8 { 0 }
    @usableFromInline static var probation: UInt8 { 1 }
    @usableFromInline static var protected: UInt8 { 2 }

    /// Queues 0, 1 and 2 (window, probation, protected), least recent at the head.
    @usableFromInline var queues = (_ListHead(), _ListHead(), _ListHead())
    /// The entries in queues 0, 1 and 2.
    @usableFromInline var counts = (0, 0, 0)
    /// Per slot: the queue holding it.
    @usableFromInline var queueOf: UnsafeMutablePointer<UInt8>
    @usableFromInline var sketch: _FrequencySketch
    /// The entries the sketch is sized for: `capacity`, or fewer while a large cache fills
    /// (see `sketchEntries(capacity:resident:tableWords:)`).
    @usableFromInline var sketchEntries = 0
    /// Whether the sketch waits for the first eviction: true while the cache has had no count
    /// limit and has evicted nothing. Until then no admission contest is held, so the table
    /// stays at its smallest (one 64-byte block) and uses are not counted; an unbounded cache
    /// that never evicts costs no sketch memory. At the first eviction (a cost limit, memory
    /// pressure) the sketch is sized for the resident entries and counts each of them once, as a
    /// grown sketch does, and that eviction takes the victim without a contest.
    @usableFromInline var sketchDeferred = true
    @usableFromInline var capacity = 0
    /// The engine's slot capacity (`reserve`): what an unbounded cache is sized by.
    @usableFromInline var slotCapacity = 0
    /// The largest the window and the protected segment may be.
    @usableFromInline var windowMax = 1
    @usableFromInline var protectedMax = 0
    // Hill climber.
    @usableFromInline var hitsInSample = 0
    @usableFromInline var missesInSample = 0
    @usableFromInline var previousHitRate = 0.0
    @usableFromInline var stepSize = 0.0
    /// Requests per hill-climbing sample.
    @usableFromInline var climbSample = 5
    /// Deterministic generator for the 1-in-128 admission of warm candidates.
    @usableFromInline var random: UInt64 = 0x2545_F491_4F6C_DD1D

    @inlinable
    init(slotCapacity: Int) {
        queueOf = _SlotMemory.allocate(UInt8.self, capacity: slotCapacity)
        sketch = _FrequencySketch(capacity: 0)
        self.slotCapacity = slotCapacity
    }

    @inlinable
    func deallocate() {
        _SlotMemory.deallocate(queueOf)
        sketch.deallocate()
    }

    @inlinable
    mutating func reserve(slotCapacity: Int, used: Int) {
        queueOf = _SlotMemory.resized(queueOf, used: used, to: slotCapacity).unsafelyUnwrapped
        self.slotCapacity = slotCapacity
        if capacity == 0 { resize(for: slotCapacity) }
    }

    @inlinable
    mutating func setCapacity(_ capacity: Int) {
        // The same limit again keeps what the hill climber learned.
        let old = self.capacity
        guard capacity != old || capacity == 0 else { return }
        self.capacity = capacity
        if capacity > 0 {
            resize(for: capacity)
        } else if old > 0 {
            // No limit any more: sized as an unbounded cache is, by its slots (and what it holds),
            // not left with the shares and the sketch's aging of the limit it had. Otherwise only
            // the slots' next doubling resized it, which a cache kept small by a cost limit may
            // never reach (limits of 1000 → 1 → 0 would leave a window of 1 and aging every 2 uses).
            resize(for: Swift.max(slotCapacity, residentCount))
        }
    }

    /// Resets the window and protected shares for `capacity` entries and sizes the sketch.
    @inlinable
    mutating func resize(for capacity: Int) {
        let c = Swift.max(capacity, 1)
        windowMax = Swift.max(1, c - Int(Double(c) * 0.99))
        protectedMax = Int(Double(c - windowMax) * 0.8)
        stepSize = 0.0625 * Double(c)
        climbSample = Self.climbSample(for: c)
        hitsInSample = 0
        missesInSample = 0
        previousHitRate = 0
        let bounded = self.capacity > 0
        let entries = Self.sketchEntries(
            capacity: bounded ? c : 0,
            resident: bounded ? residentCount : c,
            tableWords: sketch.wordCount
        )
        sketchEntries = entries
        if bounded { sketchDeferred = false }
        if !sketchDeferred { sketch.ensureCapacity(entries) }
    }

    /// Sketches for up to this many entries (512 KiB) are allocated whole when the capacity is
    /// set. A larger capacity's sketch starts at this size and doubles as the cache fills, so
    /// that `countLimit: .max` or a generous limit costs memory in proportion to what the cache
    /// holds (8 bytes per entry), not to its limit, as Caffeine sizes its sketch lazily.
    @inlinable
    static var eagerSketchEntries: Int { 1 << 16 }

    /// The entries to size the sketch for: all of `capacity` when it is small, else enough for
    /// the `resident` entries and for the table already allocated (it never shrinks); with no
    /// capacity (`0`), `resident` (the slot capacity).
    @inlinable
    static func sketchEntries(capacity: Int, resident: Int, tableWords: Int) -> Int {
        guard capacity > 0 else { return resident }
        return Swift.min(capacity, Swift.max(eagerSketchEntries, resident, tableWords))
    }

    /// The entries held in the three queues.
    @inlinable
    var residentCount: Int { counts.0 + counts.1 + counts.2 }

    /// The cache holds more entries than its sketch was sized for, and its capacity allows more:
    /// doubles the sketch and counts every resident entry once in it, since a grown table starts
    /// empty. The cache is still filling (it evicts only at its capacity, where the sketch is
    /// full size), so what the reset forgets has decided no eviction yet; only a cost limit can
    /// evict earlier, against counts this young.
    ///
    /// - Complexity: O(n), once per doubling.
    @inlinable
    @inline(never)
    mutating func growSketch(links: _SlotLinks) {
        let entries = Self.sketchEntries(
            capacity: capacity,
            resident: Swift.max(residentCount, 2 * sketchEntries),
            tableWords: sketch.wordCount
        )
        sketchEntries = entries
        guard sketch.ensureCapacity(entries) else { return }
        countResidents(links: links)
    }

    /// The first eviction of a cache that deferred its sketch: sizes the sketch for the resident
    /// entries and counts each of them once.
    ///
    /// - Complexity: O(n), once.
    @inlinable
    @inline(never)
    mutating func startSketch(links: _SlotLinks) {
        sketchDeferred = false
        sketch.ensureCapacity(sketchEntries)
        countResidents(links: links)
    }

    /// Counts every resident entry once in the sketch.
    @inlinable
    mutating func countResidents(links: _SlotLinks) {
        for q in Self.window...Self.protected {
            var slot = head(q)
            while slot != -1 {
                sketch.increment(links.hash(slot))
                slot = links.next(slot)
            }
        }
    }

    /// Requests per hill-climbing sample for `capacity` entries.
    @inlinable
    static func climbSample(for capacity: Int) -> Int {
        let (product, overflow) = Swift.max(capacity, 1).multipliedReportingOverflow(by: 10)
        return overflow ? .max : product
    }

    /// The queue holding `slot`: 0 window, 1 probation, 2 protected (for tests).
    @inlinable
    func queue(of slot: Int32) -> UInt8 { queueOf[Int(slot)] }

    /// The current window share (for tests and the simulator).
    @inlinable
    var windowMaximum: Int { windowMax }

    /// The sketch's estimate for `hash` (for tests).
    @inlinable
    func frequency(_ hash: UInt32) -> Int { sketch.frequency(hash) }

    // MARK: Queues by number

    /// The least recent entry of queue `q`, or -1.
    @inlinable
    @inline(__always)
    func head(_ q: UInt8) -> Int32 {
        switch q {
        case Self.window: queues.0.head
        case Self.probation: queues.1.head
        default: queues.2.head
        }
    }

    /// Appends `slot` at the most recent end of queue `q`.
    @inlinable
    @inline(__always)
    mutating func append(_ slot: Int32, to q: UInt8, links: _SlotLinks) {
        queueOf[Int(slot)] = q
        switch q {
        case Self.window:
            links.pushBack(slot, &queues.0)
            counts.0 += 1
        case Self.probation:
            links.pushBack(slot, &queues.1)
            counts.1 += 1
        default:
            links.pushBack(slot, &queues.2)
            counts.2 += 1
        }
    }

    /// Takes `slot` out of queue `q`, which holds it.
    @inlinable
    @inline(__always)
    mutating func remove(_ slot: Int32, from q: UInt8, links: _SlotLinks) {
        switch q {
        case Self.window:
            links.unlink(slot, &queues.0)
            counts.0 -= 1
        case Self.probation:
            links.unlink(slot, &queues.1)
            counts.1 -= 1
        default:
            links.unlink(slot, &queues.2)
            counts.2 -= 1
        }
    }

    @inlinable
    mutating func move(_ slot: Int32, from: UInt8, to: UInt8, links: _SlotLinks) {
        remove(slot, from: from, links: links)
        append(slot, to: to, links: links)
    }

    // MARK: Events

    /// A new key's use is counted in `didInsert`, after the cache made room: counting it first
    /// (as Caffeine does) measured lower on the loop trace.
    @inlinable
    func willInsert(hash: UInt32) {}

    @inlinable
    mutating func didInsert(_ slot: Int32, links: _SlotLinks) {
        if !sketchDeferred { sketch.increment(links.hash(slot)) }
        append(slot, to: Self.window, links: links)
        if capacity > sketchEntries && residentCount > sketchEntries {
            growSketch(links: links)
        }
        // Window overflow moves to probation at once (as in Caffeine), not only when full.
        while counts.0 > windowMax {
            move(queues.0.head, from: Self.window, to: Self.probation, links: links)
        }
        missesInSample += 1
        climbIfSampled(links: links)
    }

    @inlinable
    mutating func didAccess(_ slot: Int32, links: _SlotLinks) {
        if !sketchDeferred { sketch.increment(links.hash(slot)) }
        let q = queueOf[Int(slot)]
        if q == Self.probation {
            move(slot, from: Self.probation, to: Self.protected, links: links)
            demoteProtectedOverflow(links: links)
        } else if q == Self.window {
            links.moveToBack(slot, &queues.0)
        } else {
            links.moveToBack(slot, &queues.2)
        }
        hitsInSample += 1
        climbIfSampled(links: links)
    }

    @inlinable
    mutating func didUpdate(_ slot: Int32, links: _SlotLinks) { didAccess(slot, links: links) }

    @inlinable
    mutating func didRemove(_ slot: Int32, evicted: Bool, links: _SlotLinks) {
        remove(slot, from: queueOf[Int(slot)], links: links)
    }

    @inlinable
    mutating func removeAll() {
        queues = (_ListHead(), _ListHead(), _ListHead())
        counts = (0, 0, 0)
        sketch.clear()
        resize(for: capacity > 0 ? capacity : 0)
    }

    @inlinable
    mutating func demoteProtectedOverflow(links: _SlotLinks) {
        while counts.2 > protectedMax {
            move(queues.2.head, from: Self.protected, to: Self.probation, links: links)
        }
    }

    /// Moves window overflow to probation, then returns the loser of candidate against victim.
    @inlinable
    mutating func nextVictim(links: _SlotLinks) -> Int32 {
        // The sketch starts now: it has no history to judge a contest by, so this eviction
        // takes the victim, as LRU would, and the candidate stays.
        let starting = sketchDeferred
        if starting { startSketch(links: links) }
        // Room in the window for the entry about to arrive: its least recent entries move to
        // probation; the last one moved is the candidate. Several move at once only after the
        // climber shrank the window; Caffeine moves that excess when it shrinks the window,
        // uncontested, so there too the entry that contests is the one the arrival pushes out.
        // (Contesting the oldest moved instead measures worse on the reference traces.)
        var candidate: Int32 = -1
        var candidateInWindow = false
        while counts.0 >= windowMax && counts.0 > 0 {
            candidate = queues.0.head
            move(candidate, from: Self.window, to: Self.probation, links: links)
        }
        if candidate == -1 {
            candidate = queues.0.head
            candidateInWindow = true
        }
        var victim = queues.1.head
        if victim == candidate && !candidateInWindow { victim = links.next(victim) }
        if victim == -1 { victim = queues.2.head }
        if victim == -1 { return candidate }
        if candidate == -1 || starting { return victim }
        let candidateFrequency = sketch.frequency(links.hash(candidate))
        let victimFrequency = sketch.frequency(links.hash(victim))
        if candidateFrequency > victimFrequency { return victim }
        if candidateFrequency >= 6 {
            // xorshift64: deterministic, so replays repeat exactly.
            var x = random
            x ^= x << 13
            x ^= x >> 7
            x ^= x << 17
            random = x
            if x & 127 == 0 { return victim }
        }
        return candidate
    }

    @inlinable
    func firstVictim(links: _SlotLinks) -> Int32 {
        if queues.1.head != -1 { return queues.1.head }
        return queues.2.head != -1 ? queues.2.head : queues.0.head
    }

    @inlinable
    func victim(after slot: Int32, links: _SlotLinks) -> Int32 {
        let next = links.next(slot)
        if next != -1 { return next }
        var q = queue(of: slot)
        while q != Self.window {
            q = q == Self.probation ? Self.protected : Self.window
            if head(q) != -1 { return head(q) }
        }
        return -1
    }

    // MARK: Hill climbing

    @inlinable
    mutating func climbIfSampled(links: _SlotLinks) {
        if hitsInSample + missesInSample >= climbSample {
            climb(links: links)
        }
    }

    /// Compares this sample's hit ratio with the last one's and moves the window share.
    @usableFromInline
    mutating func climb(links: _SlotLinks) {
        let c = Double(capacity > 0 ? capacity : residentCount)
        let requests = hitsInSample + missesInSample
        let hitRate = Double(hitsInSample) / Double(requests)
        let change = hitRate - previousHitRate
        let amount = change >= 0 ? stepSize : -stepSize
        stepSize = abs(change) >= 0.05 ? 0.0625 * c * (amount >= 0 ? 1 : -1) : 0.98 * amount
        previousHitRate = hitRate
        hitsInSample = 0
        missesInSample = 0
        let adjustment = Int(amount)
        if adjustment > 0 {
            let quota = Swift.min(adjustment, protectedMax)
            protectedMax -= quota
            windowMax += quota
            demoteProtectedOverflow(links: links)
        } else if adjustment < 0 {
            let quota = Swift.min(-adjustment, windowMax - 1)
            windowMax -= quota
            protectedMax += quota
            // The window's excess moves to probation with the next new entry (measured better on
            // loops than moving it at once).
        }
    }
}

extension _PolicyBox where Policy == _WTinyLFUPolicy {
    /// The sketch's estimate for `hash` (for tests).
    @inlinable
    func frequency(_ hash: UInt32) -> Int { state.pointee.frequency(hash) }
}
