/// Per-slot expiry times, and the orders that find expired entries without a scan: what the
/// engine keeps once any entry can expire.
///
/// Times are nanoseconds since the cache's clock was first read (`_Timekeeper`); `Int64.max`
/// means never. Each slot has a write deadline (when its value's time to live runs out) and, with
/// a time to idle, an idle deadline (its last read or write plus the time to idle); it expires at
/// the earlier of the two. Three structures order the slots, Caffeine's way:
/// - `writeOrder`, a list in write order of the entries that live the cache's time to live. One
///   duration for all means write order is deadline order: a write moves its slot to the tail, the
///   sweep takes from the head. O(1).
/// - `accessOrder`, a list in access order of every entry when a time to idle is set: a read or
///   write moves the slot to the tail; the head is the next to idle out. O(1).
/// - `heap`, a min-heap of the entries whose time to live was chosen per entry: their deadlines
///   differ, so they need an order by deadline. O(log n) per such write or removal.
/// So the sweep costs O(1) per entry that expired (O(log n) for per-entry ones), reads and
/// writes cost O(1) with cache-wide durations, and nothing ever scans the cache.
///
/// Non-generic, pointers and integers only, so `_CacheCore` keeps a fixed layout.
@usableFromInline
struct _Expiry {
    @usableFromInline static let never = Int64.max

    /// One record per slot, so that scheduling a slot touches one cache line, not one per array.
    @usableFromInline
    struct Record {
        @usableFromInline var writtenAt: Int64 = 0
        @usableFromInline var writeDeadline: Int64 = _Expiry.never
        /// Last read or write plus the time to idle (with a time to idle).
        @usableFromInline var idleDeadline: Int64 = _Expiry.never
        /// Links in `writeOrder` and `accessOrder`; `prev == absent` while not in that order.
        @usableFromInline var writePrev: Int32 = _Expiry.absent
        @usableFromInline var writeNext: Int32 = -1
        @usableFromInline var accessPrev: Int32 = _Expiry.absent
        @usableFromInline var accessNext: Int32 = -1
        /// The slot's index in `heap`, or -1 while it is not there.
        @usableFromInline var heapPosition: Int32 = -1

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

    @usableFromInline
    enum Order {
        case write, access
    }

    @usableFromInline static let absent: Int32 = -2

    @usableFromInline var records: UnsafeMutablePointer<Record>
    @usableFromInline var writeOrder = Ends()
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
        records = _SlotMemory.allocate(Record.self, capacity: capacity)
        records.initialize(repeating: Record(), count: capacity)
        heap = _SlotMemory.allocate(_HeapItem.self, capacity: capacity)
    }

    @inlinable
    func deallocate() {
        _SlotMemory.deallocate(records)
        _SlotMemory.deallocate(heap)
    }

    /// Grows per-slot storage to `newCapacity`, keeping slots `0..<used`.
    @inlinable
    mutating func reserve(capacity newCapacity: Int, used: Int) {
        guard newCapacity > capacity else { return }
        let grown = _SlotMemory.allocate(Record.self, capacity: newCapacity)
        grown.moveInitialize(from: records, count: used)
        (grown + used).initialize(repeating: Record(), count: newCapacity - used)
        _SlotMemory.deallocate(records)
        records = grown
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
    @inlinable
    mutating func didWrite(_ slot: Int32, now: Int64, timeToLive perEntry: Int64?) {
        let s = Int(slot)
        guard now >= 0 else {
            records[s].writtenAt = 0
            records[s].writeDeadline = Self.never
            forget(slot)
            return
        }
        let now = Swift.max(now, latest)
        latest = now
        records[s].writtenAt = now
        if let perEntry {
            records[s].writeDeadline = Self.adding(perEntry, to: now)
            unlink(slot, from: .write)
            schedule(slot, at: records[s].writeDeadline)
        } else {
            records[s].writeDeadline = Self.adding(timeToLive, to: now)
            if records[s].heapPosition >= 0 { removeFromHeap(slot) }
            if timeToLive != Self.never { moveToTail(slot, of: .write) }
        }
        if timeToIdle != Self.never {
            records[s].idleDeadline = Self.adding(timeToIdle, to: now)
            moveToTail(slot, of: .access)
        }
    }

    /// Records a read of `slot` at `now`: with a time to idle, its idle deadline moves later. O(1).
    @inlinable
    @inline(__always)
    mutating func didRead(_ slot: Int32, now: Int64) {
        guard timeToIdle != Self.never, now >= 0 else { return }
        let now = Swift.max(now, latest)
        latest = now
        records[Int(slot)].idleDeadline = Self.adding(timeToIdle, to: now)
        moveToTail(slot, of: .access)
    }

    /// Forgets `slot`'s deadlines (the entry is leaving).
    @inlinable
    mutating func didRemove(_ slot: Int32) {
        forget(slot)
    }

    @inlinable
    mutating func forget(_ slot: Int32) {
        unlink(slot, from: .write)
        unlink(slot, from: .access)
        if records[Int(slot)].heapPosition >= 0 { removeFromHeap(slot) }
    }

    /// Whether a value written at `writtenAt` is due for a refresh at `now`.
    @inlinable
    func isDueForRefresh(_ slot: Int32, now: Int64) -> Bool {
        refreshAfter != Self.never && now >= 0
            && Self.adding(refreshAfter, to: records[Int(slot)].writtenAt) <= now
    }

    /// The next slot that has expired by `now`, or -1. The caller removes the slot returned
    /// (calling `didRemove`) before asking again.
    @inlinable
    func nextExpired(now: Int64) -> Int32 {
        let written = writeOrder.head
        if written >= 0 && records[Int(written)].writeDeadline <= now { return written }
        let idle = accessOrder.head
        if idle >= 0 && records[Int(idle)].idleDeadline <= now { return idle }
        if heapCount > 0 && heap[0].key <= now { return heap[0].slot }
        return -1
    }

    /// Whether `slot` has expired by `now` (never when the time is unknown). O(1), read-only: for
    /// readers that may not sweep.
    @inlinable
    func isExpired(_ slot: Int32, now: Int64) -> Bool {
        now >= 0 && Swift.min(records[Int(slot)].writeDeadline, records[Int(slot)].idleDeadline) <= now
    }

    /// Whether any slot has expired by `now`. O(1).
    @inlinable
    func hasExpired(now: Int64) -> Bool { nextExpired(now: now) >= 0 }

    // MARK: Orders

    @inlinable
    @inline(__always)
    func links(_ slot: Int32, _ order: Order) -> (prev: Int32, next: Int32) {
        let r = records[Int(slot)]
        return order == .write ? (r.writePrev, r.writeNext) : (r.accessPrev, r.accessNext)
    }

    @inlinable
    @inline(__always)
    func setPrev(_ slot: Int32, _ value: Int32, _ order: Order) {
        if order == .write { records[Int(slot)].writePrev = value } else { records[Int(slot)].accessPrev = value }
    }

    @inlinable
    @inline(__always)
    func setNext(_ slot: Int32, _ value: Int32, _ order: Order) {
        if order == .write { records[Int(slot)].writeNext = value } else { records[Int(slot)].accessNext = value }
    }

    @inlinable
    mutating func unlink(_ slot: Int32, from order: Order) {
        let (p, n) = links(slot, order)
        guard p != Self.absent else { return }
        if p >= 0 { setNext(p, n, order) }
        if n >= 0 { setPrev(n, p, order) }
        setPrev(slot, Self.absent, order)
        setNext(slot, -1, order)
        if order == .write {
            if p < 0 { writeOrder.head = n }
            if n < 0 { writeOrder.tail = p }
            writeOrder.count -= 1
        } else {
            if p < 0 { accessOrder.head = n }
            if n < 0 { accessOrder.tail = p }
            accessOrder.count -= 1
        }
    }

    @inlinable
    @inline(__always)
    mutating func moveToTail(_ slot: Int32, of order: Order) {
        let tail = order == .write ? writeOrder.tail : accessOrder.tail
        guard slot != tail else { return }
        unlink(slot, from: order)
        setPrev(slot, tail, order)
        setNext(slot, -1, order)
        if tail >= 0 { setNext(tail, slot, order) }
        if order == .write {
            if tail < 0 { writeOrder.head = slot }
            writeOrder.tail = slot
            writeOrder.count += 1
        } else {
            if tail < 0 { accessOrder.head = slot }
            accessOrder.tail = slot
            accessOrder.count += 1
        }
    }

    // MARK: Heap (per-entry times to live)

    /// Puts `slot` in the heap with `key`, or moves it there.
    @inlinable
    mutating func schedule(_ slot: Int32, at key: Int64) {
        let position = Int(records[Int(slot)].heapPosition)
        if position < 0 {
            heap[heapCount] = _HeapItem(key: key, slot: slot)
            records[Int(slot)].heapPosition = Int32(heapCount)
            heapCount += 1
            siftUp(heapCount - 1)
        } else {
            let old = heap[position].key
            heap[position].key = key
            if key < old { siftUp(position) } else { siftDown(position) }
        }
    }

    @inlinable
    mutating func removeFromHeap(_ slot: Int32) {
        let position = Int(records[Int(slot)].heapPosition)
        records[Int(slot)].heapPosition = -1
        heapCount -= 1
        guard position != heapCount else { return }
        let last = heap[heapCount]
        heap[position] = last
        records[Int(last.slot)].heapPosition = Int32(position)
        if position > 0 && last.key < heap[(position - 1) / 2].key {
            siftUp(position)
        } else {
            siftDown(position)
        }
    }

    @inlinable
    func siftUp(_ start: Int) {
        var i = start
        let item = heap[i]
        while i > 0 {
            let parent = (i - 1) / 2
            guard item.key < heap[parent].key else { break }
            heap[i] = heap[parent]
            records[Int(heap[i].slot)].heapPosition = Int32(i)
            i = parent
        }
        heap[i] = item
        records[Int(item.slot)].heapPosition = Int32(i)
    }

    @inlinable
    func siftDown(_ start: Int) {
        var i = start
        let item = heap[i]
        while true {
            var child = 2 * i + 1
            guard child < heapCount else { break }
            if child + 1 < heapCount && heap[child + 1].key < heap[child].key { child += 1 }
            guard heap[child].key < item.key else { break }
            heap[i] = heap[child]
            records[Int(heap[i].slot)].heapPosition = Int32(i)
            i = child
        }
        heap[i] = item
        records[Int(item.slot)].heapPosition = Int32(i)
    }

    /// Checks the orders, the heap and the positions against `isLive`. O(n); for invariant checks.
    @usableFromInline
    func _checkInvariants(isLive: (Int32) -> Bool) {
        for i in 0..<heapCount {
            let item = heap[i]
            let record = records[Int(item.slot)]
            precondition(isLive(item.slot), "expiry heap holds slot \(item.slot), which is not live")
            precondition(record.heapPosition == Int32(i), "expiry heap position of \(item.slot) is wrong")
            precondition(item.key == record.writeDeadline, "expiry heap key is not slot \(item.slot)'s deadline")
            precondition(record.writePrev == Self.absent, "slot \(item.slot) is in both the write order and the heap")
            if i > 0 { precondition(heap[(i - 1) / 2].key <= item.key, "expiry heap out of order at \(i)") }
        }
        checkOrder(.write, ends: writeOrder, isLive: isLive) { $0.writeDeadline }
        checkOrder(.access, ends: accessOrder, isLive: isLive) { $0.idleDeadline }
    }

    func checkOrder(_ order: Order, ends: Ends, isLive: (Int32) -> Bool, deadline: (Record) -> Int64) {
        var slot = ends.head
        var previous = Int64.min
        var seen = 0
        var last: Int32 = -1
        while slot >= 0 {
            precondition(isLive(slot), "\(order) order holds slot \(slot), which is not live")
            precondition(links(slot, order).prev == last, "\(order) order links disagree at \(slot)")
            precondition(deadline(records[Int(slot)]) >= previous, "\(order) order out of deadline order at \(slot)")
            previous = deadline(records[Int(slot)])
            seen += 1
            precondition(seen <= ends.count, "\(order) order longer than its count (a cycle)")
            last = slot
            slot = links(slot, order).next
        }
        precondition(last == ends.tail && seen == ends.count, "\(order) order's tail or count is wrong")
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
        timeToLive = expiration.afterWrite?._nanoseconds ?? _Expiry.never
        timeToIdle = expiration.afterAccess?._nanoseconds ?? _Expiry.never
        refreshAfter = expiration.refreshAfterWrite?._nanoseconds ?? _Expiry.never
    }
}
