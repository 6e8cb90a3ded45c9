/// ``EvictionPolicy/adaptive``: one live policy, chosen among candidates by miniature
/// simulations that run beside it on a sample of the keys (see `_MiniatureSimulations`).
///
/// Every request the policy hears (a hit, an update, a new key) is also a request of the
/// simulations when its key is sampled; a sampled request costs one probe of each miniature,
/// the others one multiply and a compare. When the simulations pick another candidate, the
/// switch waits for the next new key to be stored (a writer's turn, never a read's; the key
/// joins the new policy after the switch), then walks the live policy's eviction order and
/// hands every entry to the new policy in that order, first victims first, so that no entry is
/// lost and what the old policy would have evicted first is where the new one looks first. A
/// switch costs O(*n*) for *n* entries, and the simulations choose at most once per miniature
/// capacity of sampled requests, the cache's capacity in requests: O(1) amortized.
///
/// The new policy starts without the old one's history (W-TinyLFU's sketch, S3-FIFO's and
/// ARC's ghosts). Handing S3-FIFO the entries in its small queue, or its main queue, and seeding
/// its ghosts with the keys the old policy evicted lately each measured worse over the trace
/// cases of <doc:ChoosingAPolicy> than this plain hand-over.
///
/// Without a count limit (a cost limit alone, or none) the miniatures are scaled to the entries
/// the cache holds at its first eviction, and again whenever that number has doubled or halved.
@usableFromInline
struct _AdaptivePolicy: _EvictionPolicy {
    @usableFromInline var live: _AnyPolicy
    /// The live policy's index in `_MiniatureSimulations.candidates`.
    @usableFromInline var liveCandidate = 0
    /// The candidate to switch to at the next new key, or -1.
    @usableFromInline var pendingSwitch = -1
    @usableFromInline let simulations = _MiniatureSimulations()
    /// Sampling threshold (a copy of the simulations'): a remixed hash below it is sampled.
    @usableFromInline var threshold: UInt64 = 0
    @usableFromInline var slotCapacity = 0
    @usableFromInline var capacity = 0
    @usableFromInline var resident = 0
    /// Requests heard: hits, updates and new keys.
    @usableFromInline var requests = 0

    @inlinable
    init(slotCapacity: Int) {
        live = _AnyPolicy(_MiniatureSimulations.candidates[liveCandidate], slotCapacity: slotCapacity)
        self.slotCapacity = slotCapacity
    }

    @inlinable
    func deallocate() { live.deallocate() }

    @inlinable
    mutating func reserve(slotCapacity: Int, used: Int) {
        self.slotCapacity = slotCapacity
        live.reserve(slotCapacity: slotCapacity, used: used)
    }

    @inlinable
    mutating func setCapacity(_ capacity: Int) {
        self.capacity = capacity
        live.setCapacity(capacity)
        rescale()
    }

    /// Scales the simulations to the count limit, or without one to the resident entries once
    /// the cache evicts.
    @usableFromInline
    mutating func rescale() {
        if capacity > 0 {
            threshold = simulations.scale(to: capacity)
        } else {
            let scaled = simulations.capacity
            if scaled == 0 || resident > 2 * scaled || 2 * resident < scaled {
                threshold = simulations.scale(to: resident)
            }
        }
    }

    /// Counts a request for the key with `hash` and, when it is sampled, replays it through
    /// the miniatures.
    @inlinable
    @inline(__always)
    mutating func observe(_ hash: UInt32) {
        requests &+= 1
        if _MiniatureSimulations.remix(hash) < threshold { sample(hash) }
    }

    @usableFromInline
    @inline(never)
    mutating func sample(_ hash: UInt32) {
        guard let choice = simulations.request(hash, live: liveCandidate) else { return }
        pendingSwitch = choice == liveCandidate ? -1 : choice
    }

    @inlinable
    mutating func willInsert(hash: UInt32) {
        observe(hash)
        live.willInsert(hash: hash)
    }

    @inlinable
    mutating func didInsert(_ slot: Int32, links: _SlotLinks) {
        if pendingSwitch >= 0 {
            switchLive(to: pendingSwitch, links: links)
            // The key being stored was announced to the old policy; the new one hears it too.
            live.willInsert(hash: links.hash(slot))
        }
        resident += 1
        live.didInsert(slot, links: links)
    }

    @inlinable
    @inline(__always)
    mutating func didAccess(_ slot: Int32, links: _SlotLinks) {
        observe(links.hash(slot))
        live.didAccess(slot, links: links)
    }

    @inlinable
    mutating func didUpdate(_ slot: Int32, links: _SlotLinks) {
        observe(links.hash(slot))
        live.didUpdate(slot, links: links)
    }

    @inlinable
    mutating func didRemove(_ slot: Int32, evicted: Bool, links: _SlotLinks) {
        resident -= 1
        live.didRemove(slot, evicted: evicted, links: links)
    }

    @inlinable
    mutating func removeAll() {
        resident = 0
        live.removeAll()
    }

    @inlinable
    mutating func nextVictim(links: _SlotLinks) -> Int32 {
        if capacity == 0 { rescale() }
        return live.nextVictim(links: links)
    }

    @inlinable
    func firstVictim(links: _SlotLinks) -> Int32 { live.firstVictim(links: links) }

    @inlinable
    func victim(after slot: Int32, links: _SlotLinks) -> Int32 { live.victim(after: slot, links: links) }

    /// Moves every entry to `candidate`'s policy, in the live policy's eviction order.
    ///
    /// - Complexity: O(*n*) for *n* entries.
    @usableFromInline
    @inline(never)
    mutating func switchLive(to candidate: Int, links: _SlotLinks) {
        pendingSwitch = -1
        var order: [Int32] = []
        order.reserveCapacity(resident)
        var slot = live.firstVictim(links: links)
        while slot != -1 {
            order.append(slot)
            slot = live.victim(after: slot, links: links)
        }
        precondition(order.count == resident, "the live policy listed \(order.count) of \(resident) entries")
        let next = _AnyPolicy(_MiniatureSimulations.candidates[candidate], slotCapacity: 0)
        next.setCapacity(capacity)
        next.reserve(slotCapacity: slotCapacity, used: 0)
        for slot in order {
            next.willInsert(hash: links.hash(slot))
            next.didInsert(slot, links: links)
        }
        live.deallocate()
        simulations.log(
            _PolicySwitch(request: requests, from: live.policy, to: _MiniatureSimulations.candidates[candidate])
        )
        live = next
        liveCandidate = candidate
    }

    @usableFromInline
    func _checkInvariants(count: Int) {
        precondition(resident == count, "adaptive policy counts \(resident) entries, the cache \(count)")
        live._checkInvariants(count: count)
    }
}
