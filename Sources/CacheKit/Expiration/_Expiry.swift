/// Per-slot expiry times, and the orders that find expired entries without a scan: what the
/// engine keeps once any entry can expire.
///
/// Times are nanoseconds since the cache's clock was first read (`_Timekeeper`); `Int64.max`
/// means never. Each slot has a write deadline (when its value's time to live runs out) and, with
/// a time to idle, an idle deadline (its last read or write plus the time to idle); it expires at
/// the earlier of the two. Three structures order the slots:
/// - `writeQueue`, a FIFO of 8-byte (slot, stamp) records for the entries that live the cache's
///   time to live. One duration for all means write order is deadline order: a write appends a
///   record, the sweep takes from the head. It is lazy: a write or removal leaves the slot's
///   older record where it is and only changes the slot's `writeStamp`, so a record whose stamp
///   no longer matches is stale, and whoever meets it drops it. That makes a write one
///   sequential append and a removal one store, where an intrusive list would relink two
///   neighbours at random addresses (measured: that relinking was most of what a time to live
///   cost a write). The deadline is not in the record (the slot has it), which halves the queue.
///   One exception to the laziness: a removal whose record is the queue's head pops it at once
///   (the head is in the CPU's cache; the oldest entry is often the one leaving).
///   The queue is compacted when full (stale records dropped; it grows only when over half of it
///   is live), so it holds at most about four records per slot and costs O(1) amortized.
/// - `accessOrder`, a list in access order of every entry when a time to idle is set: a read or
///   write moves the slot to the tail; the head is the next to idle out. O(1). (A read must not
///   append, so this one stays an intrusive list.)
/// - `heap`, a min-heap of the entries whose time to live was chosen per entry: their deadlines
///   differ, so they need an order by deadline. O(log n) per such write or removal.
/// So the sweep costs O(1) per entry that expired (O(log n) for per-entry ones), reads and
/// writes cost O(1) with cache-wide durations, and nothing ever scans the cache.
///
/// Non-generic, pointers and integers only, so `_CacheCore` keeps a fixed layout.
@usableFromInline
struct _Expiry {
    @usableFromInline static let never = Int64.max

    /// What every slot has: 16 bytes, so that a write or removal touches one cache line. The
    /// idle and refresh times live in arrays of their own that exist only when those durations
    /// are set, so a cache with a time to live alone pays for none of them.
    @usableFromInline
    struct Record {
        @usableFromInline var writeDeadline: Int64 = _Expiry.never
        /// The stamp of the slot's live record in `writeQueue`, or 0 while it has none.
        @usableFromInline var writeStamp: UInt32 = 0
        /// The slot's index in `heap`, or -1 while it is not there.
        @usableFromInline var heapPosition: Int32 = -1

        @inlinable
        init() {}
    }

    /// A slot's place in `accessOrder`, with a time to idle.
    @usableFromInline
    struct IdleRecord {
        /// Last read or write plus the time to idle.
        @usableFromInline var deadline: Int64 = _Expiry.never
        /// `prev == absent` while not in the order.
        @usableFromInline var prev: Int32 = _Expiry.absent
        @usableFromInline var next: Int32 = -1

        @inlinable
        init() {}
    }

    /// Ends of a list threaded through the records.
    @usableFromInline
    struct Ends {
        @usableFromInline var head: Int32 = -1
        @usableFromInline var tail: Int32 = -1
        @usableFromInline var count = 0

        @inlinable
        init() {}
    }

    /// A record in `writeQueue`: live while `slot`'s `writeStamp` is still `stamp`.
    @usableFromInline
    struct Queued {
        @usableFromInline var slot: Int32
        @usableFromInline var stamp: UInt32

        @inlinable
        init(slot: Int32, stamp: UInt32) {
            self.slot = slot
            self.stamp = stamp
        }
    }

    @usableFromInline static let absent: Int32 = -2

    @usableFromInline var records: UnsafeMutablePointer<Record>
    /// Per slot, with a time to idle; else `nil`.
    @usableFromInline var idle: UnsafeMutablePointer<IdleRecord>?
    /// Per slot, when each value was written, with a refresh time; else `nil`.
    @usableFromInline var writtenAt: UnsafeMutablePointer<Int64>?
    /// A ring of `queueCapacity` (a power of two, or 0) records, `queueCount` of them from
    /// `queueHead`; the live ones are in nondecreasing deadline order.
    @usableFromInline var writeQueue: UnsafeMutablePointer<Queued>? = nil
    @usableFromInline var queueCapacity = 0
    @usableFromInline var queueHead = 0
    @usableFromInline var queueCount = 0
    /// The last stamp handed out; 0 is never one.
    @usableFromInline var lastStamp: UInt32 = 0
    @usableFromInline var accessOrder = Ends()
    @usableFromInline var heap: UnsafeMutablePointer<_HeapItem>
    @usableFromInline var heapCount: Int
    @usableFromInline var capacity: Int
    /// The latest time a write or read was recorded at. Callers read the clock before taking the
    /// lock, so two threads can arrive in the opposite order to their readings; scheduling at
    /// `max(now, latest)` keeps each list in deadline order all the same (a late arrival's entry
    /// lives at most that race window longer).
    @usableFromInline var latest: Int64 = 0
    /// The cache-wide times.
    @usableFromInline let times: _ExpiryTimes
    @inlinable var timeToLive: Int64 { times.timeToLive }
    @inlinable var timeToIdle: Int64 { times.timeToIdle }
    @inlinable var refreshAfter: Int64 { times.refreshAfter }

    @usableFromInline
    struct _HeapItem {
        @usableFromInline var key: Int64
        @usableFromInline var slot: Int32

        @inlinable
        init(key: Int64, slot: Int32) {
            self.key = key
            self.slot = slot
        }
    }

    @inlinable
    init(_ times: _ExpiryTimes, capacity: Int) {
        self.times = times
        self.capacity = capacity
        self.heapCount = 0
        // Initialized in full: entries already present when expiry starts never expire.
        records = Self.filled(Record(), capacity: capacity)
        idle = times.timeToIdle == Self.never ? nil : Self.filled(IdleRecord(), capacity: capacity)
        writtenAt = times.refreshAfter == Self.never ? nil : Self.filled(0, capacity: capacity)
        heap = _SlotMemory.allocate(_HeapItem.self, capacity: capacity)
    }

    @inlinable
    static func filled<T>(_ value: T, capacity: Int) -> UnsafeMutablePointer<T> {
        let storage = _SlotMemory.allocate(T.self, capacity: capacity)
        storage.initialize(repeating: value, count: capacity)
        return storage
    }

    /// `old` with room for `newCapacity`, keeping `0..<used` and filling the rest with `value`.
    @inlinable
    static func grown<T>(
        _ old: UnsafeMutablePointer<T>,
        used: Int,
        to newCapacity: Int,
        filling value: T
    )
        -> UnsafeMutablePointer<T>
    {
        let grown = _SlotMemory.allocate(T.self, capacity: newCapacity)
        grown.moveInitialize(from: old, count: used)
        (grown + used).initialize(repeating: value, count: newCapacity - used)
        _SlotMemory.deallocate(old)
        return grown
    }

    @inlinable
    func deallocate() {
        _SlotMemory.deallocate(records)
        if let idle { _SlotMemory.deallocate(idle) }
        if let writtenAt { _SlotMemory.deallocate(writtenAt) }
        _SlotMemory.deallocate(heap)
        if let writeQueue { _SlotMemory.deallocate(writeQueue) }
    }

    /// Grows per-slot storage to `newCapacity`, keeping slots `0..<used`.
    @inlinable
    mutating func reserve(capacity newCapacity: Int, used: Int) {
        guard newCapacity > capacity else { return }
        records = Self.grown(records, used: used, to: newCapacity, filling: Record())
        idle = idle.map { Self.grown($0, used: used, to: newCapacity, filling: IdleRecord()) }
        writtenAt = writtenAt.map { Self.grown($0, used: used, to: newCapacity, filling: 0) }
        let newHeap = _SlotMemory.allocate(_HeapItem.self, capacity: newCapacity)
        newHeap.moveInitialize(from: heap, count: heapCount)
        _SlotMemory.deallocate(heap)
        heap = newHeap
        capacity = newCapacity
    }

    /// `now + duration`, or `never` when either is `never` or the sum overflows.
    @inlinable
    static func adding(_ duration: Int64, to now: Int64) -> Int64 {
        guard duration != never else { return never }
        let (sum, overflow) = now.addingReportingOverflow(duration)
        return overflow ? never : sum
    }

    // MARK: Scheduling

    /// Sets the times of a value written at `now` to `slot`, which lives for `timeToLive`
    /// (`nil`: the cache's). `now < 0` means the time is unknown (see `_Timekeeper`): the entry
    /// then gets no deadline of its own.
    ///
    /// The common case, the cache's time to live and nothing else (no time to idle, refresh or
    /// per-entry time in use), is inlined into the write: an append to the queue and two stores
    /// to the slot's record.
    @inlinable
    @inline(__always)
    mutating func didWrite(_ slot: Int32, now: Int64, timeToLive perEntry: Int64?) {
        if perEntry == nil && now >= latest && heapCount == 0 && idle == nil && writtenAt == nil
            && queueCount < queueCapacity
        {
            // `writeDeadline(from: now, timeToLive: nil)`, whose saturation this case never needs.
            let (deadline, overflow) = now.addingReportingOverflow(timeToLive)
            if !overflow && deadline != Self.never && timeToLive != Self.never {
                latest = now
                let stamp = nextStamp()
                writeQueue.unsafelyUnwrapped[(queueHead + queueCount) & (queueCapacity - 1)] = Queued(
                    slot: slot,
                    stamp: stamp
                )
                queueCount += 1
                records[Int(slot)].writeStamp = stamp
                records[Int(slot)].writeDeadline = deadline
                return
            }
        }
        didWriteInGeneral(slot, now: now, timeToLive: perEntry)
    }

    /// The deadline a write at `start` (at or after `latest`) gets for its time to live: its
    /// own (`perEntry`), or the cache's.
    @inlinable
    @inline(__always)
    func writeDeadline(from start: Int64, timeToLive perEntry: Int64?) -> Int64 {
        Self.adding(perEntry ?? timeToLive, to: start)
    }

    /// The idle deadline a write or read at `start` gives its entry (`never` without a time to
    /// idle).
    @inlinable
    @inline(__always)
    func idleDeadline(from start: Int64) -> Int64 { Self.adding(timeToIdle, to: start) }

    /// The deadline `didWrite` would give an entry written at `writtenAt` (not -1), asked
    /// without recording anything: the earlier of its write and idle deadlines, counted from
    /// the later of `writtenAt` and `latest`.
    @inlinable
    func firstDeadline(writtenAt: Int64, timeToLive perEntry: Int64?) -> Int64 {
        let start = Swift.max(writtenAt, latest)
        return Swift.min(writeDeadline(from: start, timeToLive: perEntry), idleDeadline(from: start))
    }

    /// `didWrite` for every case.
    @inlinable
    @inline(never)
    mutating func didWriteInGeneral(_ slot: Int32, now: Int64, timeToLive perEntry: Int64?) {
        let s = Int(slot)
        guard now >= 0 else {
            writtenAt?[s] = 0
            records[s].writeDeadline = Self.never
            forget(slot)
            return
        }
        let now = Swift.max(now, latest)
        latest = now
        writtenAt?[s] = now
        if let perEntry {
            records[s].writeDeadline = writeDeadline(from: now, timeToLive: perEntry)
            records[s].writeStamp = 0
            schedule(slot, at: records[s].writeDeadline)
        } else {
            let deadline = writeDeadline(from: now, timeToLive: nil)
            if heapCount > 0 && records[s].heapPosition >= 0 { removeFromHeap(slot) }
            // Only stores to the slot's record, no loads: the record is usually not in the CPU's
            // cache, and a store does not wait for it. (Skipping the append when the deadline is
            // unchanged would need a load; a frozen clock's extra records are compacted away.)
            records[s].writeStamp = deadline == Self.never ? 0 : enqueue(slot)
            records[s].writeDeadline = deadline
        }
        if let idle {
            idle[s].deadline = idleDeadline(from: now)
            moveToTail(slot, idle)
        }
    }

    /// Records a read of `slot` at `now`: with a time to idle, its idle deadline moves later. O(1).
    @inlinable
    @inline(__always)
    mutating func didRead(_ slot: Int32, now: Int64) {
        guard let idle, now >= 0 else { return }
        let now = Swift.max(now, latest)
        latest = now
        idle[Int(slot)].deadline = idleDeadline(from: now)
        moveToTail(slot, idle)
    }

    /// Forgets `slot`'s deadlines (the entry is leaving).
    @inlinable
    @inline(__always)
    mutating func didRemove(_ slot: Int32) {
        forget(slot)
    }

    @inlinable
    @inline(__always)
    mutating func forget(_ slot: Int32) {
        records[Int(slot)].writeStamp = 0  // its queued record, if any, is now stale
        // The oldest entry often leaves first (evicted, or expired): drop its record now, while
        // the queue's head is in the CPU's cache, rather than have the next operation find it
        // stale and sweep.
        if queueCount > 0 && writeQueue.unsafelyUnwrapped[queueHead].slot == slot {
            queueHead = (queueHead + 1) & (queueCapacity - 1)
            queueCount -= 1
        }
        if let idle { unlink(slot, idle) }
        if heapCount > 0 && records[Int(slot)].heapPosition >= 0 { removeFromHeap(slot) }
    }

    /// Whether a value written at `writtenAt` is due for a refresh at `now`.
    @inlinable
    func isDueForRefresh(_ slot: Int32, now: Int64) -> Bool {
        refreshAfter != Self.never && now >= 0
            && Self.adding(refreshAfter, to: writtenAt.unsafelyUnwrapped[Int(slot)]) <= now
    }

    /// The next slot that has expired by `now`, or -1, dropping the stale records it passes.
    /// The caller removes the slot returned (calling `didRemove`) before asking again.
    ///
    /// - Complexity: O(1) amortized (each record is dropped once).
    @inlinable
    mutating func nextExpired(now: Int64) -> Int32 {
        if queueCount > 0, let queue = writeQueue {
            while queueCount > 0 {
                let item = queue[queueHead]
                let record = records[Int(item.slot)]
                let isLive = record.writeStamp == item.stamp
                guard !isLive || record.writeDeadline <= now else { break }
                queueHead = (queueHead + 1) & (queueCapacity - 1)
                queueCount -= 1
                if isLive { return item.slot }
            }
        }
        if let idle, accessOrder.head >= 0 && idle[Int(accessOrder.head)].deadline <= now {
            return accessOrder.head
        }
        if heapCount > 0 && heap[0].key <= now { return heap[0].slot }
        return -1
    }

    /// Whether `nextExpired(now:)` may find something: a check of the three heads, which also
    /// answers `true` for a stale record at the head of the queue (to have it dropped). O(1).
    @inlinable
    @inline(__always)
    func mayHaveExpired(now: Int64) -> Bool {
        if queueCount > 0 {
            let item = writeQueue.unsafelyUnwrapped[queueHead]
            let record = records[Int(item.slot)]
            if record.writeStamp != item.stamp || record.writeDeadline <= now { return true }
        }
        return (accessOrder.head >= 0 && idle.unsafelyUnwrapped[Int(accessOrder.head)].deadline <= now)
            || (heapCount > 0 && heap[0].key <= now)
    }

    /// When `slot` expires (`never` if it does not): the earlier of its write and idle deadlines.
    @inlinable
    func deadline(of slot: Int32) -> Int64 {
        let written = records[Int(slot)].writeDeadline
        guard let idle else { return written }
        return Swift.min(written, idle[Int(slot)].deadline)
    }

    /// Whether `slot` has expired by `now` (never when the time is unknown). O(1), read-only: for
    /// readers that may not sweep.
    @inlinable
    func isExpired(_ slot: Int32, now: Int64) -> Bool {
        guard now >= 0 else { return false }
        if records[Int(slot)].writeDeadline <= now { return true }
        if let idle { return idle[Int(slot)].deadline <= now }
        return false
    }
}

/// A cache's expiry durations in nanoseconds; `_Expiry.never` where not set.
@usableFromInline
struct _ExpiryTimes: Sendable {
    @usableFromInline var timeToLive: Int64 = _Expiry.never
    @usableFromInline var timeToIdle: Int64 = _Expiry.never
    @usableFromInline var refreshAfter: Int64 = _Expiry.never

    @inlinable
    init() {}

    init(_ expiration: Expiration) {
        timeToLive = expiration.afterWrite?._lifetimeNanoseconds ?? _Expiry.never
        timeToIdle = expiration.afterAccess?._lifetimeNanoseconds ?? _Expiry.never
        refreshAfter = expiration.refreshAfterWrite?._lifetimeNanoseconds ?? _Expiry.never
    }
}
