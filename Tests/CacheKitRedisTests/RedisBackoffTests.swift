#if Redis
import Testing

@testable import CacheKitRedis

struct RedisBackoffTests {
    @Test func delaysDoubleUpToTheMaximum() {
        let backoff = RedisBackoff(initial: .milliseconds(50), maximum: .seconds(1))
        #expect(backoff.delay(afterFailures: 1) == .milliseconds(50))
        #expect(backoff.delay(afterFailures: 2) == .milliseconds(100))
        #expect(backoff.delay(afterFailures: 4) == .milliseconds(400))
        #expect(backoff.delay(afterFailures: 6) == .seconds(1))
        #expect(backoff.delay(afterFailures: 1_000_000) == .seconds(1))
        #expect(RedisBackoff(initial: .zero, maximum: .seconds(1)).delay(afterFailures: Int.max) == .zero)
    }

    @Test func jitterStaysWithinHalfToAllOfTheDelay() {
        let backoff = RedisBackoff(initial: .milliseconds(100), maximum: .seconds(5), jitter: true)
        for failures in 1...8 {
            let delay = backoff.delay(afterFailures: failures)
            let full = RedisBackoff(initial: .milliseconds(100), maximum: .seconds(5)).delay(afterFailures: failures)
            #expect(delay >= full / 2 && delay <= full)
        }
    }

    @Test func expiryMillisecondsRoundUpAndAreAtLeastOne() {
        #expect(RedisClient.milliseconds(.zero) == 1)
        #expect(RedisClient.milliseconds(.nanoseconds(1)) == 1)
        #expect(RedisClient.milliseconds(.milliseconds(1500)) == 1500)
        #expect(RedisClient.milliseconds(.microseconds(1500)) == 2)
        #expect(RedisClient.milliseconds(.seconds(-3)) == 1)
    }
}
#endif
