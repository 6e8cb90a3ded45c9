/// Per-slot expiry times and a min-heap of deadlines: what the engine keeps once any entry can
/// expire.
///
/// Times are nanoseconds since the cache's clock was first read (`_Timekeeper`); `Int64.max`
/// means never. Each slot has three:
/// - `writtenAt`: when its value was last written (for refresh-after-write);
/// - `writeDeadline`: `writtenAt` plus the entry's time to live (per entry, or the cache's);
/// - `deadline`: the moment it expires, the earlier of `writeDeadline` and the last access plus
///   the time to idle.
///
/// The heap orders `(key, slot)` items by `key`, a lower bound of the slot's `deadline`. Reads
/// that extend a deadline (time to idle) only store the new `deadline`, in O(1); the heap catches
/// up lazily when the stale key reaches the top: the sweep then finds the slot not yet expired
/// and sinks it to its real deadline. So the sweep costs O(log n) per entry that expired or was
/// read since it was scheduled, never a scan, and a read never touches the heap. A write that
/// brings a deadline earlier moves the item up at once, so `key <= deadline` always holds.
///
/// Non-generic, pointers and integers only, so `_CacheCore` keeps a fixed layout.
@usableFromInline
struct _Expiry {
    @usableFromInline static let never = Int64.max

    @usableFromInline var writtenAt: UnsafeMutablePointer<Int64>
    @usableFromInline var writeDeadline: UnsafeMutablePointer<Int64>
    @usableFromInline var deadline: UnsafeMutablePointer<Int64>
    /// Each slot's index in `heap`, or -1 while it has no deadline.
    @usableFromInline var heapPosition: UnsafeMutablePointer<Int32>
    @usableFromInline var heap: UnsafeMutablePointer<_HeapItem>
    @usableFromInline var heapCount: Int
    @usableFromInline var capacity: Int
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
        writtenAt = _SlotMemory.allocate(Int64.self, capacity: capacity)
        writtenAt.initialize(repeating: 0, count: capacity)
        writeDeadline = _SlotMemory.allocate(Int64.self, capacity: capacity)
        writeDeadline.initialize(repeating: Self.never, count: capacity)
        deadline = _SlotMemory.allocate(Int64.self, capacity: capacity)
        deadline.initialize(repeating: Self.never, count: capacity)
        heapPosition = _SlotMemory.allocate(Int32.self, capacity: capacity)
        heapPosition.initialize(repeating: -1, count: capacity)
        heap = _SlotMemory.allocate(_HeapItem.self, capacity: capacity)
    }

    @inlinable
    func deallocate() {
        _SlotMemory.deallocate(writtenAt)
        _SlotMemory.deallocate(writeDeadline)
        _SlotMemory.deallocate(deadline)
        _SlotMemory.deallocate(heapPosition)
        _SlotMemory.deallocate(heap)
    }

    /// Grows per-slot storage to `newCapacity`, keeping slots `0..<used`.
    @inlinable
    mutating func reserve(capacity newCapacity: Int, used: Int) {
        guard newCapacity > capacity else { return }
        writtenAt = Self.moved(writtenAt, used: used, to: newCapacity)
        writeDeadline = Self.moved(writeDeadline, used: used, to: newCapacity)
        deadline = Self.moved(deadline, used: used, to: newCapacity)
        let positions = _SlotMemory.allocate(Int32.self, capacity: newCapacity)
        positions.initialize(repeating: -1, count: newCapacity)
        positions.update(from: heapPosition, count: used)
        _SlotMemory.deallocate(heapPosition)
        heapPosition = positions
        heap = Self.moved(heap, used: heapCount, to: newCapacity)
        capacity = newCapacity
    }

    @inlinable
    static func moved<T>(_ old: UnsafeMutablePointer<T>, used: Int, to newCapacity: Int) -> UnsafeMutablePointer<T> {
        let new = _SlotMemory.allocate(T.self, capacity: newCapacity)
        new.moveInitialize(from: old, count: used)
        _SlotMemory.deallocate(old)
        return new
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
        let newDeadline: Int64
        if now < 0 {
            writtenAt[s] = 0
            writeDeadline[s] = Self.never
            newDeadline = Self.never
        } else {
            writtenAt[s] = now
            writeDeadline[s] = Self.adding(perEntry ?? timeToLive, to: now)
            newDeadline = Swift.min(writeDeadline[s], Self.adding(timeToIdle, to: now))
        }
        deadline[s] = newDeadline
        let position = Int(heapPosition[s])
        if position < 0 {
            if newDeadline != Self.never { push(_HeapItem(key: newDeadline, slot: slot)) }
        } else if newDeadline < heap[position].key {
            heap[position].key = newDeadline
            siftUp(position)
        }
        // Otherwise the item's key is still a lower bound; the sweep corrects it lazily.
    }

    /// Records a read of `slot` at `now`: with a time to idle, its deadline moves later (never
    /// past its write deadline). O(1): the heap is corrected lazily.
    @inlinable
    @inline(__always)
    func didRead(_ slot: Int32, now: Int64) {
        guard timeToIdle != Self.never, now >= 0 else { return }
        let s = Int(slot)
        let extended = Swift.min(writeDeadline[s], Self.adding(timeToIdle, to: now))
        if extended > deadline[s] { deadline[s] = extended }
    }

    /// Forgets `slot`'s deadline (the entry is leaving).
    @inlinable
    mutating func didRemove(_ slot: Int32) {
        let position = Int(heapPosition[Int(slot)])
        guard position >= 0 else { return }
        heapPosition[Int(slot)] = -1
        heapCount -= 1
        guard position != heapCount else { return }
        let last = heap[heapCount]
        heap[position] = last
        heapPosition[Int(last.slot)] = Int32(position)
        if position > 0 && last.key < heap[(position - 1) / 2].key {
            siftUp(position)
        } else {
            siftDown(position)
        }
    }

    @inlinable
    func isExpired(_ slot: Int32, now: Int64) -> Bool { now >= 0 && deadline[Int(slot)] <= now }

    /// Whether a value written at `writtenAt` is due for a refresh at `now`.
    @inlinable
    func isDueForRefresh(_ slot: Int32, now: Int64) -> Bool {
        refreshAfter != Self.never && now >= 0 && Self.adding(refreshAfter, to: writtenAt[Int(slot)]) <= now
    }

    /// The next slot that has expired by `now`, or -1. Items whose deadline moved later since they
    /// were scheduled are re-sorted on the way (or dropped, if they no longer expire). The caller
    /// removes the slot returned (calling `didRemove`) before asking again.
    @inlinable
    mutating func nextExpired(now: Int64) -> Int32 {
        while heapCount > 0 && heap[0].key <= now {
            let slot = heap[0].slot
            let actual = deadline[Int(slot)]
            if actual <= now { return slot }
            if actual == Self.never {
                didRemove(slot)
            } else {
                heap[0].key = actual
                siftDown(0)
            }
        }
        return -1
    }

    /// The earliest a slot can expire (a lower bound), or `never`.
    @inlinable
    var earliestDeadline: Int64 { heapCount > 0 ? heap[0].key : Self.never }

    // MARK: Heap

    @inlinable
    mutating func push(_ item: _HeapItem) {
        heap[heapCount] = item
        heapPosition[Int(item.slot)] = Int32(heapCount)
        heapCount += 1
        siftUp(heapCount - 1)
    }

    @inlinable
    func siftUp(_ start: Int) {
        var i = start
        let item = heap[i]
        while i > 0 {
            let parent = (i - 1) / 2
            guard item.key < heap[parent].key else { break }
            heap[i] = heap[parent]
            heapPosition[Int(heap[i].slot)] = Int32(i)
            i = parent
        }
        heap[i] = item
        heapPosition[Int(item.slot)] = Int32(i)
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
            heapPosition[Int(heap[i].slot)] = Int32(i)
            i = child
        }
        heap[i] = item
        heapPosition[Int(item.slot)] = Int32(i)
    }

    /// Checks the heap order and the position map. O(n); for invariant checks.
    @usableFromInline
    func _checkInvariants(isLive: (Int32) -> Bool) {
        for i in 0..<heapCount {
            let item = heap[i]
            precondition(isLive(item.slot), "expiry heap holds slot \(item.slot), which is not live")
            precondition(heapPosition[Int(item.slot)] == Int32(i), "expiry heap position of \(item.slot) is wrong")
            precondition(item.key <= deadline[Int(item.slot)], "expiry heap key is past slot \(item.slot)'s deadline")
            if i > 0 { precondition(heap[(i - 1) / 2].key <= item.key, "expiry heap out of order at \(i)") }
        }
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
