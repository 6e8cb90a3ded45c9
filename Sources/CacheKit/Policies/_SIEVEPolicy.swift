/// SIEVE (Zhang et al., NSDI 2024): a FIFO queue with one "visited" bit per entry and a hand.
///
/// New entries join the newest end unvisited; a hit only sets the entry's bit, so reads never
/// relink anything. To evict, the hand walks from where it stopped toward the newest end
/// (wrapping to the oldest), clearing visited bits, and evicts the first unvisited entry; it then
/// rests on that entry's newer neighbour. Matches libCacheSim's SIEVE to the request on the
/// reference traces.
///
/// Eviction order (for `keys`, `entries` and the eviction veto) is the order the hand would reach
/// the entries: the next victim first, then around the queue. A visited entry is listed where the
/// hand will pass it, although the hand would skip it once.
@usableFromInline
struct _SIEVEPolicy: _EvictionPolicy {
    /// Oldest at the head, newest at the tail.
    @usableFromInline var list = _ListHead()
    /// Where the next eviction search starts; `-1` means the oldest entry.
    @usableFromInline var hand: Int32 = -1
    /// One byte per slot: 1 if the entry was read since the hand last passed it.
    @usableFromInline var visited: UnsafeMutablePointer<UInt8>

    @inlinable
    init(slotCapacity: Int) {
        visited = _SlotMemory.allocate(UInt8.self, capacity: slotCapacity)
    }

    @inlinable
    mutating func reserve(slotCapacity: Int, used: Int) {
        visited = _SlotMemory.resized(visited, used: used, to: slotCapacity).unsafelyUnwrapped
    }

    @inlinable
    func deallocate() { _SlotMemory.deallocate(visited) }

    @inlinable
    @inline(__always)
    mutating func didInsert(_ slot: Int32, links: _SlotLinks) {
        visited[Int(slot)] = 0
        links.pushBack(slot, &list)
    }

    @inlinable
    @inline(__always)
    mutating func didAccess(_ slot: Int32, links: _SlotLinks) { visited[Int(slot)] = 1 }

    @inlinable
    @inline(__always)
    mutating func didUpdate(_ slot: Int32, links: _SlotLinks) { visited[Int(slot)] = 1 }

    @inlinable
    @inline(__always)
    mutating func didRemove(_ slot: Int32, evicted: Bool, links: _SlotLinks) {
        if slot == hand { hand = links.next(slot) }
        links.unlink(slot, &list)
    }

    @inlinable
    mutating func removeAll() {
        list = _ListHead()
        hand = -1
    }

    /// Moves the hand past visited entries, clearing their bits, to the entry to evict.
    @inlinable
    mutating func nextVictim(links: _SlotLinks) -> Int32 {
        var slot = hand == -1 ? list.head : hand
        guard slot != -1 else { return -1 }
        while visited[Int(slot)] != 0 {
            visited[Int(slot)] = 0
            slot = links.next(slot)
            if slot == -1 { slot = list.head }
        }
        hand = slot
        return slot
    }

    @inlinable
    func firstVictim(links: _SlotLinks) -> Int32 { hand == -1 ? list.head : hand }

    @inlinable
    func victim(after slot: Int32, links: _SlotLinks) -> Int32 {
        var next = links.next(slot)
        if next == -1 { next = list.head }
        return next == firstVictim(links: links) ? -1 : next
    }

    /// Whether the entry in `slot` was read since the hand last passed it (for tests).
    @inlinable
    func isVisited(_ slot: Int32) -> Bool { visited[Int(slot)] != 0 }
}
