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

/// `prev`/`next` links for every slot, shared by all the lists over one slot array.
///
/// A slot is in at most one list at a time (a policy list, or the engine's free list), so one pair
/// of links per slot serves them all. This is an unowned view: `_CacheCore` allocates and frees the
/// memory. Writes go through the pointers, so the list operations are non-mutating.
@usableFromInline
struct _SlotLinks {
    @usableFromInline var prev: UnsafeMutablePointer<Int32>
    @usableFromInline var next: UnsafeMutablePointer<Int32>

    @inlinable
    init(capacity: Int) {
        prev = .allocate(capacity: capacity)
        next = .allocate(capacity: capacity)
    }

    /// Moves the links into storage of `newCapacity` slots, keeping the first `used` of them.
    @inlinable
    mutating func resize(used: Int, to newCapacity: Int) {
        let newPrev = UnsafeMutablePointer<Int32>.allocate(capacity: newCapacity)
        let newNext = UnsafeMutablePointer<Int32>.allocate(capacity: newCapacity)
        newPrev.update(from: prev, count: used)
        newNext.update(from: next, count: used)
        prev.deallocate()
        next.deallocate()
        prev = newPrev
        next = newNext
    }

    @inlinable
    func deallocate() {
        prev.deallocate()
        next.deallocate()
    }

    /// Appends `slot` at the tail (the newest end) of `list`.
    @inlinable
    func pushBack(_ slot: Int32, _ list: inout _ListHead) {
        prev[Int(slot)] = list.tail
        next[Int(slot)] = -1
        if list.tail == -1 {
            list.head = slot
        } else {
            next[Int(list.tail)] = slot
        }
        list.tail = slot
    }

    /// Takes `slot` out of `list`.
    @inlinable
    func unlink(_ slot: Int32, _ list: inout _ListHead) {
        let p = prev[Int(slot)]
        let n = next[Int(slot)]
        if p == -1 { list.head = n } else { next[Int(p)] = n }
        if n == -1 { list.tail = p } else { prev[Int(n)] = p }
    }

    /// Moves `slot`, already in `list`, to its tail.
    @inlinable
    func moveToBack(_ slot: Int32, _ list: inout _ListHead) {
        guard list.tail != slot else { return }
        unlink(slot, &list)
        pushBack(slot, &list)
    }
}
