import Testing

@testable import CacheKit

/// What a `SharedCache` delivers when it goes.
@Suite("SharedCache lifetime")
struct SharedCacheLifetimeTests {
    /// A cache whose changes are logged but whose interval never ends during the test, with a
    /// subscriber; the cache is released when `body` returns.
    func changes(after body: (SharedCache<String, Int>) -> Void) -> AsyncStream<SharedCacheChanges<String, Int>> {
        let clock = ManualClock()
        let cache = SharedCache<String, Int>(clock: clock)
        cache._applyWritesOnlyWhenAsked()
        cache.notificationInterval = .seconds(3_600)
        let stream = cache.changes
        body(cache)
        return stream
    }

    @Test("a write made just before the cache goes reaches its changes stream before the stream ends")
    func lastWriteReachesSubscribers() async {
        let stream = changes { cache in
            cache["a"] = 1
            cache["b"] = 2
            cache.removeValue(forKey: "b")
        }
        var batches: [SharedCacheChanges<String, Int>] = []
        for await batch in stream { batches.append(batch) }
        #expect(batches.count == 1)
        #expect(batches.first?.updated == ["a": 1])
        #expect(batches.first?.removed == ["b"])
    }

    @Test("a published batch and the last writes arrive in order before the stream ends")
    func publishedThenLast() async {
        let stream = changes { cache in
            cache["a"] = 1
            cache.publishChanges()
            cache["a"] = 2
        }
        var batches: [[String: Int]] = []
        for await batch in stream { batches.append(batch.updated) }
        #expect(batches == [["a": 1], ["a": 2]])
    }

    @Test("a cache with nothing logged ends its stream with no batch")
    func nothingLogged() async {
        let stream = changes { _ in }
        var count = 0
        for await _ in stream { count += 1 }
        #expect(count == 0)
    }
}
