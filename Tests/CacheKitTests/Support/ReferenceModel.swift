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
    }

    let policy: EvictionPolicy
    var countLimit: Int
    var totalCostLimit: Int
    /// Entries in eviction order: the next victim first.
    private(set) var entries: [Entry] = []
    private var clock = 0
    /// What a removal handler should have heard since the last `takeRemovals()`.
    private(set) var removals: [CacheRemoval<Int, Int>] = []

    init(policy: EvictionPolicy, countLimit: Int, totalCostLimit: Int) {
        self.policy = policy
        self.countLimit = countLimit
        self.totalCostLimit = totalCostLimit
    }

    var keys: [Int] { entries.map(\.key) }
    var count: Int { entries.count }
    var totalCost: Int { entries.reduce(0) { $0 + $1.cost } }

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
            let e = entries.remove(at: index)
            entries.append(e)
        case .lfu:
            entries[index].frequency += 1
            entries[index].stamp = tick()
            sortLFU()
        default:
            break
        }
    }

    private mutating func sortLFU() {
        entries.sort { ($0.frequency, $0.stamp) < ($1.frequency, $1.stamp) }
    }

    mutating func value(forKey key: Int) -> Int? {
        guard let i = entries.firstIndex(where: { $0.key == key }) else { return nil }
        let v = entries[i].value
        use(at: i)
        return v
    }

    func peekValue(forKey key: Int) -> Int? { entries.first { $0.key == key }?.value }

    mutating func setValue(_ value: Int, forKey key: Int, cost: Int) -> WriteResult.Outcome {
        let existing = entries.firstIndex { $0.key == key }
        if totalCostLimit > 0 && cost > totalCostLimit {
            if let existing {
                let e = entries.remove(at: existing)
                removals.append(CacheRemoval(key: e.key, value: e.value, reason: .replaced))
            }
            return .rejected(.costExceedsLimit)
        }
        if let existing {
            let old = entries[existing].value
            entries[existing].value = value
            entries[existing].cost = cost
            removals.append(CacheRemoval(key: key, value: old, reason: .replaced))
            use(at: existing)
            trim(maxCount: .max, maxCost: costBound, protecting: key)
            return .replaced
        }
        if countLimit > 0 && entries.count >= countLimit {
            trim(maxCount: countLimit - 1, maxCost: .max, protecting: nil)
        }
        entries.append(Entry(key: key, value: value, cost: cost, frequency: 1, stamp: tick()))
        if policy == .lfu { sortLFU() }
        trim(maxCount: .max, maxCost: costBound, protecting: key)
        return .inserted
    }

    private var countBound: Int { countLimit > 0 ? countLimit : .max }
    private var costBound: Int { totalCostLimit > 0 ? totalCostLimit : .max }

    mutating func removeValue(forKey key: Int) -> Int? {
        guard let i = entries.firstIndex(where: { $0.key == key }) else { return nil }
        let e = entries.remove(at: i)
        removals.append(CacheRemoval(key: e.key, value: e.value, reason: .removed))
        return e.value
    }

    mutating func removeAll() {
        for e in entries { removals.append(CacheRemoval(key: e.key, value: e.value, reason: .removedAll)) }
        entries = []
    }

    mutating func setLimits(countLimit: Int, totalCostLimit: Int) {
        self.countLimit = countLimit
        self.totalCostLimit = totalCostLimit
        trim(maxCount: countBound, maxCost: costBound, protecting: nil)
    }

    mutating func handleMemoryPressure(keeping fraction: Double) {
        let kept = Int((Double(entries.count) * fraction).rounded(.down))
        trim(maxCount: kept, maxCost: .max, protecting: nil, reason: .memoryPressure)
    }

    /// Evicts from the front until within bounds, never `protecting`.
    private mutating func trim(maxCount: Int, maxCost: Int, protecting: Int?, reason: RemovalReason? = nil) {
        var i = 0
        while i < entries.count {
            let why: RemovalReason
            if entries.count > maxCount {
                why = reason ?? .evictedForCount
            } else if totalCost > maxCost {
                why = reason ?? .evictedForCost
            } else {
                return
            }
            if entries[i].key == protecting {
                i += 1
                continue
            }
            let e = entries.remove(at: i)
            removals.append(CacheRemoval(key: e.key, value: e.value, reason: why))
        }
    }
}
