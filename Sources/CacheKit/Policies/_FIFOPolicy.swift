/// First in, first out: entries leave in insertion order; reads and value updates change nothing.
@usableFromInline
struct _FIFOPolicy: _EvictionPolicy {
    @usableFromInline var list = _ListHead()

    @inlinable
    init() {}

    @inlinable
    mutating func reserve(slotCapacity: Int, used: Int) {}

    @inlinable
    mutating func didInsert(_ slot: Int32, links: _SlotLinks) { links.pushBack(slot, &list) }

    @inlinable
    mutating func didAccess(_ slot: Int32, links: _SlotLinks) {}

    @inlinable
    mutating func didUpdate(_ slot: Int32, links: _SlotLinks) {}

    @inlinable
    mutating func didRemove(_ slot: Int32, links: _SlotLinks) { links.unlink(slot, &list) }

    @inlinable
    mutating func removeAll() { list = _ListHead() }

    @inlinable
    func firstVictim(links: _SlotLinks) -> Int32 { list.head }

    @inlinable
    func victim(after slot: Int32, links: _SlotLinks) -> Int32 { links.next(slot) }

    @inlinable
    func deallocate() {}
}
