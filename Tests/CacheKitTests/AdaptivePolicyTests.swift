import Testing

@testable import CacheKit

/// ARC, S3-FIFO and W-TinyLFU against plainly written references of their papers' rules (arrays
/// of keys, no links), request by request: the same hits, the same resident keys, and the
/// invariants each paper states.
@Suite("Adaptive policies")
struct AdaptivePolicyTests {
    /// Random requests with a skew (some keys much hotter), scans and loops mixed in.
    static func requests(seed: UInt64, count: Int, keySpace: Int) -> [Int] {
        var rng = SeededGenerator(seed: seed)
        var keys: [Int] = []
        while keys.count < count {
            switch Int.random(in: 0..<10, using: &rng) {
            case 0:  // a short scan of fresh keys
                let start = Int.random(in: 0..<keySpace * 4, using: &rng)
                keys += (start..<start + 12).map { $0 + keySpace }
            case 1:  // a loop over a few keys
                let start = Int.random(in: 0..<keySpace, using: &rng)
                for _ in 0..<3 { keys += (start..<start + 6) }
            default:  // skewed: squaring favours small keys
                let u = Double.random(in: 0..<1, using: &rng)
                keys.append(Int(u * u * Double(keySpace)))
            }
        }
        return keys
    }

    /// Replays `keys` through a `SerialCache` and through `reference`, step by step.
    func compare<R: ReferencePolicy>(
        _ policy: EvictionPolicy,
        _ makeReference: (Int) -> R,
        sizes: [Int] = [1, 2, 5, 10, 40]
    ) {
        for size in sizes {
            for seed in modelSeeds(default: 4) {
                let cache = SerialCache<Int, Int>(countLimit: size, policy: policy)
                var reference = makeReference(size)
                let keys = Self.requests(seed: seed &* 31 &+ UInt64(size), count: 3_000, keySpace: 60)
                for (step, key) in keys.enumerated() {
                    let hit = cache.value(forKey: key) != nil
                    if !hit { cache.setValue(step, forKey: key) }
                    let referenceHit = reference.access(key)
                    let context = Comment(rawValue: "\(policy) size \(size) seed \(seed) step \(step) key \(key)")
                    #expect(hit == referenceHit, context)
                    #expect(Set(cache.keys) == reference.residents, context)
                    reference.checkInvariants(context)
                    if hit != referenceHit || Set(cache.keys) != reference.residents { return }
                }
                cache._checkInvariants()
            }
        }
    }

    /// Hits of `keys` replayed through `cache` (a miss stores the key).
    static func hits(_ keys: [Int], _ cache: SerialCache<Int, Int>, cost: Int = 0) -> Int {
        var hits = 0
        for (step, key) in keys.enumerated() {
            if cache.value(forKey: key) != nil { hits += 1 } else { cache.setValue(step, forKey: key, cost: cost) }
        }
        cache._checkInvariants()
        return hits
    }

    @Test(
        "an eviction veto that approves everything leaves each policy's algorithm running",
        arguments: EvictionPolicy.allCases
    )
    func approvingVetoKeepsThePolicy(policy: EvictionPolicy) {
        // Skewed requests, and a loop over 1.5x the capacity, which only the scan-resistant
        // policies hit: before, a veto turned SIEVE into FIFO, and W-TinyLFU on the loop to 0 hits.
        let skewed = Self.requests(seed: 7, count: 20_000, keySpace: 400)
        let loop = (0..<40).flatMap { _ in 0..<150 }
        for keys in [skewed, loop] {
            let plain = Self.hits(keys, SerialCache(countLimit: 100, policy: policy))
            let vetoed = SerialCache<Int, Int>(countLimit: 100, policy: policy)
            vetoed.evictionVeto = { _, _, _ in true }
            let withVeto = Self.hits(keys, vetoed)
            #expect(
                Double(withVeto) >= 0.9 * Double(plain),
                "\(policy): \(withVeto) hits with the veto, \(plain) without"
            )
        }
    }

    @Test(
        "a cost limit of N with cost 1 evicts as a count limit of N does",
        arguments: [EvictionPolicy.lru, .fifo, .lfu, .sieve]
    )
    func costLimitEvictsLikeCountLimit(policy: EvictionPolicy) {
        // Before, SIEVE passed over the just-written entry with its hand left on it, evicting
        // each new key on the next write.
        let keys = Self.requests(seed: 3, count: 20_000, keySpace: 400)
        let byCount = SerialCache<Int, Int>(countLimit: 100, policy: policy)
        let byCost = SerialCache<Int, Int>(totalCostLimit: 100, policy: policy)
        let countLog = RemovalLog<Int, Int>()
        let costLog = RemovalLog<Int, Int>()
        byCount.removalHandler = countLog.append
        byCost.removalHandler = costLog.append
        #expect(Self.hits(keys, byCount) == Self.hits(keys, byCost, cost: 1))
        #expect(countLog.all.map(\.key) == costLog.all.map(\.key))
        #expect(Set(byCount.keys) == Set(byCost.keys))
    }

    @Test("after a raised limit, S3-FIFO fills its main queue again; ARC keeps its target within the capacity")
    func limitChanges() {
        let s3 = SerialCache<Int, Int>(countLimit: 10, policy: .s3fifo)
        for key in 0..<100 { s3[key] = key }
        s3.countLimit = 1_000
        for key in 100..<1_090 { s3[key] = key }
        let small = s3._withState { state -> Int? in
            guard case .s3fifo(let policy) = state.core.policy else { return nil }
            return policy.state.pointee.smallCount
        }
        // Before, every key after the raise went to the small queue: 991 of 1,000.
        #expect(small.map { $0 <= 100 } == true, "small queue: \(String(describing: small))")

        let arc = SerialCache<Int, Int>(countLimit: 100, policy: .arc)
        // Ghost hits in B1 raise the target: scans of new keys, then their return.
        // Keys used twice (into T2), a scan that pushes T1's oldest into B1, and the scan's keys
        // again: hits in B1 raise the target.
        _ = Self.hits(Array(0..<60) + Array(0..<60) + Array(1_000..<1_100) + Array(1_000..<1_050), arc)
        let raised = arc._withState { state -> Double? in
            guard case .arc(let policy) = state.core.policy else { return nil }
            return policy.state.pointee.target
        }
        #expect(raised.map { $0 > 10 } == true, "the workload must raise the target: \(String(describing: raised))")
        arc.countLimit = 10
        let target = arc._withState { state -> Double? in
            guard case .arc(let policy) = state.core.policy else { return nil }
            return policy.state.pointee.target
        }
        #expect(target.map { $0 <= 10 } == true, "\(String(describing: target))")
        arc._checkInvariants()
    }

    @Test("W-TinyLFU keeps what its hill climber learned when the same limit is set again")
    func sameLimitKeepsTheWindow() {
        let cache = SerialCache<Int, Int>(countLimit: 100, policy: .wTinyLFU)
        _ = Self.hits(Self.requests(seed: 5, count: 5_000, keySpace: 400), cache)
        func window() -> Int? {
            cache._withState { state -> Int? in
                guard case .wtinylfu(let policy) = state.core.policy else { return nil }
                return policy.state.pointee.windowMax
            }
        }
        // What the climber may have learned (set directly: whether a given workload moves the
        // window depends on the process's hash seed, through the sketch).
        cache._withState { state in
            guard case .wtinylfu(let policy) = state.core.policy else { return }
            policy.state.pointee.windowMax = 17
        }
        cache.countLimit = 100
        #expect(window() == 17)
        cache.countLimit = 200
        #expect(window() == 2)  // a new limit starts afresh: 1% of 200
        cache._checkInvariants()
    }

    @Test("ARC matches the paper's algorithm request by request")
    func arc() { compare(.arc, ARCReference.init) }

    @Test("S3-FIFO matches the paper's algorithm request by request")
    func s3fifo() { compare(.s3fifo, S3FIFOReference.init) }

    @Test("W-TinyLFU matches a plain window + SLRU + sketch, hill climbing included")
    func wTinyLFU() { compare(.wTinyLFU, WTinyLFUReference.init, sizes: [1, 2, 5, 10, 40, 100]) }

    @Test("the frequency sketch never undercounts before aging, caps at 15, and ages by halving")
    func sketch() {
        var sketch = _FrequencySketch(capacity: 64)
        defer { sketch.deallocate() }
        var truth: [UInt32: Int] = [:]
        var rng = SeededGenerator(seed: 9)
        for _ in 0..<150 {  // below the sample size (160): no aging yet
            let h = UInt32.random(in: 0..<100, using: &rng) &* 2_654_435_761
            sketch.increment(h)
            truth[h, default: 0] += 1
        }
        for (h, n) in truth { #expect(sketch.frequency(h) >= Swift.min(n, 15)) }
        #expect(truth.keys.allSatisfy { sketch.frequency($0) <= 15 })
        let before = truth.keys.map { sketch.frequency($0) }
        sketch.age()
        let after = truth.keys.map { sketch.frequency($0) }
        for (b, a) in zip(before, after) { #expect(a == b / 2) }
    }

    @Test("the sketch keeps a key's four counters in one 64-byte block, at the block's start")
    func sketchBlocks() {
        var sketch = _FrequencySketch(capacity: 1_000)
        defer { sketch.deallocate() }
        let words = sketch.wordCount
        var rng = SeededGenerator(seed: 25)
        for _ in 0..<2_000 {  // below the sample size (10,000): no aging, which changes every word
            let h = UInt32.random(in: 0...UInt32.max, using: &rng)
            let before = Array(UnsafeBufferPointer(start: sketch.table, count: words))
            let (block, _) = sketch.place(h)
            #expect(block % 8 == 0 && block + 8 <= words)
            sketch.increment(h)
            let changed = (0..<words).filter { sketch.table[$0] != before[$0] }
            // Up to four words change (fewer when two rows share a word or a counter is full),
            // all inside the key's block: one cache line.
            #expect(changed.count <= 4)
            #expect(changed.allSatisfy { $0 >= block && $0 < block + 8 }, "hash \(h): words \(changed)")
        }
    }

    @Test(
        "W-TinyLFU sizes its sketch by what the cache holds when the limit is large, and keeps counting through growth"
    )
    func sketchGrowsWithTheCache() {
        func sketch(_ cache: SerialCache<Int, Int>) -> (words: Int, frequency: (Int) -> Int) {
            cache._withState { state in
                guard case .wtinylfu(let p) = state.core.policy else { preconditionFailure("not W-TinyLFU") }
                let words = p.state.pointee.sketch.wordCount
                return (words, { p.frequency(UInt32(truncatingIfNeeded: _KeyHash.hash($0))) })
            }
        }
        let eager = _WTinyLFUPolicy.eagerSketchEntries
        // A small limit: the whole sketch at once, as before.
        #expect(sketch(SerialCache(countLimit: 1_000, policy: .wTinyLFU)).words == 1_024)
        // A huge limit: 512 KiB, not 512 MiB, until the cache holds more.
        let cache = SerialCache<Int, Int>(countLimit: .max, policy: .wTinyLFU)
        #expect(sketch(cache).words == eager)
        for key in 0..<eager { cache[key] = key }
        #expect(sketch(cache).words == eager)
        cache[eager] = eager  // one more than the sketch holds: it doubles
        #expect(sketch(cache).words == 2 * eager)
        // The grown sketch counted every resident entry once; new uses count from there.
        let grown = sketch(cache)
        #expect((0...eager).allSatisfy { grown.frequency($0) >= 1 })
        _ = cache[7]
        #expect(grown.frequency(7) >= 2)
        for key in eager + 1..<3 * eager { cache[key] = key }
        #expect(sketch(cache).words == 4 * eager)
        // A limit between the two: the sketch stops growing at the limit.
        let bounded = SerialCache<Int, Int>(countLimit: eager + 10, policy: .wTinyLFU)
        for key in 0..<3 * eager { bounded[key] = key }
        #expect(sketch(bounded).words == 2 * eager && bounded.count == eager + 10)
        cache._checkInvariants()
        bounded._checkInvariants()
    }

    @Test("W-TinyLFU with no count limit holds no sketch until it first evicts, then counts what it holds")
    func sketchWaitsForTheFirstEviction() {
        func sketch(_ cache: SerialCache<Int, Int>) -> (words: Int, frequency: (Int) -> Int) {
            cache._withState { state in
                guard case .wtinylfu(let p) = state.core.policy else { preconditionFailure("not W-TinyLFU") }
                let words = p.state.pointee.sketch.wordCount
                return (words, { p.frequency(UInt32(truncatingIfNeeded: _KeyHash.hash($0))) })
            }
        }
        // No limit: nothing is ever evicted, so no contest needs counts.
        let unbounded = SerialCache<Int, Int>(policy: .wTinyLFU)
        for key in 0..<10_000 { unbounded[key] = key }
        for key in 0..<100 { _ = unbounded[key] }
        #expect(sketch(unbounded).words == 8)
        // A cost limit evicts: at the first eviction the sketch is sized for the resident entries
        // and has counted each of them once.
        let byCost = SerialCache<Int, Int>(totalCostLimit: 1_000, policy: .wTinyLFU)
        for key in 0..<1_000 { byCost.setValue(key, forKey: key, cost: 1) }
        #expect(sketch(byCost).words == 8)
        byCost.setValue(1_000, forKey: 1_000, cost: 1)
        let started = sketch(byCost)
        #expect(started.words >= 1_000)
        #expect((1...1_000).filter { byCost.peekValue(forKey: $0) != nil }.allSatisfy { started.frequency($0) >= 1 })
        // A count limit sizes the sketch at once.
        unbounded.countLimit = 5_000
        #expect(sketch(unbounded).words == 8_192)
        unbounded._checkInvariants()
        byCost._checkInvariants()
    }

    @Test("S3-FIFO's ghost queue matches a plain array under appends, removals and limit changes")
    func ghostQueue() {
        var ghosts = _GhostQueue()
        defer { ghosts.deallocate() }
        var model: [UInt32] = []
        var rng = SeededGenerator(seed: 0x6405_7)
        var limit = 40
        for step in 0..<40_000 {
            let hash = UInt32.random(in: 0..<300, using: &rng) &* 2_654_435_761
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<4:
                let wasThere = model.firstIndex(of: hash).map { model.remove(at: $0) } != nil
                #expect(ghosts.remove(hash) == wasThere, "step \(step)")
            case 4:
                limit = Int.random(in: 0...120, using: &rng)
                model.removeAll { $0 == hash }
                model.append(hash)
                while model.count > limit { model.removeFirst() }
                ghosts.append(hash, limit: limit)
            default:
                model.removeAll { $0 == hash }
                model.append(hash)
                while model.count > limit { model.removeFirst() }
                ghosts.append(hash, limit: limit)
            }
            #expect(ghosts.count == model.count, "step \(step)")
            // Every step: a rebuild (when the ring fills) must keep the order exactly.
            #expect(ghosts.hashesOldestFirst() == model, "step \(step): the queue's order")
            if step % 50 == 0 { ghosts._checkInvariants() }
        }
        #expect(ghosts.ringMask + 1 <= 4 * 128, "the ring stays within four slots per live ghost")
    }

    @Test(
        "the adaptive policies keep limits, values and removal reports right under random operations",
        arguments: CacheKind.allCases
    )
    func randomOperations(kind: CacheKind) {
        for policy in [EvictionPolicy.arc, .s3fifo, .wTinyLFU] {
            for seed in modelSeeds(default: 4) {
                randomOperations(kind: kind, policy: policy, seed: seed)
            }
        }
    }

    private func randomOperations(kind: CacheKind, policy: EvictionPolicy, seed: UInt64) {
        var rng = SeededGenerator(seed: seed &* 104_729)
        let countLimit = [1, 5, 20, 0][Int(seed % 4)]
        let costLimit = seed % 2 == 0 ? 60 : 0
        let cache = kind.make(Int.self, Int.self, countLimit: countLimit, totalCostLimit: costLimit, policy: policy)
        let log = RemovalLog<Int, Int>()
        cache.onRemoval { log.append($0) }
        var model: [Int: (value: Int, cost: Int)] = [:]
        for step in 0..<3_000 {
            let key = Int.random(in: 0..<40, using: &rng)
            let op = Int.random(in: 0..<100, using: &rng)
            let context = Comment(rawValue: "\(kind) \(policy) seed \(seed) step \(step) op \(op) key \(key)")
            var written: Int?
            switch op {
            case 0..<40:
                #expect(cache.value(forKey: key) == model[key]?.value, context)
            case 40..<85:
                let cost = costLimit > 0 ? Int.random(in: 0...20, using: &rng) : 0
                let result = cache.setValue(step, forKey: key, cost: cost)
                #expect(result.outcome == (model[key] == nil ? .inserted : .replaced), context)
                if let old = model[key] {
                    // The replaced value is reported first, then any evictions for cost.
                    let first = log.all.first
                    #expect(first == CacheRemoval(key: key, value: old.value, reason: .replaced), context)
                    if first?.reason == .replaced { log.dropFirst() }
                }
                model[key] = (step, cost)
                written = key
            case 85..<95:
                #expect(cache.removeValue(forKey: key) == model.removeValue(forKey: key)?.value, context)
                _ = log.take()
            case 95..<98:
                cache.handleMemoryPressure()
            default:
                cache.removeAll()
                model = [:]
                _ = log.take()
            }
            for removal in log.take() {
                #expect(removal.reason.isEviction, context)
                #expect(removal.key != written, "an entry written is never its own victim; \(context)")
                #expect(model.removeValue(forKey: removal.key)?.value == removal.value, context)
            }
            #expect(cache.count == model.count, context)
            #expect(Set(cache.keys) == Set(model.keys), context)
            #expect(cache.totalCost == model.values.reduce(0) { $0 + $1.cost }, context)
            if countLimit > 0 { #expect(cache.count <= countLimit, context) }
            if costLimit > 0 { #expect(cache.totalCost <= costLimit, context) }
            cache._checkInvariants()
            if Set(cache.keys) != Set(model.keys) { return }
        }
    }
}

/// A reference policy driven one request at a time: a hit refreshes, a miss inserts.
protocol ReferencePolicy {
    /// Serves one request; returns whether it was a hit.
    mutating func access(_ key: Int) -> Bool
    var residents: Set<Int> { get }
    func checkInvariants(_ context: Comment)
}

/// ARC as Figure 4 of Megiddo & Modha (2003) states it, lists least recent first.
struct ARCReference: ReferencePolicy {
    let c: Int
    var t1: [Int] = [], t2: [Int] = [], b1: [Int] = [], b2: [Int] = []
    var p = 0.0

    init(_ c: Int) { self.c = c }

    var residents: Set<Int> { Set(t1 + t2) }

    mutating func replace(_ keyInB2: Bool) {
        if !t1.isEmpty && (Double(t1.count) > p || (keyInB2 && Double(t1.count) == p) || t2.isEmpty) {
            b1.append(t1.removeFirst())
        } else {
            b2.append(t2.removeFirst())
        }
    }

    mutating func access(_ x: Int) -> Bool {
        if let i = t1.firstIndex(of: x) {  // Case I
            t1.remove(at: i)
            t2.append(x)
            return true
        }
        if let i = t2.firstIndex(of: x) {
            t2.remove(at: i)
            t2.append(x)
            return true
        }
        let full = t1.count + t2.count >= c
        if let i = b1.firstIndex(of: x) {  // Case II
            p = min(Double(c), p + max(Double(b2.count) / Double(b1.count), 1))
            b1.remove(at: i)
            if full { replace(false) }
            t2.append(x)
            return false
        }
        if let i = b2.firstIndex(of: x) {  // Case III
            p = max(0, p - max(Double(b1.count) / Double(b2.count), 1))
            b2.remove(at: i)
            if full { replace(true) }
            t2.append(x)
            return false
        }
        // Case IV
        if t1.count + b1.count == c {
            if t1.count < c {
                b1.removeFirst()
                replace(false)
            } else {
                t1.removeFirst()
            }
        } else if t1.count + t2.count + b1.count + b2.count >= c {
            if t1.count + t2.count + b1.count + b2.count == 2 * c { b2.removeFirst() }
            if full { replace(false) }
        }
        t1.append(x)
        return false
    }

    func checkInvariants(_ context: Comment) {
        #expect(t1.count + t2.count <= c, context)
        #expect(t1.count + b1.count <= c, context)
        #expect(t1.count + t2.count + b1.count + b2.count <= 2 * c, context)
        #expect(p >= 0 && p <= Double(c), context)
    }
}

/// S3-FIFO as its paper and libCacheSim state it: small 10%, main 90% (2-bit CLOCK), ghost 90%.
struct S3FIFOReference: ReferencePolicy {
    let c: Int
    var small: [Int] = [], main: [Int] = [], ghost: [Int] = []
    var freq: [Int: Int] = [:]
    var hasEvicted = false

    init(_ c: Int) { self.c = c }

    var smallShare: Int { max(1, c / 10) }
    var residents: Set<Int> { Set(small + main) }

    mutating func access(_ x: Int) -> Bool {
        if small.contains(x) || main.contains(x) {
            freq[x] = min(freq[x]! + 1, 3)
            return true
        }
        let wasGhost = ghost.firstIndex(of: x).map { ghost.remove(at: $0) } != nil
        while small.count + main.count >= c { evict() }
        if wasGhost || (!hasEvicted && small.count >= smallShare) { main.append(x) } else { small.append(x) }
        freq[x] = 0
        return false
    }

    mutating func evict() {
        hasEvicted = true
        if main.count > c - smallShare || small.isEmpty {
            while true {
                let t = main.removeFirst()
                if freq[t]! == 0 {
                    freq[t] = nil
                    return
                }
                freq[t]! -= 1
                main.append(t)
            }
        }
        while let t = small.first {
            small.removeFirst()
            if freq[t]! >= 2 {
                freq[t] = 0
                main.append(t)
            } else {
                freq[t] = nil
                ghost.append(t)
                if ghost.count > c * 9 / 10 { ghost.removeFirst() }
                return
            }
        }
        evict()  // the small queue emptied into main: evict from main
    }

    func checkInvariants(_ context: Comment) {
        #expect(small.count + main.count <= c, context)
        #expect(ghost.count <= c * 9 / 10, context)
        #expect(Set(ghost).isDisjoint(with: residents), context)
    }
}

/// W-TinyLFU with Caffeine's hill climber, on arrays, sharing only the sketch (tested on its own).
struct WTinyLFUReference: ReferencePolicy {
    let c: Int
    var window: [Int] = [], probation: [Int] = [], protected: [Int] = []
    var windowMax: Int, protectedMax: Int
    var sketch: _FrequencySketch
    var hits = 0, misses = 0
    var previousHitRate = 0.0
    var stepSize: Double
    var random: UInt64 = 0x2545_F491_4F6C_DD1D
    /// Whether the last request inserted (the window is within its share only after an insert:
    /// a smaller share after hill climbing applies from the next new entry).
    var lastWasMiss = false

    init(_ c: Int) {
        self.c = c
        windowMax = max(1, c - Int(Double(c) * 0.99))
        protectedMax = Int(Double(c - windowMax) * 0.8)
        stepSize = 0.0625 * Double(c)
        sketch = _FrequencySketch(capacity: c)
    }

    var residents: Set<Int> { Set(window + probation + protected) }

    func frequency(_ key: Int) -> Int { sketch.frequency(UInt32(truncatingIfNeeded: _KeyHash.hash(key))) }

    mutating func access(_ x: Int) -> Bool {
        let hash = UInt32(truncatingIfNeeded: _KeyHash.hash(x))
        var hit = true
        lastWasMiss = false
        if residents.contains(x) { sketch.increment(hash) }  // a hit counts at once
        if let i = window.firstIndex(of: x) {
            window.append(window.remove(at: i))
        } else if let i = probation.firstIndex(of: x) {
            protected.append(probation.remove(at: i))
            while protected.count > protectedMax { probation.append(protected.removeFirst()) }
        } else if let i = protected.firstIndex(of: x) {
            protected.append(protected.remove(at: i))
        } else {
            hit = false
            lastWasMiss = true
            if window.count + probation.count + protected.count >= c { evict() }
            sketch.increment(hash)  // a new key counts after the eviction made room
            window.append(x)
            while window.count > windowMax { probation.append(window.removeFirst()) }
        }
        if hit { hits += 1 } else { misses += 1 }
        if hits + misses >= _WTinyLFUPolicy.climbSample(for: c) {
            climb()
            lastWasMiss = false  // a smaller window share applies from the next new entry
        }
        return hit
    }

    mutating func evict() {
        var candidate: Int?
        var candidateInWindow = false
        while window.count >= windowMax && !window.isEmpty {
            candidate = window.removeFirst()
            probation.append(candidate!)
        }
        if candidate == nil {
            candidate = window.first
            candidateInWindow = true
        }
        var victim = probation.first
        if victim == candidate && !candidateInWindow { victim = probation.count > 1 ? probation[1] : nil }
        if victim == nil { victim = protected.first }
        guard let v = victim else { return remove(candidate!) }
        guard let cand = candidate else { return remove(v) }
        let cf = frequency(cand)
        let vf = frequency(v)
        if cf > vf { return remove(v) }
        if cf >= 6 {
            random ^= random << 13
            random ^= random >> 7
            random ^= random << 17
            if random & 127 == 0 { return remove(v) }
        }
        remove(cand)
    }

    mutating func remove(_ key: Int) {
        window.removeAll { $0 == key }
        probation.removeAll { $0 == key }
        protected.removeAll { $0 == key }
    }

    mutating func climb() {
        let hitRate = Double(hits) / Double(hits + misses)
        let change = hitRate - previousHitRate
        let amount = change >= 0 ? stepSize : -stepSize
        stepSize = abs(change) >= 0.05 ? 0.0625 * Double(c) * (amount >= 0 ? 1 : -1) : 0.98 * amount
        previousHitRate = hitRate
        hits = 0
        misses = 0
        let adjustment = Int(amount)
        if adjustment > 0 {
            let quota = min(adjustment, protectedMax)
            protectedMax -= quota
            windowMax += quota
            while protected.count > protectedMax { probation.append(protected.removeFirst()) }
        } else if adjustment < 0 {
            let quota = min(-adjustment, windowMax - 1)
            windowMax -= quota
            protectedMax += quota
        }
    }

    func checkInvariants(_ context: Comment) {
        #expect(window.count + probation.count + protected.count <= c, context)
        if lastWasMiss { #expect(window.count <= windowMax, context) }
        #expect(protected.count <= protectedMax, context)
        #expect(windowMax >= 1 && windowMax + protectedMax <= c, context)
    }
}

extension AdaptivePolicyTests {
    @Test("W-TinyLFU set to no count limit after a lower one is sized as an unbounded cache, not left at the old limit")
    func wTinyLFUUnlimitedAfterALimit() {
        // Limits 1000, then 1, then 0: the unbounded cache is sized afresh, and does not keep
        // what a limit of 1 gives (a window of 1, no protected segment, a sketch that halves
        // every 2 uses) until its slots next double.
        var seed: UInt64 = 42
        func uniform() -> Double {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Double(seed >> 11) / Double(1 << 53)
        }
        let requests = (0..<200_000).map { _ -> Int in
            let u = uniform()
            return Int(u * u * u * 5_000)
        }
        func countHits(_ cache: SerialCache<Int, Int>) -> Int {
            var hits = 0
            for key in requests {
                if cache.value(forKey: key) != nil { hits += 1 } else { cache.setValue(key, forKey: key, cost: 1) }
            }
            return hits
        }
        let fresh = SerialCache<Int, Int>(totalCostLimit: 200, policy: .wTinyLFU)
        let reconfigured = SerialCache<Int, Int>(countLimit: 1_000, policy: .wTinyLFU)
        for key in 0..<1_000 { reconfigured[-1 - key] = key }
        reconfigured.countLimit = 1
        reconfigured.countLimit = 0
        reconfigured.totalCostLimit = 200
        let (freshHits, reconfiguredHits) = (countHits(fresh), countHits(reconfigured))
        // The hash seed differs in each process, and with it the two caches' hits: 0.97-1.00 of
        // the fresh cache's in ordinary runs, about 0.70 when the old limit's sizing is kept.
        #expect(
            Double(reconfiguredHits) >= 0.90 * Double(freshHits),
            "fresh \(freshHits), reconfigured \(reconfiguredHits)"
        )
        reconfigured._checkInvariants()
    }
}
