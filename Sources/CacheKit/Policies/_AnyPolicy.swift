/// The policy a cache was configured with, dispatched by a `switch` that the optimizer folds.
///
/// Policy states are plain values over unowned memory, so taking one out, mutating it and putting
/// it back copies a few words and no buffer.
@usableFromInline
enum _AnyPolicy: _EvictionPolicy {
    case lru(_LRUPolicy)
    case fifo(_FIFOPolicy)
    case lfu(_LFUPolicy)
    case sieve(_SIEVEPolicy)

    @inlinable
    init(_ policy: EvictionPolicy, slotCapacity: Int) {
        switch policy.kind {
        case .lru: self = .lru(_LRUPolicy())
        case .fifo: self = .fifo(_FIFOPolicy())
        case .lfu: self = .lfu(_LFUPolicy(slotCapacity: slotCapacity))
        case .sieve: self = .sieve(_SIEVEPolicy(slotCapacity: slotCapacity))
        }
    }

    @inlinable
    var policy: EvictionPolicy {
        switch self {
        case .lru: .lru
        case .fifo: .fifo
        case .lfu: .lfu
        case .sieve: .sieve
        }
    }

    @inlinable
    mutating func reserve(slotCapacity: Int, used: Int) {
        switch self {
        case .lru, .fifo: break
        case .lfu(var p):
            p.reserve(slotCapacity: slotCapacity, used: used)
            self = .lfu(p)
        case .sieve(var p):
            p.reserve(slotCapacity: slotCapacity, used: used)
            self = .sieve(p)
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
        }
    }

    @inlinable
    @inline(__always)
    mutating func didAccess(_ slot: Int32, links: _SlotLinks) {
        switch self {
        case .lru(var p):
            p.didAccess(slot, links: links)
            self = .lru(p)
        case .fifo: break
        case .lfu(var p):
            p.didAccess(slot, links: links)
            self = .lfu(p)
        case .sieve(var p):
            p.didAccess(slot, links: links)
            self = .sieve(p)
        }
    }

    @inlinable
    @inline(__always)
    mutating func didUpdate(_ slot: Int32, links: _SlotLinks) {
        switch self {
        case .lru(var p):
            p.didUpdate(slot, links: links)
            self = .lru(p)
        case .fifo: break
        case .lfu(var p):
            p.didUpdate(slot, links: links)
            self = .lfu(p)
        case .sieve(var p):
            p.didUpdate(slot, links: links)
            self = .sieve(p)
        }
    }

    @inlinable
    @inline(__always)
    mutating func didRemove(_ slot: Int32, links: _SlotLinks) {
        switch self {
        case .lru(var p):
            p.didRemove(slot, links: links)
            self = .lru(p)
        case .fifo(var p):
            p.didRemove(slot, links: links)
            self = .fifo(p)
        case .lfu(var p):
            p.didRemove(slot, links: links)
            self = .lfu(p)
        case .sieve(var p):
            p.didRemove(slot, links: links)
            self = .sieve(p)
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
        }
    }

    @inlinable
    @inline(__always)
    mutating func nextVictim(links: _SlotLinks) -> Int32 {
        switch self {
        case .sieve(var p):
            let victim = p.nextVictim(links: links)
            self = .sieve(p)
            return victim
        case .lru, .fifo, .lfu:
            return firstVictim(links: links)
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
        }
    }

    @inlinable
    func deallocate() {
        switch self {
        case .lru(let p): p.deallocate()
        case .fifo(let p): p.deallocate()
        case .lfu(let p): p.deallocate()
        case .sieve(let p): p.deallocate()
        }
    }
}
