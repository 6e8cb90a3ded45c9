#if Observability
import CacheKit
import CacheKitObservability
import MetricsTestKit
import Synchronization
import Testing

@Suite("CacheMonitor")
struct CacheMonitorTests {
    @Test func oneCallInstallsLoggingAndMetrics() throws {
        let logs = LogStore()
        let metrics = TestMetrics()
        let cache = Cache<String, Int>()
        cache.enableMonitoring(label: "both", logger: logs.logger(), metricsFactory: metrics)
        _ = cache["a"]
        #expect(logs.summaries == ["trace cache miss cache=both key=a"])
        #expect(try CacheMetricsReader(metrics: metrics, label: "both").misses == 1)
    }

    @Test func theForwardedObserverHearsEachActivityAfterTheMonitor() {
        let logs = LogStore()
        let heard = Mutex<[String]>([])
        let cache = Cache<String, Int>()
        let monitor = CacheMonitor(label: "fan", logger: logs.logger(), metrics: false)
        cache.enableMonitoring(monitor) { activity in
            // The monitor has logged this activity already.
            let logged = logs.records.count
            heard.withLock { $0.append("\(activity.key) after \(logged)") }
        }
        _ = cache["a"]
        cache["a"] = 1
        #expect(heard.withLock { $0 } == ["a after 1", "a after 2"])
    }

    @Test func anEmptyMonitorInstallsOnlyTheForwardedObserver() {
        let cache = Cache<String, Int>()
        cache.enableMonitoring(label: "none", metrics: false)
        #expect(cache.activityObserver == nil)
        let count = Atomic<Int>(0)
        cache.enableMonitoring(CacheMonitor()) { _ in count.add(1, ordering: .relaxed) }
        _ = cache["a"]
        #expect(count.load(ordering: .relaxed) == 1)
    }

    @Test("a cache whose key is Hashable only on the main actor is monitored, Cache and SerialCache alike")
    @MainActor
    func keysWithMainActorConformances() throws {
        let logs = LogStore()
        let metrics = TestMetrics()
        let cache = Cache<MainActorKey, Int>()
        cache.enableMonitoring(label: "shared", logger: logs.logger(), metricsFactory: metrics)
        cache[MainActorKey(raw: 1)] = 1
        let serial = SerialCache<MainActorKey, Int>()
        serial.enableMonitoring(label: "serial", logger: logs.logger(), metricsFactory: metrics)
        _ = serial[MainActorKey(raw: 2)]
        #expect(
            logs.summaries == ["trace cache write cache=shared cost=0 key=#1", "trace cache miss cache=serial key=#2"]
        )
        #expect(try CacheMetricsReader(metrics: metrics, label: "shared").entries == 1)
        #expect(try CacheMetricsReader(metrics: metrics, label: "serial").misses == 1)
    }

    @Test func disableMonitoringStopsLogging() {
        let logs = LogStore()
        let cache = Cache<String, Int>()
        cache.enableMonitoring(label: "off", logger: logs.logger(), metrics: false)
        cache.disableMonitoring()
        _ = cache["a"]
        #expect(cache.activityObserver == nil)
        #expect(logs.records.isEmpty)
    }

    @Test func enablingAgainReplacesTheMonitor() {
        let first = LogStore()
        let second = LogStore()
        let cache = Cache<String, Int>()
        cache.enableMonitoring(label: "one", logger: first.logger(), metrics: false)
        cache.enableMonitoring(label: "two", logger: second.logger(), metrics: false)
        _ = cache["a"]
        #expect(first.records.isEmpty)
        #expect(second.summaries == ["trace cache miss cache=two key=a"])
    }

    @Test func theMonitorDoesNotKeepTheCacheAlive() {
        weak var weakCache: Cache<String, Int>?
        weak var weakSerialCache: SerialCache<String, Int>?
        do {
            let metrics = TestMetrics()
            let cache = Cache<String, Int>()
            cache.enableMonitoring(label: "gone", logger: LogStore().logger(), metricsFactory: metrics)
            cache["a"] = 1
            let serial = SerialCache<String, Int>()
            serial.enableMonitoring(label: "gone", logger: LogStore().logger(), metricsFactory: metrics)
            serial["a"] = 1
            weakCache = cache
            weakSerialCache = serial
        }
        #expect(weakCache == nil)
        #expect(weakSerialCache == nil)
    }

    @Test func aSerialCacheLogsAndRecordsMetrics() throws {
        let logs = LogStore()
        let metrics = TestMetrics()
        let read = CacheMetricsReader(metrics: metrics, label: "serial")
        let cache = SerialCache<String, Int>(countLimit: 1)
        cache.enableMonitoring(label: "serial", logger: logs.logger(), metricsFactory: metrics)
        _ = cache["a"]
        cache.setValue(1, forKey: "a", cost: 2)
        _ = cache["a"]
        cache.setValue(2, forKey: "b", cost: 5)
        _ = try? cache.value(forKey: "c") { throw LoadFailure() }
        #expect(
            logs.summaries == [
                "trace cache miss cache=serial key=a",
                "trace cache write cache=serial cost=2 key=a",
                "trace cache hit cache=serial key=a",
                "debug cache removal cache=serial key=a reason=evictedForCount",
                "trace cache write cache=serial cost=5 key=b",
                "trace cache miss cache=serial key=c",
                "warning cache load failed cache=serial error=backend unavailable key=c",
            ]
        )
        #expect(try read.hits == 1)
        #expect(try read.misses == 2)
        #expect(try read.writes == 2)
        #expect(try read.removals(.evictedForCount) == 1)
        #expect(try read.loads("failure") == 1)
        #expect(try read.loadDurations("failure").count == 1)
        #expect(try read.entries == 1)
        #expect(try read.totalCost == 5)
    }

    @Test func aSerialCacheKeepsItsForwardedObserver() {
        var heard: [String] = []
        let cache = SerialCache<String, Int>()
        cache.enableMonitoring(CacheMonitor(label: "serial", metrics: true, metricsFactory: TestMetrics())) {
            heard.append("\($0.key)")
        }
        cache["a"] = 1
        _ = cache["a"]
        #expect(heard == ["a", "a"])
    }
}

/// A key whose `Hashable` conformance is isolated to the main actor.
struct MainActorKey: CustomStringConvertible {
    var raw: Int
    var description: String { "#\(raw)" }
}

extension MainActorKey: @MainActor Hashable {}
#endif
