#if Observability
import CacheKit
import CacheKitObservability
import Logging
import Testing

@Suite("CacheActivityLogger")
struct CacheActivityLoggerTests {
    /// A cache of `String` keys that logs into `logs` and records no metrics.
    func loggedCache(
        _ logs: LogStore,
        countLimit: Int = 0,
        keys: CacheActivityLogger.KeyLogging = .logged
    ) -> Cache<String, Int> {
        let cache = Cache<String, Int>(countLimit: countLimit, policy: .lru)
        cache.enableMonitoring(label: "numbers", logger: logs.logger(), keys: keys, metrics: false)
        return cache
    }

    @Test func missWriteAndHitAreLoggedAtTraceWithMetadata() {
        let logs = LogStore()
        let cache = loggedCache(logs)
        _ = cache["a"]
        cache.setValue(1, forKey: "a", cost: 3)
        _ = cache["a"]
        #expect(
            logs.summaries == [
                "trace cache miss cache=numbers key=a",
                "trace cache write cache=numbers cost=3 key=a",
                "trace cache hit cache=numbers key=a",
            ]
        )
    }

    @Test func aMemoizedFunctionsCacheLogsCallsByFunctionAndArguments() {
        let logs = LogStore()
        let memo = MemoizedFunction<Int>("length(of:)", countLimit: 10, policy: .lru)
        memo.cache!.enableMonitoring(label: "memo", logger: logs.logger(level: .trace), metrics: false)
        let length = memo.wrap { (text: String) in text.count }
        #expect(length("Paris") == 5)
        #expect(length("Paris") == 5)
        #expect(
            logs.summaries == [
                "trace cache miss cache=memo key=length(of:) [Paris]",
                "debug cache load cache=memo key=length(of:) [Paris]",
                "trace cache write cache=memo cost=0 key=length(of:) [Paris]",
                "trace cache hit cache=memo key=length(of:) [Paris]",
            ]
        )
    }

    @Test func evictionIsLoggedAtDebugWithItsReason() {
        let logs = LogStore()
        let cache = loggedCache(logs, countLimit: 1)
        cache["a"] = 1
        cache["b"] = 2
        #expect(
            logs.summaries == [
                "trace cache write cache=numbers cost=0 key=a",
                "debug cache removal cache=numbers key=a reason=evictedForCount",
                "trace cache write cache=numbers cost=0 key=b",
            ]
        )
    }

    @Test func explicitRemovalsAreLoggedAtTrace() {
        let logs = LogStore()
        let cache = loggedCache(logs)
        cache["a"] = 1
        cache["a"] = 2
        cache.removeValue(forKey: "a")
        #expect(
            logs.summaries == [
                "trace cache write cache=numbers cost=0 key=a",
                "trace cache removal cache=numbers key=a reason=replaced",
                "trace cache write cache=numbers cost=0 key=a",
                "trace cache removal cache=numbers key=a reason=removed",
            ]
        )
    }

    @Test func expiryIsLoggedAtDebug() {
        let logs = LogStore()
        let clock = ManualClock()
        let cache = Cache<String, Int>(expiration: .afterWrite(.seconds(10)), clock: clock)
        cache.enableMonitoring(label: "sessions", logger: logs.logger(level: .debug), metrics: false)
        cache["a"] = 1
        clock.advance(by: .seconds(11))
        cache.removeExpired()
        #expect(logs.summaries == ["debug cache removal cache=sessions key=a reason=expired"])
    }

    @Test func orInsertLoadIsLoggedAtDebugWithDuration() throws {
        let logs = LogStore()
        let cache = loggedCache(logs)
        let value = cache.value(forKey: "a", cost: 2) { 42 }
        #expect(value == 42)
        #expect(
            logs.summaries == [
                "trace cache miss cache=numbers key=a",
                "debug cache load cache=numbers key=a",
                "trace cache write cache=numbers cost=2 key=a",
            ]
        )
        let load = try #require(logs.records.first { $0.message == "cache load" })
        let duration = try #require(load.metadata["duration"])
        #expect("\(duration)".hasSuffix("seconds"))
        #expect(load.error == nil)
    }

    @Test func asyncLoaderIsLoggedAtDebugWithDuration() async throws {
        let logs = LogStore()
        let cache = loggedCache(logs)
        let value = try await cache.value(forKey: "b", cost: 5) { key in key.count }
        #expect(value == 1)
        // The load runs in its own task: its messages and the caller's miss may interleave.
        #expect(
            logs.summaries.sorted() == [
                "debug cache load cache=numbers key=b",
                "trace cache miss cache=numbers key=b",
                "trace cache write cache=numbers cost=5 key=b",
            ]
        )
        #expect(logs.records.first { $0.message == "cache load" }?.metadata["duration"] != nil)
    }

    @Test func failedLoadIsLoggedAtWarningWithTheError() throws {
        let logs = LogStore()
        let cache = loggedCache(logs)
        #expect(throws: LoadFailure.self) {
            try cache.value(forKey: "a") { throw LoadFailure() }
        }
        #expect(
            logs.summaries == [
                "trace cache miss cache=numbers key=a",
                "warning cache load failed cache=numbers error=backend unavailable key=a",
            ]
        )
        let failure = try #require(logs.records.last)
        #expect(failure.error as? LoadFailure == LoadFailure())
        #expect(failure.metadata["duration"] != nil)
    }

    @Test func failedAsyncLoadIsLoggedAtWarning() async {
        let logs = LogStore()
        let cache = loggedCache(logs)
        await #expect(throws: LoadFailure.self) {
            try await cache.value(forKey: "a") { _ in throw LoadFailure() }
        }
        #expect(
            logs.summaries.sorted() == [
                "trace cache miss cache=numbers key=a",
                "warning cache load failed cache=numbers error=backend unavailable key=a",
            ]
        )
    }

    @Test func filteredLevelsLogNothingAndNeverDescribeTheKey() {
        let logs = LogStore()
        let tally = CountingKey.Tally()
        let cache = Cache<CountingKey, Int>(countLimit: 1, policy: .lru)
        cache.enableMonitoring(label: "quiet", logger: logs.logger(level: .info), metrics: false)
        let a = CountingKey(id: 1, tally: tally)
        let b = CountingKey(id: 2, tally: tally)
        _ = cache[a]  // miss
        cache[a] = 1  // write
        _ = cache[a]  // hit
        cache[b] = 2  // eviction of a, write
        _ = cache.value(forKey: a) { 3 }  // miss, load, eviction of b, write
        cache.removeValue(forKey: a)  // removal
        #expect(logs.records.isEmpty)
        #expect(tally.value == 0)

        // The threshold is the logger's level, not "off": a failed load is a warning.
        _ = try? cache.value(forKey: b) { throw LoadFailure() }
        #expect(logs.summaries == ["warning cache load failed cache=quiet error=backend unavailable key=key-2"])
    }

    @Test func redactedKeysAreNeitherLoggedNorDescribed() {
        let logs = LogStore()
        let tally = CountingKey.Tally()
        let cache = Cache<CountingKey, Int>(countLimit: 1, policy: .lru)
        cache.enableMonitoring(label: "users", logger: logs.logger(), keys: .redacted, metrics: false)
        let a = CountingKey(id: 1, tally: tally)
        _ = cache[a]
        cache[a] = 1
        _ = cache[a]
        cache[CountingKey(id: 2, tally: tally)] = 2
        _ = try? cache.value(forKey: a) { throw LoadFailure() }
        #expect(
            logs.summaries == [
                "trace cache miss cache=users",
                "trace cache write cache=users cost=0",
                "trace cache hit cache=users",
                "debug cache removal cache=users reason=evictedForCount",
                "trace cache write cache=users cost=0",
                "trace cache miss cache=users",
                "warning cache load failed cache=users error=backend unavailable",
            ]
        )
        #expect(tally.value == 0)
    }

    @Test func customLevelsMoveAndSilenceActivities() {
        let logs = LogStore()
        let cache = Cache<String, Int>(countLimit: 1, policy: .lru)
        let levels = CacheActivityLogger.Levels(hit: nil, miss: nil, write: nil, eviction: .notice)
        let logging = CacheActivityLogger(label: "tuned", logger: logs.logger(level: .info), levels: levels)
        cache.enableMonitoring(CacheMonitor(logging: logging))
        _ = cache["a"]
        cache["a"] = 1
        _ = cache["a"]
        cache["b"] = 2
        #expect(logs.summaries == ["notice cache removal cache=tuned key=a reason=evictedForCount"])
    }

    @Test func theLoggersOwnMetadataIsKept() {
        let logs = LogStore()
        var logger = logs.logger()
        logger[metadataKey: "request"] = "r-1"
        let cache = Cache<String, Int>()
        cache.enableMonitoring(label: "numbers", logger: logger, metrics: false)
        _ = cache["a"]
        #expect(logs.summaries == ["trace cache miss cache=numbers key=a request=r-1"])
    }

    @Test(arguments: RemovalReason.allCases)
    func defaultLevelOfEachRemovalReason(reason: RemovalReason) {
        let level = CacheActivityLogger.Levels.default.level(for: CacheActivity.removal(key: 1, reason: reason))
        let expected: Logger.Level =
            switch reason {
            case .evictedForCount, .evictedForCost, .memoryPressure, .expired, .purged: .debug
            case .replaced, .removed, .removedAll: .trace
            }
        #expect(level == expected)
    }

    @Test func defaultLevelsOfTheOtherActivities() {
        let levels = CacheActivityLogger.Levels.default
        #expect(levels.level(for: CacheActivity.hit(key: 1)) == .trace)
        #expect(levels.level(for: CacheActivity.miss(key: 1)) == .trace)
        #expect(levels.level(for: CacheActivity.write(key: 1, cost: 0)) == .trace)
        #expect(levels.level(for: CacheActivity.load(key: 1, duration: .zero, error: nil)) == .debug)
        #expect(levels.level(for: CacheActivity.load(key: 1, duration: .zero, error: LoadFailure())) == .warning)
    }
}
#endif
