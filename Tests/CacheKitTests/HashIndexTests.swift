import Testing

@testable import CacheKit

/// A key whose hash value the test chooses, to place keys in the index on purpose.
struct PlacedKey: Hashable {
    let id: Int
    let hash: Int

    static func == (a: PlacedKey, b: PlacedKey) -> Bool { a.id == b.id }
    func hash(into hasher: inout Hasher) { hasher.combine(hash) }
    func _rawHashValue(seed: Int) -> Int { hash }
}

/// The engine's index: bucket words that hold a slot, its displacement from its ideal bucket,
/// and a tag of the key's hash.
@Suite("Hash index")
struct HashIndexTests {
    /// Keys that share their bucket bits but not their tags, keys whose hashes are equal in the
    /// 32 bits the index keeps (same bucket, same tag), and keys with one hash for all.
    static func collidingKeys() -> [PlacedKey] {
        var keys: [PlacedKey] = []
        for k in 0..<120 { keys.append(PlacedKey(id: keys.count, hash: 5 | k << 24)) }
        for k in 0..<120 { keys.append(PlacedKey(id: keys.count, hash: 9 | k << 40)) }
        for _ in 0..<60 { keys.append(PlacedKey(id: keys.count, hash: 13)) }
        for k in 0..<300 { keys.append(PlacedKey(id: keys.count, hash: k &* 0x9E37_79B9)) }
        return keys
    }

    @Test("the test's keys hash to the values it chose")
    func placedKeysHashAsChosen() {
        #expect(PlacedKey(id: 0, hash: 42).hashValue == 42)
        #expect(PlacedKey(id: 0, hash: 42) != PlacedKey(id: 1, hash: 42))
    }

    @Test("keys whose hashes collide in the bucket bits, the tag bits or entirely are found, replaced and removed")
    func collisions() {
        var rng = SeededGenerator(seed: 77)
        let keys = Self.collidingKeys().shuffled(using: &rng)
        let cache = SerialCache<PlacedKey, Int>()
        var model: [PlacedKey: Int] = [:]
        for (i, key) in keys.enumerated() {
            cache[key] = i
            model[key] = i
        }
        cache._checkInvariants()
        #expect(keys.allSatisfy { cache[$0] == model[$0] })
        for (i, key) in keys.enumerated() where i % 3 == 0 {
            #expect(cache.removeValue(forKey: key) == model.removeValue(forKey: key))
        }
        for (i, key) in keys.enumerated() where i % 3 == 1 {
            cache[key] = -i
            model[key] = -i
        }
        cache._checkInvariants()
        #expect(cache.count == model.count)
        #expect(keys.allSatisfy { cache[$0] == model[$0] })
        #expect(!cache.contains(PlacedKey(id: -1, hash: 13)) && !cache.contains(PlacedKey(id: -2, hash: 5)))
    }

    @Test("evictions among colliding keys keep every other key findable")
    func evictionsAmongCollisions() {
        var rng = SeededGenerator(seed: 78)
        let keys = Self.collidingKeys()
        // 70 hot keys from the three colliding groups, more than the cache holds.
        let hot = Array(keys[0..<25] + keys[120..<145] + keys[240..<260])
        let cache = SerialCache<PlacedKey, Int>(countLimit: 50, policy: .lru)
        var recent: [PlacedKey] = []  // the model: LRU order, newest last
        var values: [PlacedKey: Int] = [:]
        for round in 0..<3 {
            // Mostly a few hot colliding keys, so that hits, misses and evictions all happen.
            for i in 0..<2_000 {
                let key = Bool.random(using: &rng) ? hot.randomElement(using: &rng)! : keys.randomElement(using: &rng)!
                if let hit = cache[key] {
                    #expect(hit == values[key] && recent.contains(key))
                    recent.removeAll { $0 == key }
                } else {
                    #expect(!recent.contains(key))
                    cache[key] = round * 10_000 + i
                    values[key] = round * 10_000 + i
                    if recent.count == 50 { recent.removeFirst() }
                }
                recent.append(key)
                if i % 97 == 0 { cache._checkInvariants() }
            }
            #expect(Set(cache.keys) == Set(recent))
        }
    }

    @Test("key hashes are stored only where the policy reads them or a key costs more than a multiply to hash again")
    func storedHashes() {
        func stores<Key: Hashable>(_: Key.Type, _ policy: EvictionPolicy) -> Bool {
            SerialCache<Key, Int>(policy: policy).state.pointee.core.storesHashes
        }
        for policy in [EvictionPolicy.lru, .fifo, .lfu, .sieve] {
            #expect(!stores(Int.self, policy), "\(policy)")
            #expect(!stores(UInt8.self, policy), "\(policy)")
            #expect(stores(String.self, policy), "\(policy)")
            // Trivially copyable, but hashed by `Hasher`: hashing it again per eviction cost more.
            #expect(stores(PlacedKey.self, policy), "\(policy)")
            #expect(stores(Double.self, policy), "\(policy)")
        }
        for policy in [EvictionPolicy.wTinyLFU, .arc, .s3fifo] {
            #expect(stores(Int.self, policy), "\(policy)")
        }
    }

    /// 40 keys with one hash make a probe run longer than a bucket word's displacement can say,
    /// so removals shift entries whose ideal bucket comes from the key's hash, stored or not.
    @Test(
        "removals from a run displaced past the recorded limit keep every key findable",
        arguments: [
            EvictionPolicy.lru, .wTinyLFU,
        ]
    )
    func longRuns(policy: EvictionPolicy) {
        let limit = Int(_HashIndex(bucketCount: 256, slotCapacity: 64).displacementLimit)
        var rng = SeededGenerator(seed: 79)
        let cache = SerialCache<PlacedKey, Int>(policy: policy)
        var model: [PlacedKey: Int] = [:]
        let same = (0..<40).map { PlacedKey(id: $0, hash: 21) }
        // Hash -1 and its neighbours start at the last buckets, so their runs wrap around to 0.
        let near = (40..<60).map { PlacedKey(id: $0, hash: $0 % 2 == 0 ? 22 + $0 % 3 : -1 - $0 % 3) }
        #expect(same.count > 2 * limit)
        for round in 0..<30 {
            for key in (same + near).shuffled(using: &rng) where Int.random(in: 0..<3, using: &rng) > 0 {
                cache[key] = round
                model[key] = round
            }
            cache._checkInvariants()
            for key in (same + near).shuffled(using: &rng) where Bool.random(using: &rng) {
                #expect(cache.removeValue(forKey: key) == model.removeValue(forKey: key))
            }
            cache._checkInvariants()
            #expect((same + near).allSatisfy { cache[$0] == model[$0] })
        }
    }

    /// The index alone, for slot capacities that leave 4 bits of displacement down to none, with
    /// every bucket word checked against a description computed here (not through `word`): the
    /// slot, the displacement (capped at the limit), the tag, and that lookups find every slot.
    @Test(
        "bucket words keep exact displacements through inserts and shifts, for every width",
        arguments: [
            1 << 10, 1 << 28, 1 << 29, 1 << 30, Int(Int32.max), 1 << 32,
        ]
    )
    func displacementWidths(slotCapacity: Int) {
        let buckets = 16
        let index = _HashIndex(bucketCount: buckets, slotCapacity: slotCapacity)
        defer { index.deallocate() }
        let limit = index.displacementLimit
        let expectedBits = Swift.min(
            4,
            32 - (UInt64.bitWidth - UInt64(Swift.max(buckets, slotCapacity)).leadingZeroBitCount)
        )
        #expect(limit == (expectedBits > 0 ? (1 << UInt32(expectedBits)) - 1 : 0))
        #expect(index.tagMask & index.slotMask == 0 && index.tagMask & (limit &<< index.displacementShift) == 0)
        let entries = UnsafeMutablePointer<_Entry<Int, Int>>.allocate(capacity: 12)
        defer { entries.deallocate() }
        // Twelve slots whose keys crowd four ideal buckets, two of them at the end of the table.
        let hashes = (0..<12).map { [3, 3, 4, 15, 15, 14][$0 % 6] | $0 << 40 | ($0 * 7919) << 20 }
        for slot in 0..<12 { (entries + slot).initialize(to: _Entry(key: slot, value: slot)) }
        var live = Set<Int>()
        var rng = SeededGenerator(seed: 80)
        for step in 0..<400 {
            let slot = Int.random(in: 0..<12, using: &rng)
            if live.contains(slot) {
                index.remove(at: index.bucket(ofSlot: Int32(slot), hash: hashes[slot])) { hashes[Int($0)] }
                live.remove(slot)
            } else {
                let found = index.find(slot, hash: hashes[slot], entries: entries)
                #expect(found.slot == -1)
                index.insert(slot: Int32(slot), hash: hashes[slot], at: found.bucket)
                live.insert(slot)
            }
            var seen = Set<Int>()
            for b in 0..<buckets where index.buckets[b] != 0 {
                let word = index.buckets[b]
                let s = Int(word & index.slotMask) - 1
                seen.insert(s)
                let distance = UInt32((b - hashes[s] & (buckets - 1) + buckets) % buckets)
                #expect(
                    (word &>> index.displacementShift) & limit == Swift.min(distance, limit),
                    "step \(step), bucket \(b)"
                )
                #expect(word & index.tagMask == UInt32(truncatingIfNeeded: hashes[s]) & index.tagMask, "step \(step)")
            }
            #expect(seen == live, "step \(step)")
            for s in live { #expect(index.find(s, hash: hashes[s], entries: entries).slot == Int32(s), "step \(step)") }
        }
    }
}

@Suite("Reserving room")
struct ReserveCapacityTests {
    @Test(
        "an empty cache given room ahead holds, evicts and orders entries as one that grew step by step",
        arguments: EvictionPolicy.allCases
    )
    func reservedMatchesGrown(policy: EvictionPolicy) {
        for (countLimit, reserved) in [(0, 5_000), (1_000, 5_000), (0, 10), (3_000, 3_000)] {
            // W-TinyLFU without a count limit sizes its window and sketch by the slots there
            // are: given room ahead, it is sized for the entries to come, and orders them so. So
            // does the adaptive policy, which starts as W-TinyLFU.
            if [.wTinyLFU, .adaptive].contains(policy) && countLimit == 0 && reserved > 10 { continue }
            let grown = SerialCache<String, Int>(countLimit: countLimit, policy: policy)
            let ahead = SerialCache<String, Int>(countLimit: countLimit, policy: policy)
            ahead._reserveCapacity(reserved)
            ahead._checkInvariants()
            for i in 0..<5_000 {
                grown["k\(i % 4_000)"] = i
                ahead["k\(i % 4_000)"] = i
                if i.isMultiple(of: 7) {
                    _ = grown["k\(i / 2)"]
                    _ = ahead["k\(i / 2)"]
                }
            }
            ahead._checkInvariants()
            #expect(ahead.keys == grown.keys, "\(policy), countLimit \(countLimit), reserved \(reserved)")
            #expect(ahead.count == grown.count)
        }
    }

    @Test("reserving in a cache that holds entries changes nothing")
    func reservingWhenNotEmpty() {
        let cache = SerialCache<Int, Int>(countLimit: 0)
        for i in 0..<10 { cache[i] = i }
        cache._reserveCapacity(100_000)
        cache._checkInvariants()
        for i in 10..<1_000 { cache[i] = i }
        cache._checkInvariants()
        #expect(cache.keys == Array(0..<1_000))
    }
}
