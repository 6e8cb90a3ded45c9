import Synchronization

/// Which keys the queued writes of a ``SharedCache`` touch, approximately: a counting filter of
/// key hashes, plus a count of queued writes that may touch any key (bulk operations, limits,
/// purges). A point read looks into the queue (under its lock) only if a queued write may touch
/// its key, so most reads take no lock but the shared one while writes queue.
///
/// Counts go up when a write is queued and down when a drain has applied it, under the exclusive
/// lock, before it is released. A hash collision only costs a look into the queue's index.
@usableFromInline
final class _PendingFilter: @unchecked Sendable {
    // Each element is an atomic; the buffer is allocated once and never moves.
    @usableFromInline let counts: UnsafeMutablePointer<Atomic<Int32>>
    /// `bucketCount - 1`; the bucket count is a power of two.
    @usableFromInline let mask: Int
    /// Queued writes that may touch any key.
    @usableFromInline let bulk = Atomic<Int>(0)

    /// A filter for a cache of `capacity` entries (`0`: unbounded), sized once, at creation.
    ///
    /// Its buckets: twice the capacity, between 4,096 (16 KiB) and 65,536 (256 KiB). A read of
    /// a key no write touches looks into the queue when its bucket is taken, with a few hundred
    /// writes queued (one background drain's worth under a steady 10% of writes) 1–2% of the
    /// time at 65,536 buckets and about 12% at 4,096; each look takes the queue's lock, which the
    /// writing threads take too. A smaller cache needs fewer: when the queue holds a large
    /// share of its keys, reads find their own keys queued about as often as they would find a
    /// collision. (At 50,000 entries on 2 threads, 90% reads, growing the filter from 4,096 to
    /// 65,536 buckets cut the time spent in the queue's lock and index from 5–11% of the run to
    /// about 2%, in profiles.)
    init(capacity: Int) {
        var buckets = 4_096
        while buckets < 65_536 && (capacity == 0 || buckets < 2 * capacity) { buckets *= 2 }
        counts = .allocate(capacity: buckets)
        for index in 0..<buckets { (counts + index).initialize(to: Atomic(0)) }
        mask = buckets - 1
    }

    deinit {
        counts.deinitialize(count: mask + 1)
        counts.deallocate()
    }

    /// How many buckets the filter has.
    @inlinable
    var bucketCount: Int { mask + 1 }

    @inlinable
    func bucket(of key: some Hashable) -> Int { _KeyHash.hash(key) & mask }

    /// Whether a queued write may touch the key whose hash (`_KeyHash`) is `hash`.
    @inlinable
    func mayTouch(hash: Int) -> Bool {
        bulk.load(ordering: .sequentiallyConsistent) > 0
            || counts[hash & mask].load(ordering: .sequentiallyConsistent) > 0
    }

    /// Counts `write` as queued (`delta` 1) or applied (`delta` -1).
    @inlinable
    func count<Key, Value>(_ write: _SharedWrite<Key, Value>, _ delta: Int32) {
        switch write {
        case .set(_, _, _, _, _, let hash):
            counts[hash & mask].wrappingAdd(delta, ordering: .sequentiallyConsistent)
        case .remove(let keys, _) where keys.count <= _SharedWrite<Key, Value>.maxNamedKeys:
            for key in keys { counts[bucket(of: key)].wrappingAdd(delta, ordering: .sequentiallyConsistent) }
        case .access:
            break  // changes no contents
        default:
            bulk.wrappingAdd(Int(delta), ordering: .sequentiallyConsistent)
        }
    }
}
