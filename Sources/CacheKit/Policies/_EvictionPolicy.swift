/// An eviction policy: decides the order in which slots leave, seeing only slot numbers.
///
/// A policy never sees a key or a value. The engine tells it what happened to a slot and asks it
/// for victims; the per-slot `prev`/`next` links are shared with the engine (a slot is in one
/// list at a time) and passed in. A policy that owns memory frees it in `deallocate()`, which the
/// engine calls exactly once.
///
/// Every operation must be O(1) (amortized) and allocate nothing, except `reserve`.
@usableFromInline
protocol _EvictionPolicy {
    /// Makes room for per-slot metadata of `slotCapacity` slots (the first `used` are in use).
    mutating func reserve(slotCapacity: Int, used: Int)
    /// The cache's `countLimit` is now `capacity` (`0`: no count limit; size by resident count).
    /// Called once at creation and on every change.
    mutating func setCapacity(_ capacity: Int)
    /// A new key with this hash is about to be stored: called before the cache makes room for
    /// it, so a policy with ghosts can adapt its next victim choice to it.
    mutating func willInsert(hash: UInt32)
    /// A new entry was stored in `slot` (its hash is `links.hash(slot)`).
    mutating func didInsert(_ slot: Int32, links: _SlotLinks)
    /// The entry in `slot` was read.
    mutating func didAccess(_ slot: Int32, links: _SlotLinks)
    /// The entry in `slot` got a new value for the same key.
    mutating func didUpdate(_ slot: Int32, links: _SlotLinks)
    /// The entry in `slot` left the cache: `evicted` when the cache chose it (an eviction),
    /// not when a caller removed or replaced it.
    mutating func didRemove(_ slot: Int32, evicted: Bool, links: _SlotLinks)
    /// Every entry left; forget all state.
    mutating func removeAll()
    /// The slot to evict now, or `-1` when empty. May update the policy's state (SIEVE moves its
    /// hand); called only when an eviction follows.
    mutating func nextVictim(links: _SlotLinks) -> Int32
    /// The slot that would be evicted first, without changing anything; `-1` when empty.
    func firstVictim(links: _SlotLinks) -> Int32
    /// The slot to evict after `slot` (if `slot` stays), or `-1`.
    func victim(after slot: Int32, links: _SlotLinks) -> Int32
    /// Frees memory the policy owns.
    func deallocate()
    /// Checks the policy's own state against the cache's `count` entries, trapping on a
    /// disagreement. O(n); for invariant checks.
    func _checkInvariants(count: Int)
}

// What a policy without per-slot metadata, ghosts, a capacity-dependent structure or memory of
// its own does: nothing. Each policy implements only what it needs.
extension _EvictionPolicy {
    @inlinable
    mutating func reserve(slotCapacity: Int, used: Int) {}

    @inlinable
    mutating func setCapacity(_ capacity: Int) {}

    @inlinable
    @inline(__always)
    mutating func willInsert(hash: UInt32) {}

    @inlinable
    func deallocate() {}

    /// Policies whose only state is their lists: the engine's checks walk those already.
    @usableFromInline
    func _checkInvariants(count: Int) {}
}
