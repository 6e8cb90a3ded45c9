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
    /// 4,096 buckets (16 KiB): with a few hundred writes queued, a read of an unwritten key finds
    /// its bucket empty over 90% of the time and takes no lock but the shared one.
    @usableFromInline static let bucketCount = 4_096
    /// Queued writes that may touch any key.
    @usableFromInline let bulk = Atomic<Int>(0)

    init() {
        counts = .allocate(capacity: Self.bucketCount)
        for index in 0..<Self.bucketCount { (counts + index).initialize(to: Atomic(0)) }
    }

    deinit {
        counts.deinitialize(count: Self.bucketCount)
        counts.deallocate()
    }

    @inlinable
    static func bucket(of key: some Hashable) -> Int { key.hashValue & (bucketCount - 1) }

    /// Whether a queued write may touch the key whose `hashValue` is `hash`.
    @inlinable
    func mayTouch(hash: Int) -> Bool {
        bulk.load(ordering: .sequentiallyConsistent) > 0
            || counts[hash & (Self.bucketCount - 1)].load(ordering: .sequentiallyConsistent) > 0
    }

    /// Counts `write` as queued (`delta` 1) or applied (`delta` -1).
    @inlinable
    func count<Key, Value>(_ write: _SharedWrite<Key, Value>, _ delta: Int32) {
        switch write {
        case .set(_, _, _, _, _, let hash):
            counts[hash & (Self.bucketCount - 1)].wrappingAdd(delta, ordering: .sequentiallyConsistent)
        case .remove(let keys) where keys.count <= _SharedWrite<Key, Value>.maxNamedKeys:
            for key in keys { counts[Self.bucket(of: key)].wrappingAdd(delta, ordering: .sequentiallyConsistent) }
        case .access:
            break  // changes no contents
        default:
            bulk.wrappingAdd(Int(delta), ordering: .sequentiallyConsistent)
        }
    }
}
