/// A policy whose state lives behind one pointer, so that `_AnyPolicy` calls it in place.
///
/// `_AnyPolicy` is an enum; calling a mutating method on a payload means taking the payload
/// out and storing it back with its tag, a few loads and stores around every call on the hot
/// path. Every policy keeps its state inline and is boxed with this, so no call writes the enum
/// back.
@usableFromInline
struct _PolicyBox<Policy: _EvictionPolicy>: _EvictionPolicy {
    @usableFromInline let state: UnsafeMutablePointer<Policy>

    @inlinable
    init(_ policy: Policy) {
        state = .allocate(capacity: 1)
        state.initialize(to: policy)
    }

    @inlinable
    func deallocate() {
        state.pointee.deallocate()
        state.deinitialize(count: 1)
        state.deallocate()
    }

    @inlinable
    func reserve(slotCapacity: Int, used: Int) { state.pointee.reserve(slotCapacity: slotCapacity, used: used) }

    @inlinable
    func setCapacity(_ capacity: Int) { state.pointee.setCapacity(capacity) }

    @inlinable
    @inline(__always)
    func willInsert(hash: UInt32) { state.pointee.willInsert(hash: hash) }

    @inlinable
    @inline(__always)
    func didInsert(_ slot: Int32, links: _SlotLinks) { state.pointee.didInsert(slot, links: links) }

    @inlinable
    @inline(__always)
    func didAccess(_ slot: Int32, links: _SlotLinks) { state.pointee.didAccess(slot, links: links) }

    @inlinable
    @inline(__always)
    func didUpdate(_ slot: Int32, links: _SlotLinks) { state.pointee.didUpdate(slot, links: links) }

    @inlinable
    @inline(__always)
    func didRemove(_ slot: Int32, evicted: Bool, links: _SlotLinks) {
        state.pointee.didRemove(slot, evicted: evicted, links: links)
    }

    @inlinable
    func removeAll() { state.pointee.removeAll() }

    @inlinable
    @inline(__always)
    func nextVictim(links: _SlotLinks) -> Int32 { state.pointee.nextVictim(links: links) }

    @inlinable
    @inline(__always)
    func firstVictim(links: _SlotLinks) -> Int32 { state.pointee.firstVictim(links: links) }

    @inlinable
    @inline(__always)
    func victim(after slot: Int32, links: _SlotLinks) -> Int32 { state.pointee.victim(after: slot, links: links) }

    @usableFromInline
    func _checkInvariants(count: Int) { state.pointee._checkInvariants(count: count) }
}
