/// The policy a cache was configured with, dispatched by a `switch` that the optimizer folds.
///
/// Policy states are plain values over unowned memory (the larger ones keep their state behind
/// one pointer), so taking one out, mutating it and putting it back copies a few words and no
/// buffer. The policies whose state is one pointer (S3-FIFO, ARC, W-TinyLFU) have nonmutating
/// methods and are not put back: that write-back, a few stores per call, was about 15
/// instructions of each S3-FIFO call.
@usableFromInline
enum _AnyPolicy: _EvictionPolicy {
    case lru(_LRUPolicy)
    case fifo(_FIFOPolicy)
    case lfu(_LFUPolicy)
    case sieve(_SIEVEPolicy)
    case s3fifo(_S3FIFOPolicy)
    case arc(_ARCPolicy)
    case wtinylfu(_WTinyLFUPolicy)

    @inlinable
    init(_ policy: EvictionPolicy, slotCapacity: Int) {
        switch policy.kind {
        case .lru: self = .lru(_LRUPolicy())
        case .fifo: self = .fifo(_FIFOPolicy())
        case .lfu: self = .lfu(_LFUPolicy(slotCapacity: slotCapacity))
        case .sieve: self = .sieve(_SIEVEPolicy(slotCapacity: slotCapacity))
        case .s3fifo: self = .s3fifo(_S3FIFOPolicy(slotCapacity: slotCapacity))
        case .arc: self = .arc(_ARCPolicy(slotCapacity: slotCapacity))
        case .wtinylfu: self = .wtinylfu(_WTinyLFUPolicy(slotCapacity: slotCapacity))
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
        }
    }

    @inlinable
    mutating func setCapacity(_ capacity: Int) {
        switch self {
        case .lru(var p):
            p.setCapacity(capacity)
            self = .lru(p)
        case .fifo(var p):
            p.setCapacity(capacity)
            self = .fifo(p)
        case .lfu(var p):
            p.setCapacity(capacity)
            self = .lfu(p)
        case .sieve(var p):
            p.setCapacity(capacity)
            self = .sieve(p)
        case .s3fifo(let p):
            p.setCapacity(capacity)
        case .arc(let p):
            p.setCapacity(capacity)
        case .wtinylfu(let p):
            p.setCapacity(capacity)
        }
    }

    @inlinable
    @inline(__always)
    mutating func willInsert(hash: UInt32) {
        switch self {
        case .lru(var p):
            p.willInsert(hash: hash)
            self = .lru(p)
        case .fifo(var p):
            p.willInsert(hash: hash)
            self = .fifo(p)
        case .lfu(var p):
            p.willInsert(hash: hash)
            self = .lfu(p)
        case .sieve(var p):
            p.willInsert(hash: hash)
            self = .sieve(p)
        case .s3fifo(let p):
            p.willInsert(hash: hash)
        case .arc(let p):
            p.willInsert(hash: hash)
        case .wtinylfu(let p):
            p.willInsert(hash: hash)
        }
    }

    @inlinable
    mutating func reserve(slotCapacity: Int, used: Int) {
        switch self {
        case .lru(var p):
            p.reserve(slotCapacity: slotCapacity, used: used)
            self = .lru(p)
        case .fifo(var p):
            p.reserve(slotCapacity: slotCapacity, used: used)
            self = .fifo(p)
        case .lfu(var p):
            p.reserve(slotCapacity: slotCapacity, used: used)
            self = .lfu(p)
        case .sieve(var p):
            p.reserve(slotCapacity: slotCapacity, used: used)
            self = .sieve(p)
        case .s3fifo(let p):
            p.reserve(slotCapacity: slotCapacity, used: used)
        case .arc(let p):
            p.reserve(slotCapacity: slotCapacity, used: used)
        case .wtinylfu(let p):
            p.reserve(slotCapacity: slotCapacity, used: used)
        }
    }

    @inlinable
    @inline(__always)
    mutating func didInsert(_ slot: Int32, links: _SlotLinks) {
        switch self {
        case .lru(var p):
            p.didInsert(slot, links: links)
            self = .lru(p)
        case .fifo(var p):
            p.didInsert(slot, links: links)
            self = .fifo(p)
        case .lfu(var p):
            p.didInsert(slot, links: links)
            self = .lfu(p)
        case .sieve(var p):
            p.didInsert(slot, links: links)
            self = .sieve(p)
        case .s3fifo(let p):
            p.didInsert(slot, links: links)
        case .arc(let p):
            p.didInsert(slot, links: links)
        case .wtinylfu(let p):
            p.didInsert(slot, links: links)
        }
    }

    @inlinable
    @inline(__always)
    mutating func didAccess(_ slot: Int32, links: _SlotLinks) {
        switch self {
        case .lru(var p):
            p.didAccess(slot, links: links)
            self = .lru(p)
        case .lfu(var p):
            p.didAccess(slot, links: links)
            self = .lfu(p)
        case .sieve(var p):
            p.didAccess(slot, links: links)
            self = .sieve(p)
        case .s3fifo(let p):
            p.didAccess(slot, links: links)
        case .arc(let p):
            p.didAccess(slot, links: links)
        case .wtinylfu(let p):
            p.didAccess(slot, links: links)
        case .fifo: break
        }
    }

    @inlinable
    @inline(__always)
    mutating func didUpdate(_ slot: Int32, links: _SlotLinks) {
        switch self {
        case .lru(var p):
            p.didUpdate(slot, links: links)
            self = .lru(p)
        case .lfu(var p):
            p.didUpdate(slot, links: links)
            self = .lfu(p)
        case .sieve(var p):
            p.didUpdate(slot, links: links)
            self = .sieve(p)
        case .s3fifo(let p):
            p.didUpdate(slot, links: links)
        case .arc(let p):
            p.didUpdate(slot, links: links)
        case .wtinylfu(let p):
            p.didUpdate(slot, links: links)
        case .fifo: break
        }
    }

    @inlinable
    @inline(__always)
    mutating func didRemove(_ slot: Int32, evicted: Bool, links: _SlotLinks) {
        switch self {
        case .lru(var p):
            p.didRemove(slot, evicted: evicted, links: links)
            self = .lru(p)
        case .fifo(var p):
            p.didRemove(slot, evicted: evicted, links: links)
            self = .fifo(p)
        case .lfu(var p):
            p.didRemove(slot, evicted: evicted, links: links)
            self = .lfu(p)
        case .sieve(var p):
            p.didRemove(slot, evicted: evicted, links: links)
            self = .sieve(p)
        case .s3fifo(let p):
            p.didRemove(slot, evicted: evicted, links: links)
        case .arc(let p):
            p.didRemove(slot, evicted: evicted, links: links)
        case .wtinylfu(let p):
            p.didRemove(slot, evicted: evicted, links: links)
        }
    }

    @inlinable
    mutating func removeAll() {
        switch self {
        case .lru(var p):
            p.removeAll()
            self = .lru(p)
        case .fifo(var p):
            p.removeAll()
            self = .fifo(p)
        case .lfu(var p):
            p.removeAll()
            self = .lfu(p)
        case .sieve(var p):
            p.removeAll()
            self = .sieve(p)
        case .s3fifo(let p):
            p.removeAll()
        case .arc(let p):
            p.removeAll()
        case .wtinylfu(let p):
            p.removeAll()
        }
    }

    @inlinable
    @inline(__always)
    mutating func nextVictim(links: _SlotLinks) -> Int32 {
        switch self {
        case .lru(var p):
            let result = p.nextVictim(links: links)
            self = .lru(p)
            return result
        case .fifo(var p):
            let result = p.nextVictim(links: links)
            self = .fifo(p)
            return result
        case .lfu(var p):
            let result = p.nextVictim(links: links)
            self = .lfu(p)
            return result
        case .sieve(var p):
            let result = p.nextVictim(links: links)
            self = .sieve(p)
            return result
        case .s3fifo(let p):
            return p.nextVictim(links: links)
        case .arc(let p):
            return p.nextVictim(links: links)
        case .wtinylfu(let p):
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
        }
    }
}
