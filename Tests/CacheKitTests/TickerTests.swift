#if os(Linux)
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import CacheKit

/// The default clock's reading on Linux (`_Ticker`). These tickers have no thread: the tests tick
/// them by hand (never the shared one, whose thread may be ticking).
@Suite("Ticker")
struct TickerTests {
    @Test("a parked ticker reads the clock, publishes the reading and wakes its thread once")
    func parkedReadsTheClock() {
        let ticker = _Ticker(intervalNanoseconds: nil, parkAfter: 3)
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
        let ticker = _Ticker(intervalNanoseconds: nil, parkAfter: 3)
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
        let ticker = _Ticker(intervalNanoseconds: nil, parkAfter: 3)
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

    @Test("a timekeeper on the default clock reads the ticker from its creation, never below zero")
    func timekeeperReadsTheTicker() {
        let ticker = _Ticker(intervalNanoseconds: nil, parkAfter: 1_000)
        let timekeeper = _Timekeeper(ticker: ticker, active: true)
        let first = timekeeper.now()  // wakes the ticker with a fresh reading
        #expect(first >= 0)
        #expect(ticker.waitForWake(timeout: .now()))
        #expect(timekeeper.now() == first)  // no tick, no change
        ticker.tick()
        let second = timekeeper.now()
        #expect(second > first)
        #expect(second == ticker.lastReading - timekeeper.start)
        let inactive = _Timekeeper(ticker: ticker, active: false)
        #expect(inactive.now() == -1)
        #expect(inactive.activate() >= 0)
    }

    @Test("after a fork the ticker is parked again, so the child's first reading reads the clock")
    func forkedChildParks() {
        let ticker = _Ticker(intervalNanoseconds: nil, parkAfter: 1_000)
        _ = ticker.now()
        #expect(ticker.waitForWake(timeout: .now()))
        #expect(!ticker.isParked)
        ticker.resetAfterFork()
        #expect(ticker.isParked)
        let before = _Ticker.clock()
        #expect(ticker.now() >= before)
        #expect(!ticker.isParked)
    }

    @Test("only the reader that finds the ticker parked in the state it saw wakes it")
    func oneWakePerPark() {
        let ticker = _Ticker(intervalNanoseconds: nil, parkAfter: 1)
        #expect(ticker.isParked)
        let parked = ticker.cells.pointee.state.load(ordering: .relaxed)
        let first = ticker.wake(parked: parked)
        let second = ticker.wake(parked: parked)  // raced the first: takes its reading, wakes no one
        #expect(second == first)
        #expect(ticker.lastReading == first)
        #expect(!ticker.isParked)
        #expect(ticker.waitForWake(timeout: .now()))
        #expect(!ticker.waitForWake(timeout: .now()))
        // A park publishes a newer reading, parked. A reader that saw the previous park wakes
        // this one, once.
        #expect(!ticker.tick())
        #expect(ticker.isParked && ticker.lastReading >= first)
        let third = ticker.wake(parked: parked)
        #expect(!ticker.isParked && third >= first && ticker.lastReading == third)
        #expect(ticker.waitForWake(timeout: .now()))
        #expect(!ticker.waitForWake(timeout: .now()))
    }
}

/// Readers racing the ticking thread and the wake-ups (run under ThreadSanitizer in CI).
@Suite("Ticker stress")
struct TickerStressTests {
    @Test("readings are never ahead of the clock, and every park is woken by a reader")
    func readersRaceTheTicks() {
        let ticker = _Ticker(intervalNanoseconds: nil, parkAfter: 4)
        let running = Atomic<Bool>(true)
        let parks = Atomic<Int>(0)
        let wakes = Atomic<Int>(0)
        let aheadOfTheClock = Atomic<Int>(0)
        let backwards = Atomic<Int>(0)
        // Woken before the race, so that the ticking below starts from a running ticker with no
        // wake-up pending.
        _ = ticker.now()
        #expect(ticker.waitForWake(timeout: .now()))
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
                guard ticker.waitForWake(timeout: .now() + .seconds(5)) else { break }
                wakes.add(1, ordering: .relaxed)
            }
            running.store(false, ordering: .relaxed)
        }
        for _ in 0..<2 {
            spawn {
                var previous = Int64.min
                while running.load(ordering: .relaxed) {
                    let reading = ticker.now()
                    if reading > _Ticker.clock() { aheadOfTheClock.add(1, ordering: .relaxed) }
                    // A reader's readings only grow: every one it gets was published, and published
                    // ones only grow.
                    if reading < previous { backwards.add(1, ordering: .relaxed) }
                    previous = reading
                }
            }
        }
        done.wait()
        #expect(aheadOfTheClock.load(ordering: .relaxed) == 0)
        #expect(backwards.load(ordering: .relaxed) == 0)
        #expect(parks.load(ordering: .relaxed) == 5_000)
        #expect(wakes.load(ordering: .relaxed) == 5_000)
        // No reader woke it twice for one park.
        #expect(!ticker.waitForWake(timeout: .now()))
    }
}
#endif
