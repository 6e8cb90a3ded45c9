import Synchronization

/// How far a ``TieredCache``'s memory level can be trusted over an ``InvalidatingCacheStore``: a
/// count of the events that may have made memory copies stale (drops of the whole level,
/// suspensions, resumptions) and whether invalidations are suspended.
///
/// A read or write that fills memory takes a stamp before it reads the store and keeps what it
/// stored only if the stamp is still current after storing; otherwise it removes its copy. An
/// event first advances the count, then drops memory. Whichever of the two comes second removes
/// the copy, so no copy from before an event outlives it.
final class Coherence: Sendable {
    /// `count << 1 | suspended`. Starts suspended: the store's first call says otherwise.
    private let word = Atomic<UInt64>(1)
    private let invalidated = Atomic<Int>(0)
    private let suspensions = Atomic<Int>(0)

    /// The current stamp.
    var stamp: UInt64 { word.load(ordering: .sequentiallyConsistent) }

    /// Whether memory may keep what a read or write that took `stamp` stored.
    func isCurrent(_ stamp: UInt64) -> Bool {
        stamp & 1 == 0 && word.load(ordering: .sequentiallyConsistent) == stamp
    }

    var isSuspended: Bool { stamp & 1 == 1 }
    var invalidationCount: Int { invalidated.load(ordering: .sequentiallyConsistent) }
    var suspensionCount: Int { suspensions.load(ordering: .sequentiallyConsistent) }

    /// Advances the count, leaving the suspended bit as `suspended` says (`nil`: as it is).
    func advance(suspended: Bool? = nil) {
        var old = word.load(ordering: .sequentiallyConsistent)
        while true {
            let bit = suspended.map { $0 ? UInt64(1) : 0 } ?? (old & 1)
            let new = ((old >> 1) &+ 1) << 1 | bit
            let (exchanged, original) = word.compareExchange(
                expected: old,
                desired: new,
                ordering: .sequentiallyConsistent
            )
            if exchanged { return }
            old = original
        }
    }

    /// Applies `event` to `memory`. Called by the store with no lock held.
    func apply<Key, Value>(
        _ event: CacheStoreInvalidation,
        to memory: Cache<Key, Value>,
        decode: (@Sendable (String) -> Key?)?
    ) {
        switch event {
        case .entries(let storeKeys):
            // Counted once done, so that a reader of the count sees its effect.
            defer { invalidated.add(storeKeys.count, ordering: .sequentiallyConsistent) }
            guard let decode else {
                // Without a way back from store keys to keys, any change may be to any entry.
                advance()
                memory.removeAll()
                return
            }
            // A removal also detaches a load of the key in flight, so the load keeps nothing.
            // A store key that decodes to no key names no entry of this cache.
            for storeKey in storeKeys {
                if let key = decode(storeKey) { memory.removeValue(forKey: key) }
            }
        case .all:
            advance()
            memory.removeAll()
        case .suspended:
            // A cache starts suspended: only a change from resumed is a suspension to count.
            let wasSuspended = isSuspended
            advance(suspended: true)
            memory.removeAll()
            if !wasSuspended { suspensions.add(1, ordering: .sequentiallyConsistent) }
        case .resumed:
            advance(suspended: false)
        }
    }
}

extension TieredCache {
    /// Whether the memory level is bypassed: the store's invalidations are suspended (its
    /// connection for them is down), so reads go to the store and memory keeps nothing until
    /// they resume. Always `false` over a store that is not an ``InvalidatingCacheStore``.
    public var isMemoryBypassed: Bool { coherence?.isSuspended ?? false }

    /// The stamp a read or write that may fill memory takes first; `nil` without coherence.
    func coherenceStamp() -> UInt64? { coherence?.stamp }

    /// Whether memory may keep a copy stored under `stamp` (`nil`: always).
    func mayKeep(_ stamp: UInt64?) -> Bool {
        guard let stamp, let coherence else { return true }
        return coherence.isCurrent(stamp)
    }

    /// After storing `key` in memory under `stamp`: removes the copy if an event came since.
    func dropIfStale(_ key: Key, stamp: UInt64?) {
        guard !mayKeep(stamp) else { return }
        memory.removeValue(forKey: key)
    }
}
