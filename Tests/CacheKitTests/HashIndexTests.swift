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

/// The engine's index: bucket words that hold a slot and a tag of the key's hash.
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
}
