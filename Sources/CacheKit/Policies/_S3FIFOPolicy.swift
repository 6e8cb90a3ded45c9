/// S3-FIFO (Yang et al., SOSP 2023): a small FIFO queue (10% of the capacity), a main FIFO queue
/// (the rest) and a ghost queue of recently evicted keys (90% of the capacity, hashes only).
///
/// Each entry has a 2-bit use counter, raised by reads and writes (up to 3). A new key joins the
/// small queue, or the main queue when its hash is a ghost (it left the small queue recently and
/// came back) or before the first eviction, once the small queue is full. To evict:
/// - while the main queue is over its share, or the small queue is empty, the main queue's oldest
///   entry is evicted if its counter is 0, else it goes back to the newest end with its counter
///   lowered by one (a 2-bit CLOCK);
/// - otherwise the small queue's oldest entry moves to the main queue if it was used twice or more
///   (its counter reset), else it is evicted and its hash becomes a ghost.
/// This follows libCacheSim's S3-FIFO, whose hit ratios the reference table lists.
///
/// Eviction order (for enumeration and the eviction veto) is the queue evicted from first, oldest
/// first, then the other queue; entries that a sweep would move are listed where they stand.
///
@usableFromInline
struct _S3FIFOPolicy: _EvictionPolicy {
    @usableFromInline var small = _ListHead()
    @usableFromInline var main = _ListHead()
    @usableFromInline var smallCount = 0
    @usableFromInline var mainCount = 0
    @usableFromInline var ghosts = _GhostQueue()
    /// Per slot: bit 2 set in the main queue; bits 0-1 the use counter.
    @usableFromInline var flags: UnsafeMutablePointer<UInt8>
    /// `countLimit`, or 0 to size the queues by the resident count.
    @usableFromInline var capacity = 0
    /// The shares of a nonzero `capacity` (small, main, ghost), computed when it is set.
    @usableFromInline var fixedShares = (small: 1, main: -1, ghost: 0)
    /// Whether anything was evicted since the cache was created or emptied.
    @usableFromInline var hasEvicted = false
    /// Whether the key announced by `willInsert` was a ghost.
    @usableFromInline var incomingWasGhost = false

    @usableFromInline static var mainBit: UInt8 { 4 }

    @inlinable
    init(slotCapacity: Int) {
        flags = _SlotMemory.allocate(UInt8.self, capacity: slotCapacity)
    }

    @inlinable
    func deallocate() {
        _SlotMemory.deallocate(flags)
        ghosts.deallocate()
    }

    @inlinable
    mutating func reserve(slotCapacity: Int, used: Int) {
        flags = _SlotMemory.resized(flags, used: used, to: slotCapacity).unsafelyUnwrapped
    }

    @inlinable
    mutating func setCapacity(_ capacity: Int) {
        self.capacity = capacity
        fixedShares = Self.shares(of: capacity)
        // Room for more than it holds: the cache fills again, and until it next evicts, new
        // entries past the small queue's share go to main (as in a cache that never evicted),
        // rather than piling into the small queue.
        if capacity == 0 || capacity > smallCount + mainCount {
            hasEvicted = false
        }
    }

    /// The queue shares of `capacity`: small 10% (at least one entry), main the rest, ghost 90%.
    @inlinable
    static func shares(of capacity: Int) -> (small: Int, main: Int, ghost: Int) {
        let small = Swift.max(1, capacity / 10)
        return (small, capacity - small, capacity * 9 / 10)
    }

    /// The shares of `countLimit`, or of the resident count when there is none.
    @inlinable
    var currentShares: (small: Int, main: Int, ghost: Int) {
        guard capacity == 0 else { return fixedShares }
        return Self.shares(of: smallCount + mainCount)
    }

    /// The small queue's share.
    @inlinable
    var smallShare: Int { currentShares.small }

    /// The main queue's share.
    @inlinable
    var mainShare: Int { currentShares.main }

    /// The ghost queue's length.
    @inlinable
    var ghostShare: Int { currentShares.ghost }

    @inlinable
    func isInMain(_ slot: Int32) -> Bool { flags[Int(slot)] & Self.mainBit != 0 }

    /// The use counter of the entry in `slot` (0...3; for tests).
    @inlinable
    func useCount(of slot: Int32) -> Int { Int(flags[Int(slot)] & 3) }

    @inlinable
    mutating func willInsert(hash: UInt32) {
        incomingWasGhost = ghosts.remove(hash)
    }

    @inlinable
    mutating func didInsert(_ slot: Int32, links: _SlotLinks) {
        let toMain =
            incomingWasGhost || (!hasEvicted && smallCount >= smallShare)
        incomingWasGhost = false
        if toMain {
            flags[Int(slot)] = Self.mainBit
            links.pushBack(slot, &main)
            mainCount += 1
        } else {
            flags[Int(slot)] = 0
            links.pushBack(slot, &small)
            smallCount += 1
        }
    }

    @inlinable
    @inline(__always)
    mutating func didAccess(_ slot: Int32, links: _SlotLinks) {
        let f = flags[Int(slot)]
        if f & 3 != 3 { flags[Int(slot)] = f &+ 1 }
    }

    @inlinable
    mutating func didUpdate(_ slot: Int32, links: _SlotLinks) { didAccess(slot, links: links) }

    @inlinable
    mutating func didRemove(_ slot: Int32, evicted: Bool, links: _SlotLinks) {
        if isInMain(slot) {
            links.unlink(slot, &main)
            mainCount -= 1
        } else {
            links.unlink(slot, &small)
            smallCount -= 1
            if evicted {
                ghosts.append(links.hash(slot), limit: ghostShare)
            }
        }
    }

    @inlinable
    mutating func removeAll() {
        small = _ListHead()
        main = _ListHead()
        smallCount = 0
        mainCount = 0
        ghosts.removeAll()
        hasEvicted = false
        incomingWasGhost = false
    }

    /// Whether the next eviction comes from the main queue.
    @inlinable
    var evictsFromMain: Bool { smallCount == 0 || mainCount > mainShare }

    /// Sweeps the queues as S3-FIFO does (moving used small entries to main, giving used main
    /// entries another round) and returns the entry to evict.
    @inlinable
    mutating func nextVictim(links: _SlotLinks) -> Int32 {
        guard smallCount + mainCount > 0 else { return -1 }
        hasEvicted = true
        while true {
            if evictsFromMain {
                while true {
                    let slot = main.head
                    let f = flags[Int(slot)]
                    if f & 3 == 0 { return slot }
                    flags[Int(slot)] = f &- 1
                    links.moveToBack(slot, &main)
                }
            }
            while smallCount > 0 {
                let slot = small.head
                if flags[Int(slot)] & 3 < 2 { return slot }
                links.unlink(slot, &small)
                smallCount -= 1
                flags[Int(slot)] = Self.mainBit
                links.pushBack(slot, &main)
                mainCount += 1
            }
        }
    }

    @usableFromInline
    func _checkInvariants(count: Int) {
        precondition(
            smallCount + mainCount == count,
            "S3-FIFO queues hold \(smallCount) + \(mainCount), count is \(count)"
        )
        ghosts._checkInvariants()
    }

    @inlinable
    func firstVictim(links: _SlotLinks) -> Int32 {
        evictsFromMain ? (main.head != -1 ? main.head : small.head) : small.head
    }

    @inlinable
    func victim(after slot: Int32, links: _SlotLinks) -> Int32 {
        let next = links.next(slot)
        if next != -1 { return next }
        let mainFirst = evictsFromMain
        let inMain = isInMain(slot)
        if mainFirst && inMain { return small.head }
        if !mainFirst && !inMain { return main.head }
        return -1
    }
}
