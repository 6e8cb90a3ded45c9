import Testing

@testable import CacheKit

/// `StampTable` against a reference: a dictionary and a list of the live stamps in the order
/// they were made, the oldest dropped when over capacity.
@Suite("Stamp table")
struct StampTableTests {
    @Test("random stamps, lookups, forgets and clears agree with the reference", arguments: modelSeeds(default: 20))
    func agreesWithReference(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        let capacity = 8
        var table = StampTable(capacity: capacity)
        var stamps: [Int: Int64] = [:]
        var order: [(key: Int, time: Int64)] = []
        var watermark: Int64?
        var now: Int64 = 0
        func key(_ k: Int) -> MemoKey { MemoKey(function: "f", arguments: k) }
        func referenceStamp(_ k: Int, _ time: Int64) {
            stamps[k] = time
            order.removeAll { $0.key == k }
            order.append((k, time))
            while stamps.count > capacity {
                let oldest = order.removeFirst()
                stamps[oldest.key] = nil
                watermark = max(watermark ?? oldest.time, oldest.time)
            }
        }
        for step in 0..<3_000 {
            now += Int64.random(in: 0...3, using: &rng)
            let k = Int.random(in: 0..<20, using: &rng)
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<45:
                _ = table.stamp(key(k), at: now)
                referenceStamp(k, now)
            case 45..<80:
                let (time, _) = table.time(of: key(k), now: now)
                // Unknown (nil) once a stamp has been dropped; else stamped now on first ask.
                let expected: Int64? = stamps[k] ?? (watermark == nil ? now : nil)
                #expect(time == expected, "seed \(seed) step \(step)")
                if stamps[k] == nil, let expected { referenceStamp(k, expected) }
            case 80..<98:
                let asked: Int64? =
                    Bool.random(using: &rng) ? nil : stamps[k].map { $0 - Int64.random(in: 0...1, using: &rng) }
                _ = table.forget(key(k), ifStampedAt: asked)
                if let stamp = stamps[k], asked == nil || asked == stamp {
                    stamps[k] = nil
                    order.removeAll { $0.key == k }
                }
            default:
                _ = table.removeAll()
                stamps = [:]
                order = []
                watermark = nil
            }
            #expect(table.count <= capacity)
            #expect(
                table.times == Dictionary(uniqueKeysWithValues: stamps.map { (key($0.key), $0.value) }),
                "seed \(seed) step \(step)"
            )
            #expect(table.watermark == watermark, "seed \(seed) step \(step)")
        }
    }
}
