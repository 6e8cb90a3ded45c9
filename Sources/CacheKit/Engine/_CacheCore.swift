// Engine/: the engine (slots, hash index, list links, limits) that every cache drives. Returns
// removals instead of calling out; knows no lock, handler or thread.

import _CacheKitShims

/// The engine under every CacheKit cache: slot storage, hash index, eviction policy and limits.
///
/// Not thread-safe, and it calls no one: each operation mutates the state and returns what left
/// (`_Removals`) for the owner to report after unlocking.
///
/// Layout. Entries live in slots of contiguous arrays (`entries`; `hashes` where
/// `storesHashes`; `costs` once any entry has a non-zero cost). `index` maps a key to its slot
/// through 4-byte buckets. Slots are
/// linked into the policy's lists by `links` (stored in the entry records); freed slots form a free list through
/// `links.next` and are reused before the arrays grow. No class instance exists per entry, and
/// a hit or a steady-state write allocates nothing.
///
/// Slot storage grows by doubling, but never past `countLimit` while the cache keeps to it.
/// A slot in `0..<slotsUsed` holds a live entry exactly when it is not on the free list.
///
/// Every stored property has a fixed layout (pointers, integers, the policy enum): with a stored
/// property of a generic type, Swift 6.3 silently skipped this struct's `deinit` (leaking every
/// entry); `EventTests.valuesAreReleased` guards against that.
@usableFromInline
struct _CacheCore<Key: Hashable, Value>: ~Copyable {
    /// Each slot's links, key and value, side by side: a hit reads one record.
    @usableFromInline var entries: UnsafeMutablePointer<_Entry<Key, Value>>
    /// Per-slot key hash, truncated to 32 bits (the index never needs more), when
    /// `storesHashes`; otherwise an empty allocation that nothing reads.
    @usableFromInline var hashes: UnsafeMutablePointer<UInt32>
    /// Whether `hashes` holds each slot's key hash: when the policy reads them, or when hashing
    /// a key again costs more than a few instructions (any key `_KeyHash` does not hash itself:
    /// a `String`, or a struct of one's own, whose `Hasher` would otherwise run on every
    /// eviction). Otherwise a removal and
    /// index growth hash the key again (see `storedHash`), which saves 4 bytes per entry: for
    /// integer keys under LRU, FIFO, LFU or SIEVE.
    @usableFromInline let storesHashes: Bool
    /// Per-slot cost; `nil` until an entry with a non-zero cost arrives.
    @usableFromInline var costs: UnsafeMutablePointer<Int>?
    /// Per-slot version, bumped on every insert, replace and removal; kept once an eviction veto
    /// is installed (to tell whether a proposed candidate changed while the veto was asked) or
    /// reads are buffered (`SharedCache`, and a `Cache` whose reads are shared: to skip a
    /// buffered read whose entry changed).
    @usableFromInline var generations: UnsafeMutablePointer<UInt32>?
    @usableFromInline var links: _SlotLinks
    @usableFromInline var index: _HashIndex
    /// `_KeyHash.processSeed`, copied: reading the global on every hash would cost a call.
    @usableFromInline let seed: _KeyHash.Seed
    @usableFromInline var policy: _AnyPolicy
    @usableFromInline var slotCapacity: Int
    @usableFromInline var slotsUsed: Int
    @usableFromInline var freeHead: Int32
    @usableFromInline var count: Int
    @usableFromInline var totalCost: Int
    /// Also the capacity the policy sizes its segments and ghosts by (`0`: its resident count).
    @usableFromInline var countLimit: Int {
        didSet { policy.setCapacity(Self.policyCapacity(countLimit)) }
    }
    @usableFromInline var totalCostLimit: Int
    /// Hits, misses and removals, counted here so that counting needs no lock of its own.
    @usableFromInline var stats = _StatisticsCounters()
    /// Deadlines, once any entry can expire (see `_Expiry`); `nil` until then. Boxed: every
    /// operation asks whether it is there, and on an optional of the ~150-byte struct that
    /// question compiled to a copy of it (seen in profiles of caches without expiry).
    @usableFromInline var expiry: UnsafeMutablePointer<_Expiry>?
    /// How many times `takeAll` replaced the slot storage before this one: fresh storage
    /// counts generations from 0 again, so a version (`version(of:)`) pairs the two. (Last, so
    /// that the fields every operation reads keep their places.)
    @usableFromInline var epoch: UInt32

    @inlinable
    init(
        countLimit: Int,
        totalCostLimit: Int,
        expiry expiryTimes: _ExpiryTimes? = nil,
        policy makePolicy: (_ slotCapacity: Int) -> _AnyPolicy
    ) {
        precondition(countLimit >= 0, "countLimit must not be negative (got \(countLimit))")
        precondition(totalCostLimit >= 0, "totalCostLimit must not be negative (got \(totalCostLimit))")
        self.entries = _SlotMemory.allocate(_Entry<Key, Value>.self, capacity: 0)
        self.hashes = _SlotMemory.allocate(UInt32.self, capacity: 0)
        self.links = _SlotLinks(entries, hashes: hashes)
        self.costs = nil
        self.generations = nil
        self.epoch = 0
        self.seed = _KeyHash.processSeed
        self.index = _HashIndex(bucketCount: 8, slotCapacity: 0)
        self.policy = makePolicy(0)
        self.storesHashes = !_KeyHash.hashesItself(Key.self) || policy.readsKeyHashes
        self.slotCapacity = 0
        self.slotsUsed = 0
        self.freeHead = -1
        self.count = 0
        self.totalCost = 0
        self.countLimit = countLimit
        self.totalCostLimit = totalCostLimit
        self.expiry = expiryTimes.map { Self.boxed(_Expiry($0, capacity: 0)) }
        self.policy.setCapacity(Self.policyCapacity(countLimit))
    }

    /// The capacity policies size their queues by: `countLimit`, but no more than slot numbers
    /// (`Int32`) can address, so that their share arithmetic (`9 * capacity / 10`, ARC's
    /// `2 * capacity`, W-TinyLFU's sample sizes) cannot overflow for a limit such as `Int.max`.
    @inlinable
    static func policyCapacity(_ countLimit: Int) -> Int { Swift.min(countLimit, Int(Int32.max)) }

    @inlinable
    deinit {
        destroyEntries()
        _SlotMemory.deallocate(entries)
        _SlotMemory.deallocate(hashes)
        if let costs { _SlotMemory.deallocate(costs) }
        if let generations { _SlotMemory.deallocate(generations) }
        if let expiry {
            expiry.pointee.deallocate()
            expiry.deinitialize(count: 1)
            expiry.deallocate()
        }
        index.deallocate()
        policy.deallocate()
    }

    /// Deinitializes every live key and value.
    @inlinable
    func destroyEntries() {
        guard !(_isPOD(Key.self) && _isPOD(Value.self)) else { return }
        for b in 0..<index.bucketCount {
            let slot = index.slot(at: b)
            if slot >= 0 { (entries + Int(slot)).deinitialize(count: 1) }
        }
    }

    // MARK: Limits

    @inlinable
    var limits: _TrimTarget { .limits(countLimit: countLimit, totalCostLimit: totalCostLimit) }

    /// Whether the cache holds more than its limits allow (possible only after a veto).
    @inlinable
    var isOverLimit: Bool { limits.reasonToEvict(count: count, cost: totalCost) != nil }

    @inlinable
    func cost(at slot: Int32) -> Int { costs?[Int(slot)] ?? 0 }

    /// Whether a new entry of `cost` can be counted beside the total without passing `Int.max`:
    /// always under a cost limit (a new entry makes room for its cost first), otherwise only if
    /// the sum fits. (A user's write whose sum does not fit traps; a restore from a file skips
    /// the entry instead.)
    @inlinable
    func totalCostCanTake(_ cost: Int) -> Bool { totalCostLimit > 0 || cost <= Int.max - totalCost }

    // MARK: Reading

    /// The hash the index takes of `key` (see `_KeyHash`).
    @inlinable
    @inline(__always)
    func hash(of key: Key) -> Int { _KeyHash.hash(key, seed: seed) }

    /// The slot of `key`, or -1.
    @inlinable
    @inline(__always)
    func slot(of key: Key) -> Int32 {
        index.find(key, hash: hash(of: key), entries: entries).slot
    }

    /// The slot holding `key`, whose hash (`hash(of:)`) is `hash`, or `-1`.
    @inlinable
    @inline(__always)
    func slot(of key: Key, hash: Int) -> Int32 {
        index.find(key, hash: hash, entries: entries).slot
    }

    /// The value for `key`, recording the use with the policy (and, with a time to idle, moving
    /// its deadline; `now` is the time in nanoseconds, or -1 when unknown).
    ///
    /// Expects expired entries to have been removed (`removeExpired(now:removals:)`).
    /// `knownHash`: the key's hash (`hash(of:)`), when the caller took it already.
    @inlinable
    mutating func value(forKey key: Key, hash knownHash: Int? = nil, now: Int64 = -1) -> Value? {
        let slot = self.slot(of: key, hash: knownHash ?? hash(of: key))
        stats.recordRequest(hit: slot >= 0)
        guard slot >= 0 else { return nil }
        policy.didAccess(slot, links: links)
        if let expiry { expiry.pointee.didRead(slot, now: now) }
        return entries[Int(slot)].value
    }

    /// The value for `key`, without telling the policy.
    @inlinable
    func peekValue(forKey key: Key) -> Value? {
        let slot = self.slot(of: key)
        return slot >= 0 ? entries[Int(slot)].value : nil
    }

    /// Calls `body` with each live slot in eviction order (next victim first) until it returns
    /// `false`.
    @inlinable
    func forEachSlotInEvictionOrder(_ body: (Int32) throws -> Bool) rethrows {
        var slot = policy.firstVictim(links: links)
        while slot != -1 {
            let next = policy.victim(after: slot, links: links)
            guard try body(slot) else { return }
            slot = next
        }
    }

    // MARK: Writing

    /// Stores `value` for `key`.
    ///
    /// With `evictInline`, the limits are enforced before returning: for a new key the cache
    /// first makes room for one more entry and for its cost (so a new entry is never its own
    /// victim); a replaced key's new cost evicts others, never it. Without it (an eviction veto is
    /// installed) the owner trims
    /// through `candidates`/`evict` instead. `knownHash`, when given, is `hash(of: key)`.
    @inlinable
    mutating func setValue(
        _ value: Value,
        forKey key: Key,
        hash knownHash: Int? = nil,
        cost: Int,
        now: Int64 = -1,
        timeToLive: Int64? = nil,
        evictInline: Bool,
        removals: inout _Removals<Key, Value>
    ) -> WriteResult.Outcome {
        precondition(cost >= 0, "cost must not be negative (got \(cost))")
        let hash = knownHash ?? self.hash(of: key)
        let found = index.find(key, hash: hash, entries: entries)
        if totalCostLimit > 0 && cost > totalCostLimit {
            if found.slot >= 0 { removals.append(removeSlot(found.slot, reason: .replaced)) }
            // Over the limits only if a veto kept entries and is gone now: they hold again.
            if evictInline { trim(to: limits, protecting: -1, removals: &removals) }
            return .rejected(.costExceedsLimit)
        }
        if found.slot >= 0 {
            let s = Int(found.slot)
            var old = value
            swap(&entries[s].value, &old)  // moves the old value out; nothing is destroyed here
            bumpGeneration(s, by: 2)  // still live: the generation stays odd
            policy.didUpdate(found.slot, links: links)
            if let expiry { expiry.pointee.didWrite(found.slot, now: now, timeToLive: timeToLive) }
            stats.recordRemovals(.replaced)
            removals.append(CacheRemoval(key: entries[s].key, value: old, reason: .replaced))
            if evictInline && totalCostLimit > 0 && totalCost - self.cost(at: found.slot) > totalCostLimit - cost {
                // Room for the new cost first, as for a new key: counted before the others go,
                // a total within the limit could pass Int.max on the way (a limit above half of it).
                setCost(0, at: s)
                trim(
                    to: _TrimTarget(maxCount: .max, maxCost: totalCostLimit - cost),
                    protecting: found.slot,
                    removals: &removals
                )
            }
            setCost(cost, at: s)
            // Over the limits only if a veto kept entries and is gone now: they hold again.
            // (Checked here, inline: calling `trim` to find nothing to do cost every replace
            // about 50 instructions.)
            if evictInline && isOverLimit { trim(to: limits, protecting: found.slot, removals: &removals) }
            return .replaced
        }
        return insertNew(
            value,
            forKey: key,
            hash: hash,
            bucket: found.bucket,
            cost: cost,
            now: now,
            timeToLive: timeToLive,
            evictInline: evictInline,
            removals: &removals
        )
    }

    /// Stores a key the index does not hold; `bucket` is the empty bucket `find` stopped at.
    /// Always inlined (it has two callers): out of line, the call and its spills cost the
    /// simulator's replay 8% more instructions.
    @inlinable
    @inline(__always)
    mutating func insertNew(
        _ value: Value,
        forKey key: Key,
        hash: Int,
        bucket found: Int,
        cost: Int,
        now: Int64 = -1,
        timeToLive: Int64? = nil,
        evictInline: Bool,
        removals: inout _Removals<Key, Value>
    ) -> WriteResult.Outcome {
        var bucket = found
        policy.willInsert(hash: UInt32(truncatingIfNeeded: hash))
        if evictInline && countLimit > 0 && count >= countLimit {
            // Make room for one: the policy's first victims, no target arithmetic per eviction.
            repeat {
                let victim = policy.nextVictim(links: links)
                if victim == -1 { break }
                removals.append(removeSlot(victim, reason: .evictedForCount))
            } while count >= countLimit
            bucket = -1
            warmNextEviction()
        }
        if evictInline && totalCostLimit > 0 && totalCost > totalCostLimit - cost {
            // And room for its cost, before it is linked: a policy picks its victims by its own
            // rules among the others (passing over the new entry afterwards would, for one,
            // leave SIEVE's hand resting on it).
            repeat {
                let victim = policy.nextVictim(links: links)
                if victim == -1 { break }
                removals.append(removeSlot(victim, reason: .evictedForCost))
            } while totalCost > totalCostLimit - cost
            bucket = -1
            warmNextEviction()
        }
        if count >= index.maxLoad {
            growIndex()
            bucket = -1
        }
        if bucket < 0 { bucket = index.emptyBucket(hash: hash) }
        let slot = takeFreeSlot()
        let s = Int(slot)
        (entries + s).initialize(to: _Entry(key: key, value: value))
        if storesHashes { hashes[s] = UInt32(truncatingIfNeeded: hash) }
        if let costs { costs[s] = 0 }
        setCost(cost, at: s)
        bumpGeneration(s)
        index.insert(slot: slot, hash: hash, at: bucket)
        count += 1
        policy.didInsert(slot, links: links)
        if let expiry { expiry.pointee.didWrite(slot, now: now, timeToLive: timeToLive) }
        // No trim for cost here: room was made above (a cost above the limit never gets here).
        return .inserted
    }

    /// Starts loading what the next eviction will touch, after an eviction: the next victim's
    /// index bucket, and the record after it in its list, whose link that eviction rewrites.
    /// Found one after another, each a likely miss of the CPU's caches, these made up much of
    /// a full cache's insert (and with `Cache`'s lock, the unlock waits for every load the
    /// section started). Prefetched now, they arrive while the caller goes on, and a victim
    /// that is read or written meanwhile only wastes the fetch. Its key is read here (for its
    /// hash), from a record that is usually on its way already: the eviction just made it the
    /// list's first member, writing its link.
    ///
    /// The prefetch is a hint to the CPU, not a memory access: it cannot fault and races with
    /// nothing. Only for policies that name their next victim cheaply (`upcomingVictim`).
    @inlinable
    @inline(__always)
    func warmNextEviction() {
        let victim = policy.upcomingVictim(links: links)
        guard victim >= 0 else { return }
        _cachekit_prefetch(index.buckets + (storedHash(victim) & index.mask))
        let after = links.next(victim)
        if after >= 0 { _cachekit_prefetch(links.link(after)) }
    }

    /// Removes the entry for `key`, if any.
    @inlinable
    mutating func removeValue(forKey key: Key, reason: RemovalReason) -> CacheRemoval<Key, Value>? {
        let slot = self.slot(of: key)
        return slot >= 0 ? removeSlot(slot, reason: reason) : nil
    }

    /// Removes every entry that has expired by `now` (nanoseconds; nothing when -1), reason
    /// `.expired`.
    ///
    /// - Complexity: O(1) when nothing has expired; O(1) amortized per entry removed from the
    ///   write queue and the access order, O(log n) per entry with its own `expiresAfter` (from
    ///   the heap).
    @inlinable
    @inline(__always)
    mutating func removeExpired(now: Int64, removals: inout _Removals<Key, Value>) {
        guard let expiry, now >= 0, expiry.pointee.mayHaveExpired(now: now) else { return }
        removeExpiredEntries(now: now, removals: &removals)
    }

    /// The loop of `removeExpired(now:removals:)`, out of line: the check before it runs on
    /// every operation, the loop only when something may have expired.
    @inlinable
    @inline(never)
    mutating func removeExpiredEntries(now: Int64, removals: inout _Removals<Key, Value>) {
        guard let expiry else { return }
        while true {
            let slot = expiry.pointee.nextExpired(now: now)
            if slot == -1 { return }
            removals.append(removeSlot(slot, reason: .expired))
        }
    }

    /// Starts keeping deadlines (for a first per-entry expiry); existing entries never expire.
    @inlinable
    mutating func enableExpiry() {
        guard expiry == nil else { return }
        expiry = Self.boxed(_Expiry(_ExpiryTimes(), capacity: slotCapacity))
    }

    @inlinable
    static func boxed(_ expiry: _Expiry) -> UnsafeMutablePointer<_Expiry> {
        let box = UnsafeMutablePointer<_Expiry>.allocate(capacity: 1)
        box.initialize(to: expiry)
        return box
    }

    /// Takes every entry out at once: the old state is returned whole, to be reported and freed by
    /// the caller after unlocking, so emptying a large cache costs O(1) inside a lock.
    @inlinable
    mutating func takeAll(policy makePolicy: (_ slotCapacity: Int) -> _AnyPolicy) -> _CacheCore {
        var fresh = _CacheCore(
            countLimit: countLimit,
            totalCostLimit: totalCostLimit,
            expiry: expiry?.pointee.times,
            policy: makePolicy
        )
        if generations != nil { fresh.trackGenerations() }
        fresh.epoch = epoch &+ 1
        fresh.stats = stats
        swap(&self, &fresh)
        return fresh
    }
}

/// One slot: its list links, key and value, side by side so a hit touches one record.
@usableFromInline
struct _Entry<Key, Value> {
    /// Set by the policy when the entry is inserted (see `_SlotLinks`).
    @usableFromInline var link: _Link
    @usableFromInline var key: Key
    @usableFromInline var value: Value

    @inlinable
    init(key: Key, value: Value) {
        self.link = _Link(prev: -1, next: -1)
        self.key = key
        self.value = value
    }
}
