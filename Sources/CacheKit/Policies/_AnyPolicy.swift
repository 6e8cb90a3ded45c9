/// The policy a cache was configured with, dispatched by a `switch` that the optimizer folds.
///
/// Every payload is one pointer to the policy's state (`_PolicyBox`), and every method is
/// nonmutating, so a call never takes the payload out and writes it back with its tag. That write-back cost about 15
/// instructions per call (S3-FIFO makes four calls per miss).
@usableFromInline
enum _AnyPolicy: _EvictionPolicy {
    case lru(_PolicyBox<_LRUPolicy>)
    case fifo(_PolicyBox<_FIFOPolicy>)
    case lfu(_PolicyBox<_LFUPolicy>)
    case sieve(_PolicyBox<_SIEVEPolicy>)
    case s3fifo(_PolicyBox<_S3FIFOPolicy>)
    case arc(_PolicyBox<_ARCPolicy>)
    case wtinylfu(_PolicyBox<_WTinyLFUPolicy>)
    case adaptive(_PolicyBox<_AdaptivePolicy>)

    @inlinable
    init(_ policy: EvictionPolicy, slotCapacity: Int) {
        switch policy.kind {
        case .lru: self = .lru(_PolicyBox(_LRUPolicy()))
        case .fifo: self = .fifo(_PolicyBox(_FIFOPolicy()))
        case .lfu: self = .lfu(_PolicyBox(_LFUPolicy(slotCapacity: slotCapacity)))
        case .sieve: self = .sieve(_PolicyBox(_SIEVEPolicy(slotCapacity: slotCapacity)))
        case .s3fifo: self = .s3fifo(_PolicyBox(_S3FIFOPolicy(slotCapacity: slotCapacity)))
        case .arc: self = .arc(_PolicyBox(_ARCPolicy(slotCapacity: slotCapacity)))
        case .wtinylfu: self = .wtinylfu(_PolicyBox(_WTinyLFUPolicy(slotCapacity: slotCapacity)))
        case .adaptive: self = .adaptive(_PolicyBox(_AdaptivePolicy(slotCapacity: slotCapacity)))
        }
    }

    @inlinable
    var policy: EvictionPolicy {
        switch self {
        case .lru: .lru
        case .fifo: .fifo
        case .lfu: .lfu
        case .sieve: .sieve
        case .s3fifo: .s3fifo
        case .arc: .arc
        case .wtinylfu: .wTinyLFU
        case .adaptive: .adaptive
        }
    }

    @inlinable
    func setCapacity(_ capacity: Int) {
        switch self {
        case .lru(let p):
            p.setCapacity(capacity)
        case .fifo(let p):
            p.setCapacity(capacity)
        case .lfu(let p):
            p.setCapacity(capacity)
        case .sieve(let p):
            p.setCapacity(capacity)
        case .s3fifo(let p):
            p.setCapacity(capacity)
        case .arc(let p):
            p.setCapacity(capacity)
        case .wtinylfu(let p):
            p.setCapacity(capacity)
        case .adaptive(let p):
            p.setCapacity(capacity)
        }
    }

    /// Whether the policy reads entries' key hashes (`_SlotLinks.hash`): to remember evicted
    /// keys (S3-FIFO's and ARC's ghosts) or to count them (W-TinyLFU's sketch).
    @inlinable
    var readsKeyHashes: Bool {
        switch self {
        case .lru, .fifo, .lfu, .sieve: false
        case .s3fifo, .arc, .wtinylfu, .adaptive: true
        }
    }

    @inlinable
    @inline(__always)
    func willInsert(hash: UInt32) {
        switch self {
        case .lru(let p):
            p.willInsert(hash: hash)
        case .fifo(let p):
            p.willInsert(hash: hash)
        case .lfu(let p):
            p.willInsert(hash: hash)
        case .sieve(let p):
            p.willInsert(hash: hash)
        case .s3fifo(let p):
            p.willInsert(hash: hash)
        case .arc(let p):
            p.willInsert(hash: hash)
        case .wtinylfu(let p):
            p.willInsert(hash: hash)
        case .adaptive(let p):
            p.willInsert(hash: hash)
        }
    }

    @inlinable
    func reserve(slotCapacity: Int, used: Int) {
        switch self {
        case .lru(let p):
            p.reserve(slotCapacity: slotCapacity, used: used)
        case .fifo(let p):
            p.reserve(slotCapacity: slotCapacity, used: used)
        case .lfu(let p):
            p.reserve(slotCapacity: slotCapacity, used: used)
        case .sieve(let p):
            p.reserve(slotCapacity: slotCapacity, used: used)
        case .s3fifo(let p):
            p.reserve(slotCapacity: slotCapacity, used: used)
        case .arc(let p):
            p.reserve(slotCapacity: slotCapacity, used: used)
        case .wtinylfu(let p):
            p.reserve(slotCapacity: slotCapacity, used: used)
        case .adaptive(let p):
            p.reserve(slotCapacity: slotCapacity, used: used)
        }
    }

    @inlinable
    @inline(__always)
    func didInsert(_ slot: Int32, links: _SlotLinks) {
        switch self {
        case .lru(let p):
            p.didInsert(slot, links: links)
        case .fifo(let p):
            p.didInsert(slot, links: links)
        case .lfu(let p):
            p.didInsert(slot, links: links)
        case .sieve(let p):
            p.didInsert(slot, links: links)
        case .s3fifo(let p):
            p.didInsert(slot, links: links)
        case .arc(let p):
            p.didInsert(slot, links: links)
        case .wtinylfu(let p):
            p.didInsert(slot, links: links)
        case .adaptive(let p):
            p.didInsert(slot, links: links)
        }
    }

    @inlinable
    @inline(__always)
    func didAccess(_ slot: Int32, links: _SlotLinks) {
        switch self {
        case .lru(let p):
            p.didAccess(slot, links: links)
        case .lfu(let p):
            p.didAccess(slot, links: links)
        case .sieve(let p):
            p.didAccess(slot, links: links)
        case .s3fifo(let p):
            p.didAccess(slot, links: links)
        case .arc(let p):
            p.didAccess(slot, links: links)
        case .wtinylfu(let p):
            p.didAccess(slot, links: links)
        case .adaptive(let p):
            p.didAccess(slot, links: links)
        case .fifo: break
        }
    }

    @inlinable
    @inline(__always)
    func didUpdate(_ slot: Int32, links: _SlotLinks) {
        switch self {
        case .lru(let p):
            p.didUpdate(slot, links: links)
        case .lfu(let p):
            p.didUpdate(slot, links: links)
        case .sieve(let p):
            p.didUpdate(slot, links: links)
        case .s3fifo(let p):
            p.didUpdate(slot, links: links)
        case .arc(let p):
            p.didUpdate(slot, links: links)
        case .wtinylfu(let p):
            p.didUpdate(slot, links: links)
        case .adaptive(let p):
            p.didUpdate(slot, links: links)
        case .fifo: break
        }
    }

    @inlinable
    @inline(__always)
    func didRemove(_ slot: Int32, evicted: Bool, links: _SlotLinks) {
        switch self {
        case .lru(let p):
            p.didRemove(slot, evicted: evicted, links: links)
        case .fifo(let p):
            p.didRemove(slot, evicted: evicted, links: links)
        case .lfu(let p):
            p.didRemove(slot, evicted: evicted, links: links)
        case .sieve(let p):
            p.didRemove(slot, evicted: evicted, links: links)
        case .s3fifo(let p):
            p.didRemove(slot, evicted: evicted, links: links)
        case .arc(let p):
            p.didRemove(slot, evicted: evicted, links: links)
        case .wtinylfu(let p):
            p.didRemove(slot, evicted: evicted, links: links)
        case .adaptive(let p):
            p.didRemove(slot, evicted: evicted, links: links)
        }
    }

    @inlinable
    func removeAll() {
        switch self {
        case .lru(let p):
            p.removeAll()
        case .fifo(let p):
            p.removeAll()
        case .lfu(let p):
            p.removeAll()
        case .sieve(let p):
            p.removeAll()
        case .s3fifo(let p):
            p.removeAll()
        case .arc(let p):
            p.removeAll()
        case .wtinylfu(let p):
            p.removeAll()
        case .adaptive(let p):
            p.removeAll()
        }
    }

    @inlinable
    @inline(__always)
    func nextVictim(links: _SlotLinks) -> Int32 {
        switch self {
        case .lru(let p):
            return p.nextVictim(links: links)
        case .fifo(let p):
            return p.nextVictim(links: links)
        case .lfu(let p):
            return p.nextVictim(links: links)
        case .sieve(let p):
            return p.nextVictim(links: links)
        case .s3fifo(let p):
            return p.nextVictim(links: links)
        case .arc(let p):
            return p.nextVictim(links: links)
        case .wtinylfu(let p):
            return p.nextVictim(links: links)
        case .adaptive(let p):
            return p.nextVictim(links: links)
        }
    }

    @inlinable
    @inline(__always)
    func firstVictim(links: _SlotLinks) -> Int32 {
        switch self {
        case .lru(let p): p.firstVictim(links: links)
        case .fifo(let p): p.firstVictim(links: links)
        case .lfu(let p): p.firstVictim(links: links)
        case .sieve(let p): p.firstVictim(links: links)
        case .s3fifo(let p): p.firstVictim(links: links)
        case .arc(let p): p.firstVictim(links: links)
        case .wtinylfu(let p): p.firstVictim(links: links)
        case .adaptive(let p): p.firstVictim(links: links)
        }
    }

    /// The entry the next eviction will most likely take, where naming it costs a load or two,
    /// or -1. LRU, FIFO and LFU evict the first member of an index-linked list, and name it;
    /// the others, whose choice takes more work (SIEVE's hand, S3-FIFO's promotions, ARC's
    /// balance, W-TinyLFU's admission contest), do not. Only a hint, for `warmNextEviction`.
    @inlinable
    @inline(__always)
    func upcomingVictim(links: _SlotLinks) -> Int32 {
        switch self {
        case .lru(let p): p.firstVictim(links: links)
        case .fifo(let p): p.firstVictim(links: links)
        case .lfu(let p): p.firstVictim(links: links)
        case .adaptive(let p): p.state.pointee.live.upcomingVictim(links: links)
        case .sieve, .s3fifo, .arc, .wtinylfu: -1
        }
    }

    @inlinable
    @inline(__always)
    func victim(after slot: Int32, links: _SlotLinks) -> Int32 {
        switch self {
        case .lru(let p): p.victim(after: slot, links: links)
        case .fifo(let p): p.victim(after: slot, links: links)
        case .lfu(let p): p.victim(after: slot, links: links)
        case .sieve(let p): p.victim(after: slot, links: links)
        case .s3fifo(let p): p.victim(after: slot, links: links)
        case .arc(let p): p.victim(after: slot, links: links)
        case .wtinylfu(let p): p.victim(after: slot, links: links)
        case .adaptive(let p): p.victim(after: slot, links: links)
        }
    }

    @usableFromInline
    func _checkInvariants(count: Int) {
        switch self {
        case .lru(let p): p._checkInvariants(count: count)
        case .fifo(let p): p._checkInvariants(count: count)
        case .lfu(let p): p._checkInvariants(count: count)
        case .sieve(let p): p._checkInvariants(count: count)
        case .s3fifo(let p): p._checkInvariants(count: count)
        case .arc(let p): p._checkInvariants(count: count)
        case .wtinylfu(let p): p._checkInvariants(count: count)
        case .adaptive(let p): p._checkInvariants(count: count)
        }
    }

    @inlinable
    func deallocate() {
        switch self {
        case .lru(let p): p.deallocate()
        case .fifo(let p): p.deallocate()
        case .lfu(let p): p.deallocate()
        case .sieve(let p): p.deallocate()
        case .s3fifo(let p): p.deallocate()
        case .arc(let p): p.deallocate()
        case .wtinylfu(let p): p.deallocate()
        case .adaptive(let p): p.deallocate()
        }
    }
}
