import Testing

@testable import CacheKit

/// Every transition of `_DrainScheduler`, the state machine that decides when a `SharedCache`'s
/// background drain runs.
@Suite("Drain scheduler")
struct DrainSchedulerTests {
    /// A scheduler in `state`, reached through its own transitions.
    func scheduler(in state: _DrainScheduler.State) -> _DrainScheduler {
        var scheduler = _DrainScheduler()
        switch state {
        case .idle: break
        case .scheduled: _ = scheduler.writeQueued()
        case .off: scheduler.stop()
        }
        #expect(scheduler.state == state)
        return scheduler
    }

    @Test("a write to an idle cache schedules the drain")
    func firstWriteSchedules() {
        var scheduler = scheduler(in: .idle)
        #expect(scheduler.writeQueued() == .schedule)
        #expect(scheduler.state == .scheduled)
    }

    @Test("writes while a drain is scheduled schedule nothing more")
    func laterWritesScheduleNothing() {
        var scheduler = scheduler(in: .scheduled)
        for _ in 0..<3 { #expect(scheduler.writeQueued() == .none) }
        #expect(scheduler.state == .scheduled)
    }

    @Test("a stopped scheduler never schedules")
    func stoppedSchedulesNothing() {
        var scheduler = scheduler(in: .off)
        #expect(scheduler.writeQueued() == .none)
        #expect(scheduler.state == .off)
    }

    @Test("a drain that fires while writers drain and writes wait looks again later")
    func firedWhileWritersDrain() {
        var scheduler = scheduler(in: .scheduled)
        #expect(scheduler.fired(writersDrained: true, queueIsEmpty: false) == .schedule)
        #expect(scheduler.state == .scheduled)
    }

    @Test(
        "a drain that fires with no writer draining, or nothing queued, drains and returns to idle",
        arguments: [(false, false), (false, true), (true, true)]
    )
    func firedDrains(writersDrained: Bool, queueIsEmpty: Bool) {
        var scheduler = scheduler(in: .scheduled)
        #expect(scheduler.fired(writersDrained: writersDrained, queueIsEmpty: queueIsEmpty) == .drain)
        #expect(scheduler.state == .idle)
        #expect(scheduler.writeQueued() == .schedule, "the next write schedules again")
    }

    @Test("a drain scheduled before the scheduler stopped still drains, and it stays stopped")
    func firedAfterStop() {
        var scheduler = scheduler(in: .scheduled)
        scheduler.stop()
        #expect(scheduler.fired(writersDrained: false, queueIsEmpty: false) == .drain)
        #expect(scheduler.state == .off)
        #expect(scheduler.writeQueued() == .none)
    }
}
