#if os(Linux)
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import CacheKit

/// The default clock's reading on Linux (`_Ticker`). These tickers have no thread: the tests tick
/// them by hand.
@Suite("Ticker")
struct TickerTests {
    @Test("a parked ticker reads the clock, publishes the reading and wakes its thread once")
    func parkedReadsTheClock() {
        let ticker = _Ticker(interval: nil, parkAfter: 3)
        let before = _Ticker.clock()
        let reading = ticker.now()
        #expect(reading >= before && reading <= _Ticker.clock())
        #expect(ticker.lastReading == reading)
        #expect(!ticker.isParked)
        #expect(ticker.waitForWake(timeout: .now()))
        // Running now: the next reader takes the published reading and wakes no one.
        #expect(ticker.now() == reading)
        #expect(!ticker.waitForWake(timeout: .now()))
    }

    @Test("a running ticker answers its last tick, and a tick publishes a fresh reading")
    func runningAnswersTheLastTick() {
        let ticker = _Ticker(interval: nil, parkAfter: 3)
        let first = ticker.now()  // wakes it
        #expect(ticker.now() == first)
        #expect(ticker.now() == first)
        let beforeTick = _Ticker.clock()
        #expect(ticker.tick())
        let second = ticker.now()
        #expect(second >= beforeTick && second >= first)
        #expect(ticker.now() == second)
    }

    @Test("after parkAfter ticks it parks, and the next reader reads the clock and wakes it")
    func parksAfterItsTicks() {
        let ticker = _Ticker(interval: nil, parkAfter: 3)
        _ = ticker.now()
        #expect(ticker.waitForWake(timeout: .now()))
        #expect(ticker.tick())
        #expect(ticker.tick())
        #expect(!ticker.tick())
        #expect(ticker.isParked)
        let stale = ticker.lastReading
        let before = _Ticker.clock()
        let fresh = ticker.now()
        #expect(fresh >= before && fresh >= stale)
        #expect(!ticker.isParked)
        #expect(ticker.waitForWake(timeout: .now()))
        // The count starts again from the wake-up.
        #expect(ticker.tick())
        #expect(ticker.tick())
        #expect(!ticker.tick())
    }

    @Test("caches on the default clock read the shared ticker; other clocks are read directly")
    func cachesUseTheSharedTicker() {
        let onDefault = Cache<Int, Int>(expiration: .afterWrite(.seconds(60)))
        #expect(onDefault._timekeeper.readsTicker && onDefault._timekeeper.ticker === _Ticker.shared)
        let onManual = Cache<Int, Int>(expiration: .afterWrite(.seconds(60)), clock: ManualClock())
        #expect(!onManual._timekeeper.readsTicker)
        let shared = SharedCache<Int, Int>(expiration: .afterWrite(.seconds(60)))
        #expect(shared._timekeeper.readsTicker)
    }

    @Test("an entry on the default clock expires once the ticker's reading passes its deadline")
    func defaultClockExpires() {
        let cache = Cache<Int, Int>(expiration: .afterWrite(.nanoseconds(1)))
        cache[1] = 1
        // Each tick publishes a fresh reading of a nanosecond clock; two in a row differ.
        var ticks = 0
        while cache[1] != nil && ticks < 1_000 {
            _Ticker.shared.tick()
            ticks += 1
        }
        #expect(cache[1] == nil)
        #expect(ticks <= 2)
        #expect(cache.count == 0)
    }
}

/// Readers racing the ticking thread and the wake-ups (run under ThreadSanitizer in CI).
@Suite("Ticker stress")
struct TickerStressTests {
    @Test("readings are never ahead of the clock, and every park is woken by a reader")
    func readersRaceTheTicks() {
        let ticker = _Ticker(interval: nil, parkAfter: 4)
        let running = Atomic<Bool>(true)
        let parks = Atomic<Int>(0)
        let wakes = Atomic<Int>(0)
        let aheadOfTheClock = Atomic<Int>(0)
        let done = DispatchGroup()
        // Threads of their own: the ticking one blocks until a reader wakes it, so the readers
        // must not wait for a worker it holds.
        func spawn(_ body: @escaping @Sendable () -> Void) {
            done.enter()
            Thread {
                body()
                done.leave()
            }
            .start()
        }
        spawn {
            for _ in 0..<20_000 where !ticker.tick() {
                parks.add(1, ordering: .relaxed)
                if ticker.waitForWake(timeout: .now() + .seconds(30)) { wakes.add(1, ordering: .relaxed) }
            }
            running.store(false, ordering: .relaxed)
        }
        for _ in 0..<2 {
            spawn {
                while running.load(ordering: .relaxed) {
                    if ticker.now() > _Ticker.clock() { aheadOfTheClock.add(1, ordering: .relaxed) }
                }
            }
        }
        done.wait()
        #expect(aheadOfTheClock.load(ordering: .relaxed) == 0)
        #expect(parks.load(ordering: .relaxed) == 5_000)
        #expect(wakes.load(ordering: .relaxed) == 5_000)
        // No reader woke it twice for one park.
        #expect(!ticker.waitForWake(timeout: .now()))
    }
}
#endif
