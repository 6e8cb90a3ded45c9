import CacheKit
import Testing

/// Long random operation sequences applied to each cache and to `ReferenceModel`, compared after
/// every step: contents in eviction order, count, cost, write results and every removal reported.
@Suite("Model-based")
struct ModelBasedTests {
    @Test("random operations agree with the reference model", arguments: classicConfigurations)
    func agreesWithModel(kind: CacheKind, policy: EvictionPolicy) {
        for seed in modelSeeds(default: 6) {
            replay(kind: kind, policy: policy, seed: seed, steps: 3_000)
        }
    }

    private func replay(kind: CacheKind, policy: EvictionPolicy, seed: UInt64, steps: Int) {
        var rng = SeededGenerator(seed: seed &* 7919 &+ UInt64(policy.name.count))
        let initialCount = [0, 1, 5, 20][Int(seed % 4)]
        let initialCost = [0, 12, 40][Int(seed % 3)]
        let cache = kind.make(Int.self, Int.self, countLimit: initialCount, totalCostLimit: initialCost, policy: policy)
        var model = ReferenceModel(policy: policy, countLimit: initialCount, totalCostLimit: initialCost)
        let log = RemovalLog<Int, Int>()
        cache.onRemoval { log.append($0) }
        let keySpace = Int.random(in: 8...40, using: &rng)
        let costly = seed % 2 == 0

        var history: [String] = []  // printed with a failure
        for step in 0..<steps {
            let key = Int.random(in: 0..<keySpace, using: &rng)
            let op = Int.random(in: 0..<100, using: &rng)
            history.append("op \(op) key \(key) -> \(model.keys)")
            if history.count > 12 { history.removeFirst() }
            let context = Comment(
                rawValue: "\(kind) \(policy) seed \(seed) step \(step); last steps:\n\(history.joined(separator: "\n"))"
            )
            switch op {
            case 0..<30:
                #expect(cache.value(forKey: key) == model.value(forKey: key), context)
            case 30..<35:
                #expect(cache.peekValue(forKey: key) == model.peekValue(forKey: key), context)
                #expect(cache.contains(key) == (model.peekValue(forKey: key) != nil), context)
            case 35..<75:
                let cost = costly ? Int.random(in: 0...15, using: &rng) : 0
                let value = step
                let result = cache.setValue(value, forKey: key, cost: cost)
                #expect(result.outcome == model.setValue(value, forKey: key, cost: cost), context)
                #expect(!result.isOverLimit, context)
            case 75..<85:
                #expect(cache.removeValue(forKey: key) == model.removeValue(forKey: key), context)
            case 85..<88:
                let keys = (0..<3).map { _ in Int.random(in: 0..<keySpace, using: &rng) }
                cache.removeValues(forKeys: keys)
                for k in keys { _ = model.removeValue(forKey: k) }
            case 88..<92:
                let count = [0, 1, 3, 10, 25][Int.random(in: 0..<5, using: &rng)]
                cache.countLimit = count
                model.setLimits(countLimit: count, totalCostLimit: model.totalCostLimit)
            case 92..<96:
                let cost = [0, 5, 20, 60][Int.random(in: 0..<4, using: &rng)]
                cache.totalCostLimit = cost
                model.setLimits(countLimit: model.countLimit, totalCostLimit: cost)
            case 96..<98:
                cache.memoryPressureAction = .trim(toFraction: 0.5)
                cache.handleMemoryPressure()
                model.handleMemoryPressure(keeping: 0.5)
            case 98:
                cache.removeAll()
                model.removeAll()
            default:
                cache[key] = nil
                _ = model.removeValue(forKey: key)
            }
            cache._checkInvariants()
            #expect(cache.keys == model.keys, context)
            #expect(cache.entries.map(\.value) == model.entries.map(\.value), context)
            #expect(cache.count == model.count, context)
            #expect(cache.totalCost == model.totalCost, context)
            #expect(log.take() == model.takeRemovals(), context)
            if cache.keys != model.keys { return }  // one divergence is enough to read
        }
    }
}
