/// First in, first out: entries leave in insertion order; reads and value updates change nothing.
@usableFromInline
struct _FIFOPolicy: _EvictionPolicy {
    @usableFromInline var list = _ListHead()

    @inlinable
    init() {}

    @inlinable
    @inline(__always)
    mutating func didInsert(_ slot: Int32, links: _SlotLinks) { links.pushBack(slot, &list) }

    @inlinable
    @inline(__always)
    mutating func didAccess(_ slot: Int32, links: _SlotLinks) {}

    @inlinable
    @inline(__always)
    mutating func didUpdate(_ slot: Int32, links: _SlotLinks) {}

    @inlinable
    @inline(__always)
    mutating func didRemove(_ slot: Int32, evicted: Bool, links: _SlotLinks) { links.unlink(slot, &list) }

    @inlinable
    mutating func removeAll() { list = _ListHead() }

    @inlinable
    @inline(__always)
    mutating func nextVictim(links: _SlotLinks) -> Int32 { firstVictim(links: links) }

    @inlinable
    @inline(__always)
    func firstVictim(links: _SlotLinks) -> Int32 { list.head }

    @inlinable
    @inline(__always)
    func victim(after slot: Int32, links: _SlotLinks) -> Int32 { links.next(slot) }

}
