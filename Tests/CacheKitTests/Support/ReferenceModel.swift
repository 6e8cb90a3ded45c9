import CacheKit

/// A deliberately simple cache: an array in eviction order, rebuilt by the obvious rules.
/// The real caches must agree with it after every operation, removals included.
struct ReferenceModel {
    struct Entry: Equatable {
        var key: Int
        var value: Int
        var cost: Int
        var frequency: Int
        /// When the entry last changed frequency (LFU) or was used (LRU).
        var stamp: Int
        /// SIEVE: read since the hand last passed.
        var visited = false
    }

    let policy: EvictionPolicy
    var countLimit: Int
    var totalCostLimit: Int
    /// Entries in eviction order for LRU, FIFO and LFU; for SIEVE, the queue oldest first.
    private var store: [Entry] = []
    /// SIEVE: the key the hand rests on (`nil`: the oldest entry).
    private var hand: Int?

    /// Entries in eviction order: the next victim first. For SIEVE, the queue read from the hand
    /// around to the entry before it.
    var entries: [Entry] {
        guard policy == .sieve, let hand, let h = store.firstIndex(where: { $0.key == hand }) else { return store }
        return Array(store[h...] + store[..<h])
    }
    private var clock = 0
    /// What a removal handler should have heard since the last `takeRemovals()`.
    private(set) var removals: [CacheRemoval<Int, Int>] = []

    init(policy: EvictionPolicy, countLimit: Int, totalCostLimit: Int) {
        self.policy = policy
        self.countLimit = countLimit
        self.totalCostLimit = totalCostLimit
    }

    var keys: [Int] { entries.map(\.key) }
    var count: Int { store.count }
    var totalCost: Int { store.reduce(0) { $0 + $1.cost } }

    mutating func takeRemovals() -> [CacheRemoval<Int, Int>] {
        defer { removals = [] }
        return removals
    }

    private mutating func tick() -> Int {
        clock += 1
        return clock
    }

    /// Re-sorts into eviction order after a use of `index`.
    private mutating func use(at index: Int) {
        switch policy {
        case .lru:
            let e = store.remove(at: index)
            store.append(e)
        case .lfu:
            store[index].frequency += 1
            store[index].stamp = tick()
            sortLFU()
        case .sieve:
            store[index].visited = true
        default:
            break
        }
    }

    private mutating func sortLFU() {
        store.sort { ($0.frequency, $0.stamp) < ($1.frequency, $1.stamp) }
    }

    mutating func value(forKey key: Int) -> Int? {
        guard let i = store.firstIndex(where: { $0.key == key }) else { return nil }
        let v = store[i].value
        use(at: i)
        return v
    }

    func peekValue(forKey key: Int) -> Int? { store.first { $0.key == key }?.value }

    mutating func setValue(_ value: Int, forKey key: Int, cost: Int) -> WriteResult.Outcome {
        let existing = store.firstIndex { $0.key == key }
        if totalCostLimit > 0 && cost > totalCostLimit {
            if let existing {
                let e = remove(at: existing)
                removals.append(CacheRemoval(key: e.key, value: e.value, reason: .replaced))
            }
            return .rejected(.costExceedsLimit)
        }
        if let existing {
            let old = store[existing].value
            store[existing].value = value
            store[existing].cost = cost
            removals.append(CacheRemoval(key: key, value: old, reason: .replaced))
            use(at: existing)
            trim(maxCount: .max, maxCost: costBound, protecting: key)
            return .replaced
        }
        if countLimit > 0 && store.count >= countLimit {
            trim(maxCount: countLimit - 1, maxCost: .max, protecting: nil)
        }
        // Room for its cost too, before it joins (it cannot be a victim).
        trim(maxCount: .max, maxCost: costBound - cost, protecting: nil)
        store.append(Entry(key: key, value: value, cost: cost, frequency: 1, stamp: tick()))
        if policy == .lfu { sortLFU() }
        return .inserted
    }

    private var countBound: Int { countLimit > 0 ? countLimit : .max }
    private var costBound: Int { totalCostLimit > 0 ? totalCostLimit : .max }

    mutating func removeValue(forKey key: Int) -> Int? {
        guard let i = store.firstIndex(where: { $0.key == key }) else { return nil }
        let e = remove(at: i)
        removals.append(CacheRemoval(key: e.key, value: e.value, reason: .removed))
        return e.value
    }

    mutating func removeAll() {
        for e in entries { removals.append(CacheRemoval(key: e.key, value: e.value, reason: .removedAll)) }
        store = []
        hand = nil
    }

    mutating func setLimits(countLimit: Int, totalCostLimit: Int) {
        self.countLimit = countLimit
        self.totalCostLimit = totalCostLimit
        trim(maxCount: countBound, maxCost: costBound, protecting: nil)
    }

    mutating func handleMemoryPressure(keeping fraction: Double) {
        let kept = Int((Double(store.count) * fraction).rounded(.down))
        trim(maxCount: kept, maxCost: .max, protecting: nil, reason: .memoryPressure)
    }

    /// Removes the entry at `i` of the store; a SIEVE hand resting on it moves to the next newer.
    private mutating func remove(at i: Int) -> Entry {
        if policy == .sieve, store[i].key == hand { hand = i + 1 < store.count ? store[i + 1].key : nil }
        return store.remove(at: i)
    }

    /// Evicts from the front until within bounds, never `protecting`.
    private mutating func trim(maxCount: Int, maxCost: Int, protecting: Int?, reason: RemovalReason? = nil) {
        if policy == .sieve {
            trimSIEVE(maxCount: maxCount, maxCost: maxCost, protecting: protecting, reason: reason)
            return
        }
        var i = 0
        while i < store.count {
            guard let why = reasonToEvict(maxCount: maxCount, maxCost: maxCost, reason: reason) else { return }
            if store[i].key == protecting {
                i += 1
                continue
            }
            let e = store.remove(at: i)
            removals.append(CacheRemoval(key: e.key, value: e.value, reason: why))
        }
    }

    private func reasonToEvict(maxCount: Int, maxCost: Int, reason: RemovalReason?) -> RemovalReason? {
        if store.count > maxCount { return reason ?? .evictedForCount }
        if totalCost > maxCost { return reason ?? .evictedForCost }
        return nil
    }

    /// SIEVE as the paper states it: from the hand, clear visited entries and move on (wrapping
    /// from the newest to the oldest); evict the first unvisited one; the hand rests there and
    /// moves to the next newer entry when it leaves. The protected entry is passed over.
    private mutating func trimSIEVE(maxCount: Int, maxCost: Int, protecting: Int?, reason: RemovalReason?) {
        while let why = reasonToEvict(maxCount: maxCount, maxCost: maxCost, reason: reason), !store.isEmpty {
            var i = hand.flatMap { h in store.firstIndex { $0.key == h } } ?? 0
            while store[i].visited {
                store[i].visited = false
                i = (i + 1) % store.count
            }
            hand = store[i].key
            if store[i].key == protecting {
                i = (i + 1) % store.count
                if store[i].key == hand { return }
            }
            let e = remove(at: i)
            removals.append(CacheRemoval(key: e.key, value: e.value, reason: why))
        }
    }
}
