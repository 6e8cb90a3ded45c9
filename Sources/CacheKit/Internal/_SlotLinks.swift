/// The head and tail of one index-linked list of slots; `-1` marks "none".
///
/// The head is the end that is evicted first; the tail holds the newest member.
@usableFromInline
struct _ListHead: Sendable {
    @usableFromInline var head: Int32
    @usableFromInline var tail: Int32

    @inlinable
    init() {
        self.head = -1
        self.tail = -1
    }

    @inlinable
    var isEmpty: Bool { head == -1 }
}

/// One slot's neighbours. Kept side by side so an unlink touches one cache line per slot.
@usableFromInline
struct _Link {
    @usableFromInline var prev: Int32
    @usableFromInline var next: Int32

    @inlinable
    init(prev: Int32, next: Int32) {
        self.prev = prev
        self.next = next
    }
}

/// `prev`/`next` links for every slot, shared by all the lists over one slot array.
///
/// A slot is in at most one list at a time (a policy list, or the engine's free list), so one pair
/// of links per slot serves them all. This is an unowned view: `_CacheCore` allocates and frees the
/// memory. Writes go through the pointer, so the list operations are non-mutating.
@usableFromInline
struct _SlotLinks {
    @usableFromInline var links: UnsafeMutablePointer<_Link>

    @inlinable
    init(capacity: Int) {
        links = _SlotMemory.allocate(_Link.self, capacity: capacity)
    }

    /// Moves the links into storage of `newCapacity` slots, keeping the first `used` of them.
    @inlinable
    mutating func resize(used: Int, to newCapacity: Int) {
        let newLinks = _SlotMemory.allocate(_Link.self, capacity: newCapacity)
        newLinks.moveInitialize(from: links, count: used)
        _SlotMemory.deallocate(links)
        links = newLinks
    }

    @inlinable
    func deallocate() { _SlotMemory.deallocate(links) }

    /// The slot after `slot` in its list, or -1.
    @inlinable
    @inline(__always)
    func next(_ slot: Int32) -> Int32 { links[Int(slot)].next }

    /// Sets the slot after `slot` (for singly linked use, like the free list).
    @inlinable
    @inline(__always)
    func setNext(_ slot: Int32, _ next: Int32) { links[Int(slot)].next = next }

    /// Appends `slot` at the tail (the newest end) of `list`.
    @inlinable
    @inline(__always)
    func pushBack(_ slot: Int32, _ list: inout _ListHead) {
        links[Int(slot)] = _Link(prev: list.tail, next: -1)
        if list.tail == -1 {
            list.head = slot
        } else {
            links[Int(list.tail)].next = slot
        }
        list.tail = slot
    }

    /// Takes `slot` out of `list`.
    @inlinable
    @inline(__always)
    func unlink(_ slot: Int32, _ list: inout _ListHead) {
        let link = links[Int(slot)]
        if link.prev == -1 { list.head = link.next } else { links[Int(link.prev)].next = link.next }
        if link.next == -1 { list.tail = link.prev } else { links[Int(link.next)].prev = link.prev }
    }

    /// Moves `slot`, already in `list`, to its tail.
    @inlinable
    @inline(__always)
    func moveToBack(_ slot: Int32, _ list: inout _ListHead) {
        guard list.tail != slot else { return }
        unlink(slot, &list)
        pushBack(slot, &list)
    }
}
