/// ARC, the Adaptive Replacement Cache (Megiddo & Modha, FAST 2003).
///
/// Two LRU lists hold the entries: T1 for keys seen once recently, T2 for keys seen at least twice.
/// Two ghost lists remember (by hash) keys recently evicted from each: B1 and B2. A target `p` for
/// the size of T1 adapts: a miss whose key is in B1 says T1 was too small (`p` grows by
/// max(|B2|/|B1|, 1)); one in B2 says T2 was (`p` shrinks by max(|B1|/|B2|, 1)). Such a key returns
/// straight into T2; any other new key enters T1. A hit moves the entry to T2's most recent end.
/// The victim is T1's least recent entry when T1 is larger than `p` (or equal to it and the new
/// key came from B2), else T2's. Ghost lists are kept to |T1| + |B1| ≤ c and
/// |T1| + |T2| + |B1| + |B2| ≤ 2c, as in the paper, with c the cache's `countLimit` (or its resident
/// count when it has none).
///
/// Eviction order (for enumeration and the eviction veto) is the list the next eviction takes
/// from, least recent first, then the other list.
@usableFromInline
struct _ARCPolicy: _EvictionPolicy {
    @usableFromInline var t1 = _ListHead()
    @usableFromInline var t2 = _ListHead()
    @usableFromInline var t1Count = 0
    @usableFromInline var t2Count = 0
    /// Ghost list 0 is B1, list 1 is B2.
    @usableFromInline var ghosts = _GhostLists()
    /// The target size of T1.
    @usableFromInline var p: Double = 0
    /// Per slot: 1 if in T2.
    @usableFromInline var inT2: UnsafeMutablePointer<UInt8>
    @usableFromInline var capacity = 0
    /// The ghost list (0: B1, 1: B2) that held the key announced by `willInsert`, or -1.
    @usableFromInline var incomingGhostList = -1

    @inlinable
    init(slotCapacity: Int) {
        inT2 = _SlotMemory.allocate(UInt8.self, capacity: slotCapacity)
    }

    @inlinable
    func deallocate() {
        _SlotMemory.deallocate(inT2)
        ghosts.deallocate()
    }

    @inlinable
    mutating func reserve(slotCapacity: Int, used: Int) {
        inT2 = _SlotMemory.resized(inT2, used: used, to: slotCapacity).unsafelyUnwrapped
    }

    @inlinable
    mutating func setCapacity(_ capacity: Int) {
        self.capacity = capacity
        // The target size of T1 stays within 0...c (ARC's invariant) when c shrinks.
        if capacity > 0 { p = Swift.min(p, Double(capacity)) }
    }

    @inlinable
    var c: Int { capacity > 0 ? capacity : t1Count + t2Count }

    /// The adaptive target size of T1 (for tests).
    @inlinable
    var target: Double { p }

    /// Whether the entry in `slot` is in T2 (for tests).
    @inlinable
    func isInT2(_ slot: Int32) -> Bool { inT2[Int(slot)] != 0 }

    @inlinable
    mutating func willInsert(hash: UInt32) {
        let node = ghosts.find(hash)
        guard node != -1 else {
            incomingGhostList = -1
            return
        }
        let list = ghosts.list(of: node)
        let b1 = Double(ghosts.count(0))
        let b2 = Double(ghosts.count(1))
        if list == 0 {
            p = Swift.min(Double(c), p + Swift.max(b2 / b1, 1))
        } else {
            p = Swift.max(0, p - Swift.max(b1 / b2, 1))
        }
        incomingGhostList = list
        ghosts.remove(node)
    }

    @inlinable
    mutating func didInsert(_ slot: Int32, links: _SlotLinks) {
        if incomingGhostList != -1 {
            inT2[Int(slot)] = 1
            links.pushBack(slot, &t2)
            t2Count += 1
        } else {
            inT2[Int(slot)] = 0
            links.pushBack(slot, &t1)
            t1Count += 1
        }
        incomingGhostList = -1
        let c = self.c
        while t1Count + ghosts.count(0) > c && ghosts.count(0) > 0 {
            ghosts.removeOldest(0)
        }
        while t1Count + t2Count + ghosts.count(0) + ghosts.count(1) > 2 * c
            && ghosts.count(1) > 0
        {
            ghosts.removeOldest(1)
        }
    }

    @inlinable
    mutating func didAccess(_ slot: Int32, links: _SlotLinks) {
        if inT2[Int(slot)] != 0 {
            links.moveToBack(slot, &t2)
        } else {
            links.unlink(slot, &t1)
            t1Count -= 1
            inT2[Int(slot)] = 1
            links.pushBack(slot, &t2)
            t2Count += 1
        }
    }

    @inlinable
    mutating func didUpdate(_ slot: Int32, links: _SlotLinks) { didAccess(slot, links: links) }

    @inlinable
    mutating func didRemove(_ slot: Int32, evicted: Bool, links: _SlotLinks) {
        let list: Int
        if inT2[Int(slot)] != 0 {
            links.unlink(slot, &t2)
            t2Count -= 1
            list = 1
        } else {
            links.unlink(slot, &t1)
            t1Count -= 1
            list = 0
        }
        if evicted { ghosts.append(links.hash(slot), to: list) }
    }

    @inlinable
    mutating func removeAll() {
        t1 = _ListHead()
        t2 = _ListHead()
        t1Count = 0
        t2Count = 0
        ghosts.removeAll()
        p = 0
        incomingGhostList = -1
    }

    /// Whether the next victim comes from T1 (the paper's REPLACE).
    @inlinable
    var evictsFromT1: Bool {
        guard t1Count > 0 else { return false }
        if t2Count == 0 { return true }
        let t1 = Double(t1Count)
        return t1 > p || (incomingGhostList == 1 && t1 == p)
    }

    @inlinable
    mutating func nextVictim(links: _SlotLinks) -> Int32 { firstVictim(links: links) }

    @inlinable
    func firstVictim(links: _SlotLinks) -> Int32 {
        evictsFromT1 ? t1.head : t2.head
    }

    @inlinable
    func victim(after slot: Int32, links: _SlotLinks) -> Int32 {
        let next = links.next(slot)
        if next != -1 { return next }
        let t1First = evictsFromT1
        let inT2 = isInT2(slot)
        if t1First && !inT2 { return t2.head }
        if !t1First && inT2 { return t1.head }
        return -1
    }
}
