// The three orders `_Expiry` keeps deadlines in: the write queue (the cache's own time to live,
// in write order), the access list (time to idle, in access order) and a min-heap (times to live
// of an entry's own).

extension _Expiry {
    /// Appends a record for `slot`, whose new deadline is the latest so far, and returns its
    /// stamp.
    ///
    /// - Complexity: O(1) amortized.
    @inlinable
    mutating func enqueue(_ slot: Int32) -> UInt32 {
        if queueCount == queueCapacity { compactQueue() }
        let stamp = nextStamp()
        writeQueue.unsafelyUnwrapped[(queueHead + queueCount) & (queueCapacity - 1)] = Queued(
            slot: slot,
            stamp: stamp
        )
        queueCount += 1
        return stamp
    }

    /// A new stamp (never 0).
    @inlinable
    @inline(__always)
    mutating func nextStamp() -> UInt32 {
        lastStamp = lastStamp == .max ? 1 : lastStamp &+ 1
        return lastStamp
    }

    /// Drops the stale records of a full queue in place, in one pass, keeping their order; the
    /// ring is doubled when more than half of it stays live. Each slot has at most one live
    /// record, so the ring stays under four times the slots that have one, and the O(n) pass
    /// comes after at least n/2 appends. (Compacting into a fresh ring instead cost a page fault
    /// per 4 KiB of it on every pass: measured, a third of what a time to live cost a write.)
    @usableFromInline
    mutating func compactQueue() {
        guard let queue = writeQueue else {
            writeQueue = _SlotMemory.allocate(Queued.self, capacity: 64)
            queueCapacity = 64
            return
        }
        let mask = queueCapacity - 1
        var kept = 0
        for i in 0..<queueCount {
            let item = queue[(queueHead + i) & mask]
            guard records[Int(item.slot)].writeStamp == item.stamp else { continue }
            queue[(queueHead + kept) & mask] = item
            kept += 1
        }
        queueCount = kept
        guard kept * 2 > queueCapacity else { return }
        let larger = _SlotMemory.allocate(Queued.self, capacity: queueCapacity * 2)
        for i in 0..<kept { (larger + i).initialize(to: queue[(queueHead + i) & mask]) }
        _SlotMemory.deallocate(queue)
        writeQueue = larger
        queueCapacity *= 2
        queueHead = 0
    }

    @inlinable
    mutating func unlink(_ slot: Int32, _ idle: UnsafeMutablePointer<IdleRecord>) {
        let p = idle[Int(slot)].prev
        guard p != Self.absent else { return }
        let n = idle[Int(slot)].next
        if p >= 0 { idle[Int(p)].next = n } else { accessOrder.head = n }
        if n >= 0 { idle[Int(n)].prev = p } else { accessOrder.tail = p }
        idle[Int(slot)].prev = Self.absent
        idle[Int(slot)].next = -1
        accessOrder.count -= 1
    }

    @inlinable
    @inline(__always)
    mutating func moveToTail(_ slot: Int32, _ idle: UnsafeMutablePointer<IdleRecord>) {
        let tail = accessOrder.tail
        guard slot != tail else { return }
        unlink(slot, idle)
        idle[Int(slot)].prev = tail
        idle[Int(slot)].next = -1
        if tail >= 0 { idle[Int(tail)].next = slot } else { accessOrder.head = slot }
        accessOrder.tail = slot
        accessOrder.count += 1
    }

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
}
