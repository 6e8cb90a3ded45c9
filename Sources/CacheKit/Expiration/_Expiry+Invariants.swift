// `_Expiry`'s consistency checks, run by the engine's `_checkInvariants()`.

extension _Expiry {
    /// Checks the orders, the heap and the positions against `isLive`. O(n); for invariant checks.
    @usableFromInline
    func _checkInvariants(isLive: (Int32) -> Bool) {
        for i in 0..<heapCount {
            let item = heap[i]
            let record = records[Int(item.slot)]
            precondition(isLive(item.slot), "expiry heap holds slot \(item.slot), which is not live")
            precondition(record.heapPosition == Int32(i), "expiry heap position of \(item.slot) is wrong")
            precondition(item.key == record.writeDeadline, "expiry heap key is not slot \(item.slot)'s deadline")
            precondition(record.writeStamp == 0, "slot \(item.slot) is in both the write queue and the heap")
            if i > 0 { precondition(heap[(i - 1) / 2].key <= item.key, "expiry heap out of order at \(i)") }
        }
        checkWriteQueue(isLive: isLive)
        checkAccessOrder(isLive: isLive)
    }

    /// The write queue is in deadline order, and each slot with a stamp has exactly one record
    /// with it, which carries its deadline.
    func checkWriteQueue(isLive: (Int32) -> Bool) {
        precondition(queueCount <= queueCapacity, "write queue holds more than its capacity")
        var previous = Int64.min
        var stamped = Set<Int32>()
        for i in 0..<queueCount {
            let item = writeQueue.unsafelyUnwrapped[(queueHead + i) & (queueCapacity - 1)]
            let record = records[Int(item.slot)]
            guard record.writeStamp == item.stamp else { continue }
            precondition(isLive(item.slot), "write queue holds a live record for slot \(item.slot), which is not live")
            precondition(record.writeDeadline >= previous, "write queue out of deadline order at \(i)")
            previous = record.writeDeadline
            precondition(stamped.insert(item.slot).inserted, "slot \(item.slot) has two live write-queue records")
        }
        for slot in 0..<Int32(capacity) where records[Int(slot)].writeStamp != 0 {
            precondition(stamped.contains(slot), "slot \(slot) has a stamp but no write-queue record")
        }
    }

    func checkAccessOrder(isLive: (Int32) -> Bool) {
        guard let idle else {
            precondition(accessOrder.head == -1 && accessOrder.count == 0, "an access order without a time to idle")
            return
        }
        var slot = accessOrder.head
        var previous = Int64.min
        var seen = 0
        var last: Int32 = -1
        while slot >= 0 {
            let record = idle[Int(slot)]
            precondition(isLive(slot), "access order holds slot \(slot), which is not live")
            precondition(record.prev == last, "access order links disagree at \(slot)")
            precondition(record.deadline >= previous, "access order out of deadline order at \(slot)")
            previous = record.deadline
            seen += 1
            precondition(seen <= accessOrder.count, "access order longer than its count (a cycle)")
            last = slot
            slot = record.next
        }
        precondition(last == accessOrder.tail && seen == accessOrder.count, "access order's tail or count is wrong")
    }
}
