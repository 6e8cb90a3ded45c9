#if Observability
import CacheKit
import CacheKitObservability
import MetricsTestKit
import Testing

/// Reads one cache's metrics out of a `TestMetrics`, by the documented names and dimensions.
struct CacheMetricsReader {
    let metrics: TestMetrics
    let label: String
    var names = CacheActivityMetrics.Names()

    var cache: [(String, String)] { [("cache", label)] }

    func counter(_ name: String, _ more: [(String, String)] = []) throws -> Int64 {
        try metrics.expectCounter(name, cache + more).totalValue
    }

    var hits: Int64 { get throws { try counter(names.hits) } }
    var misses: Int64 { get throws { try counter(names.misses) } }
    var writes: Int64 { get throws { try counter(names.writes) } }

    func removals(_ reason: RemovalReason) throws -> Int64 {
        try counter(names.removals, [("reason", reason.rawValue)])
    }

    func loads(_ outcome: String) throws -> Int64 {
        try counter(names.loads, [("outcome", outcome)])
    }

    func loadDurations(_ outcome: String) throws -> [Int64] {
        try metrics.expectTimer(names.loadDuration, cache + [("outcome", outcome)]).values
    }

    var entries: Double? { get throws { try metrics.expectMeter(names.entries, cache).lastValue } }
    var totalCost: Double? { get throws { try metrics.expectMeter(names.totalCost, cache).lastValue } }
}

@Suite("CacheActivityMetrics")
struct CacheActivityMetricsTests {
    @Test func aScriptedSequenceCountsEveryActivity() async throws {
        let metrics = TestMetrics()
        let read = CacheMetricsReader(metrics: metrics, label: "script")
        let cache = Cache<String, Int>(countLimit: 2, totalCostLimit: 100, policy: .lru)
        cache.enableMonitoring(label: "script", metricsFactory: metrics)
        #expect(try read.entries == 0)
        #expect(try read.totalCost == 0)

        _ = cache["a"]  // miss
        cache.setValue(1, forKey: "a", cost: 10)  // write
        _ = cache["a"]  // hit
        cache.setValue(2, forKey: "b", cost: 20)  // write
        cache.setValue(3, forKey: "c", cost: 30)  // write, evicts a (least recently used)
        cache.setValue(4, forKey: "b", cost: 5)  // write, replaces b
        cache.setValue(5, forKey: "d", cost: 200)  // rejected: more than the cost limit, nothing stored
        cache.removeValue(forKey: "c")  // removed
        _ = cache.value(forKey: "e", cost: 7) { 6 }  // miss, load, write
        #expect(try read.entries == 2)
        #expect(try read.totalCost == 12)
        _ = try? cache.value(forKey: "f") { throw LoadFailure() }  // miss, failed load
        _ = try await cache.value(forKey: "g", cost: 1) { _ in 7 }  // miss, load, write, evicts b
        #expect(try read.entries == 2)
        #expect(try read.totalCost == 8)
        cache.removeAll()  // removedAll e and g

        #expect(try read.hits == 1)
        #expect(try read.misses == 4)
        #expect(try read.writes == 6)
        #expect(try read.removals(.evictedForCount) == 2)
        #expect(try read.removals(.replaced) == 1)
        #expect(try read.removals(.removed) == 1)
        #expect(try read.removals(.removedAll) == 2)
        for reason in [RemovalReason.evictedForCost, .memoryPressure, .expired] {
            #expect(try read.removals(reason) == 0)
        }
        #expect(try read.loads("success") == 2)
        #expect(try read.loads("failure") == 1)
        #expect(try read.loadDurations("success").count == 2)
        #expect(try read.loadDurations("failure").count == 1)
        #expect(try read.loadDurations("success").allSatisfy { $0 >= 0 })
        #expect(try read.entries == 0)
        #expect(try read.totalCost == 0)
    }

    @Test func removalsCarryTheirReasonAsADimension() throws {
        let metrics = TestMetrics()
        let clock = ManualClock()
        let cache = Cache<Int, Int>(countLimit: 3, totalCostLimit: 10, policy: .lru, clock: clock)
        cache.enableMonitoring(label: "reasons", metricsFactory: metrics)
        cache.setValue(1, forKey: 1, cost: 6)
        cache.setValue(2, forKey: 2, cost: 0)
        cache.setValue(3, forKey: 3, cost: 6)  // evicts 1 for cost
        cache[4] = 4
        cache[5] = 5  // evicts 2 for count
        cache.setValue(6, forKey: 6, expiresAfter: .seconds(1))  // evicts 3 for count
        clock.advance(by: .seconds(2))
        cache.removeExpired()  // 6 expires
        cache.memoryPressureAction = .removeAll
        cache.handleMemoryPressure()  // 4 and 5

        let removals = metrics.counters.filter { $0.label == "cachekit_removals_total" }
        let byReason = Dictionary(
            uniqueKeysWithValues: removals.map { counter in
                (counter.dimensions.first { $0.0 == "reason" }?.1 ?? "none", counter.totalValue)
            }
        )
        #expect(
            byReason == [
                "evictedForCount": 2, "evictedForCost": 1, "expired": 1, "memoryPressure": 2,
                "replaced": 0, "removed": 0, "removedAll": 0, "purged": 0,
            ]
        )
        #expect(removals.allSatisfy { $0.dimensions.first! == ("cache", "reasons") })
    }

    @Test func gaugesFollowCountAndCostAfterEveryWriteAndRemoval() throws {
        let metrics = TestMetrics()
        let read = CacheMetricsReader(metrics: metrics, label: "sizes")
        let cache = Cache<String, Int>()
        cache.setValue(0, forKey: "before", cost: 4)
        cache.enableMonitoring(label: "sizes", metricsFactory: metrics)
        #expect(try read.entries == 1)  // set when monitoring starts
        #expect(try read.totalCost == 4)
        cache.setValue(1, forKey: "a", cost: 10)
        #expect(try read.entries == 2)
        #expect(try read.totalCost == 14)
        cache.setValue(2, forKey: "a", cost: 3)
        #expect(try read.entries == 2)
        #expect(try read.totalCost == 7)
        cache.removeValue(forKey: "before")
        #expect(try read.entries == 1)
        #expect(try read.totalCost == 3)
        _ = cache["a"]  // reads do not touch the gauges
        #expect(try metrics.expectMeter("cachekit_entries", [("cache", "sizes")]).values == [1, 2, 2, 2, 1])
    }

    @Test func prefixAndExtraDimensionsNameEveryMetric() throws {
        let metrics = TestMetrics()
        let recorder = CacheActivityMetrics(
            label: "x",
            prefix: "app_cache",
            dimensions: [("service", "api")],
            factory: metrics
        )
        recorder.record(CacheActivity.hit(key: "k"))
        recorder.record(CacheActivity.load(key: "k", duration: .milliseconds(3), error: nil))
        recorder.recordSize(count: 7, totalCost: 70)
        let dimensions = [("cache", "x"), ("service", "api")]
        #expect(recorder.names.hits == "app_cache_hits_total")
        #expect(try metrics.expectCounter("app_cache_hits_total", dimensions).totalValue == 1)
        #expect(
            try metrics.expectTimer("app_cache_load_duration_seconds", dimensions + [("outcome", "success")]).values
                == [3_000_000]
        )
        #expect(try metrics.expectMeter("app_cache_entries", dimensions).lastValue == 7)
        #expect(try metrics.expectMeter("app_cache_total_cost", dimensions).lastValue == 70)
    }

    @Test func defaultAndEmptyPrefixNames() {
        let names = CacheActivityMetrics.Names()
        #expect(
            [
                names.hits, names.misses, names.writes, names.removals, names.loads, names.loadDuration,
                names.entries, names.totalCost,
            ] == [
                "cachekit_hits_total", "cachekit_misses_total", "cachekit_writes_total", "cachekit_removals_total",
                "cachekit_loads_total", "cachekit_load_duration_seconds", "cachekit_entries", "cachekit_total_cost",
            ]
        )
        #expect(CacheActivityMetrics.Names(prefix: "").hits == "hits_total")
    }

    @Test func concurrentUseCountsEveryActivity() async throws {
        let metrics = TestMetrics()
        let read = CacheMetricsReader(metrics: metrics, label: "shared")
        let cache = Cache<Int, Int>()
        cache.enableMonitoring(label: "shared", metricsFactory: metrics)
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    for i in 0..<250 {
                        cache[worker * 1000 + i] = i
                        _ = cache[worker * 1000 + i]
                    }
                }
            }
        }
        #expect(try read.writes == 1000)
        #expect(try read.hits == 1000)
        #expect(cache.count == 1000)
        // Every observer read the size after its write; the last one to set the gauge may have
        // read it before another worker's last write, so only the final write is certain.
        cache[-1] = -1
        #expect(try read.entries == 1001)
    }
}
#endif
