/// Keys that recently left the cache, remembered by hash only ("ghosts"), in up to two
/// oldest-first lists.
///
/// ARC keeps two (B1 and B2), and moves ghosts between them. (S3-FIFO's single queue is a
/// `_GhostQueue`, which needs no links.) Each
/// ghost is a node holding the key's 32-bit hash and its list links; an open-addressing table maps
/// a hash to its node. Lookup, append, removal of the oldest and removal of any ghost are O(1)
/// (amortized). Two keys with the same 32-bit hash share a ghost: a false "seen before" costs a
/// slightly different placement, never a wrong value.
///
/// Nodes are reused through a free list; the node pool and table double only when more ghosts are
/// alive than ever before, so in steady state nothing is allocated.
@usableFromInline
struct _GhostLists {
    /// Per node: the key hash.
    @usableFromInline var nodeHashes: UnsafeMutablePointer<UInt32>
    /// Per node: links within its list (or the free list).
    @usableFromInline var nodeLinks: UnsafeMutablePointer<_Link>
    /// Per node: which list (0 or 1) holds it.
    @usableFromInline var nodeList: UnsafeMutablePointer<UInt8>
    @usableFromInline var nodeCapacity: Int
    @usableFromInline var nodesUsed: Int32
    @usableFromInline var freeHead: Int32
    /// Hash → node: each bucket holds `hash << 32 | (node + 1)` (`0`: empty), so a probe reads
    /// no node. Linear probing, at most half full.
    @usableFromInline var table: UnsafeMutablePointer<UInt64>
    @usableFromInline var tableMask: Int
    @usableFromInline var lists: (_ListHead, _ListHead)
    @usableFromInline var counts: (Int, Int)

    @inlinable
    init() {
        nodeCapacity = 0
        nodeHashes = .allocate(capacity: 0)
        nodeLinks = .allocate(capacity: 0)
        nodeList = .allocate(capacity: 0)
        nodesUsed = 0
        freeHead = -1
        tableMask = 7
        table = .allocate(capacity: 8)
        table.initialize(repeating: 0, count: 8)
        lists = (_ListHead(), _ListHead())
        counts = (0, 0)
    }

    @inlinable
    func deallocate() {
        nodeHashes.deallocate()
        nodeLinks.deallocate()
        nodeList.deallocate()
        table.deallocate()
    }

    @inlinable
    var links: _SlotLinks { _SlotLinks(nodes: nodeLinks, hashes: nodeHashes) }

    /// The number of ghosts in `list`.
    @inlinable
    func count(_ list: Int) -> Int { list == 0 ? counts.0 : counts.1 }

    /// The node remembering `hash`, or -1.
    @inlinable
    func find(_ hash: UInt32) -> Int32 {
        var b = Int(hash) & tableMask
        while true {
            let entry = table[b]
            if entry == 0 { return -1 }
            if UInt32(truncatingIfNeeded: entry >> 32) == hash { return Self.node(entry) }
            b = (b &+ 1) & tableMask
        }
    }

    @inlinable
    @inline(__always)
    static func node(_ entry: UInt64) -> Int32 { Int32(truncatingIfNeeded: entry & 0xFFFF_FFFF) &- 1 }

    @inlinable
    @inline(__always)
    static func entry(hash: UInt32, node: Int32) -> UInt64 { UInt64(hash) << 32 | UInt64(UInt32(node &+ 1)) }

    /// The list (0 or 1) that holds `node`.
    @inlinable
    func list(of node: Int32) -> Int { Int(nodeList[Int(node)]) }

    /// Remembers `hash` as the newest ghost of `list`; a ghost already holding the hash moves there.
    @inlinable
    mutating func append(_ hash: UInt32, to list: Int) {
        let existing = find(hash)
        if existing != -1 { remove(existing) }
        if freeHead == -1 && Int(nodesUsed) == nodeCapacity { grow() }
        let node: Int32
        if freeHead != -1 {
            node = freeHead
            freeHead = nodeLinks[Int(node)].next
        } else {
            node = nodesUsed
            nodesUsed += 1
        }
        nodeHashes[Int(node)] = hash
        nodeList[Int(node)] = UInt8(list)
        if list == 0 {
            links.pushBack(node, &lists.0)
            counts.0 += 1
        } else {
            links.pushBack(node, &lists.1)
            counts.1 += 1
        }
        var b = Int(hash) & tableMask
        while table[b] != 0 { b = (b &+ 1) & tableMask }
        table[b] = Self.entry(hash: hash, node: node)
    }

    /// Forgets the ghost in `node`.
    @inlinable
    mutating func remove(_ node: Int32) {
        if nodeList[Int(node)] == 0 {
            links.unlink(node, &lists.0)
            counts.0 -= 1
        } else {
            links.unlink(node, &lists.1)
            counts.1 -= 1
        }
        let target = Self.entry(hash: nodeHashes[Int(node)], node: node)
        var b = Int(nodeHashes[Int(node)]) & tableMask
        while table[b] != target { b = (b &+ 1) & tableMask }
        _HashWordTable.deleteBucket(b, in: table, mask: tableMask)
        nodeLinks[Int(node)].next = freeHead
        freeHead = node
    }

    /// Forgets the oldest ghost of `list`, if any.
    @inlinable
    mutating func removeOldest(_ list: Int) {
        let head = list == 0 ? lists.0.head : lists.1.head
        if head != -1 { remove(head) }
    }

    /// Forgets every ghost, keeping the memory.
    @inlinable
    mutating func removeAll() {
        table.update(repeating: 0, count: tableMask + 1)
        nodesUsed = 0
        freeHead = -1
        lists = (_ListHead(), _ListHead())
        counts = (0, 0)
    }

    /// Doubles the node pool and the table (called only when every node is live).
    @usableFromInline
    mutating func grow() {
        let newCapacity = Swift.max(16, nodeCapacity * 2)
        nodeHashes = _GhostLists.resized(nodeHashes, used: Int(nodesUsed), to: newCapacity)
        nodeLinks = _GhostLists.resized(nodeLinks, used: Int(nodesUsed), to: newCapacity)
        nodeList = _GhostLists.resized(nodeList, used: Int(nodesUsed), to: newCapacity)
        nodeCapacity = newCapacity
        let bucketCount = newCapacity * 2
        table.deallocate()
        table = .allocate(capacity: bucketCount)
        table.initialize(repeating: 0, count: bucketCount)
        tableMask = bucketCount - 1
        for node in 0..<nodesUsed {  // every node is live: grow runs only with no free node
            var b = Int(nodeHashes[Int(node)]) & tableMask
            while table[b] != 0 { b = (b &+ 1) & tableMask }
            table[b] = Self.entry(hash: nodeHashes[Int(node)], node: node)
        }
    }

    @usableFromInline
    static func resized<T>(_ old: UnsafeMutablePointer<T>, used: Int, to capacity: Int) -> UnsafeMutablePointer<T> {
        let new = UnsafeMutablePointer<T>.allocate(capacity: capacity)
        new.moveInitialize(from: old, count: used)
        old.deallocate()
        return new
    }
}
