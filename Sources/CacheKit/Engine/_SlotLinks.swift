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
/// of links per slot serves them all. The links live inside the slot records themselves (the
/// `link` field of `_Entry`), so a hit that reads an entry has that entry's links in the same
/// cache line; this view addresses them by base pointer and record stride. It is unowned: the
/// engine owns the records. Writes go through the pointer, so the list operations are
/// non-mutating. A freed slot's key and value are deinitialized but its link stays usable: the
/// free list runs through it.
@usableFromInline
struct _SlotLinks {
    /// The address of slot 0's link.
    @usableFromInline var base: UnsafeMutableRawPointer
    /// Bytes from one slot's link to the next.
    @usableFromInline var stride: Int
    /// Each slot's key hash (truncated), for policies that remember keys after they leave
    /// (ghosts) or count them (a frequency sketch).
    @usableFromInline var hashes: UnsafeMutablePointer<UInt32>

    @inlinable
    init<Key, Value>(_ entries: UnsafeMutablePointer<_Entry<Key, Value>>, hashes: UnsafeMutablePointer<UInt32>) {
        base = UnsafeMutableRawPointer(entries) + MemoryLayout<_Entry<Key, Value>>.offset(of: \.link)!
        stride = MemoryLayout<_Entry<Key, Value>>.stride
        self.hashes = hashes
    }

    /// Links over a plain array of `_Link`s (a policy's own nodes), with `hashes` beside them.
    @inlinable
    init(nodes: UnsafeMutablePointer<_Link>, hashes: UnsafeMutablePointer<UInt32>) {
        base = UnsafeMutableRawPointer(nodes)
        stride = MemoryLayout<_Link>.stride
        self.hashes = hashes
    }

    /// The key hash of the entry in `slot`.
    @inlinable
    @inline(__always)
    func hash(_ slot: Int32) -> UInt32 { hashes[Int(slot)] }

    /// The slot before `slot` in its list, or -1.
    @inlinable
    @inline(__always)
    func prev(_ slot: Int32) -> Int32 { link(slot).pointee.prev }

    @inlinable
    @inline(__always)
    func link(_ slot: Int32) -> UnsafeMutablePointer<_Link> {
        (base + Int(slot) &* stride).assumingMemoryBound(to: _Link.self)
    }

    /// The slot after `slot` in its list, or -1.
    @inlinable
    @inline(__always)
    func next(_ slot: Int32) -> Int32 { link(slot).pointee.next }

    /// Sets the slot after `slot` (for singly linked use, like the free list).
    @inlinable
    @inline(__always)
    func setNext(_ slot: Int32, _ next: Int32) { link(slot).pointee.next = next }

    /// Appends `slot` at the tail (the newest end) of `list`.
    @inlinable
    @inline(__always)
    func pushBack(_ slot: Int32, _ list: inout _ListHead) {
        link(slot).pointee = _Link(prev: list.tail, next: -1)
        if list.tail == -1 {
            list.head = slot
        } else {
            link(list.tail).pointee.next = slot
        }
        list.tail = slot
    }

    /// Takes `slot` out of `list`.
    @inlinable
    @inline(__always)
    func unlink(_ slot: Int32, _ list: inout _ListHead) {
        let l = link(slot).pointee
        if l.prev == -1 { list.head = l.next } else { link(l.prev).pointee.next = l.next }
        if l.next == -1 { list.tail = l.prev } else { link(l.next).pointee.prev = l.prev }
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
