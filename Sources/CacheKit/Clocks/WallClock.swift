import Foundation

/// The wall clock a ``CacheStore`` and a ``TieredCache`` measure lifetimes on. A store's
/// deadlines are dates, so that they mean the same after a restart.
///
/// Tests use ``manual(_:origin:)``: a ``ManualClock`` read as a date, so that advancing that
/// clock moves the memory level's expiry and the store's together.
public struct WallClock: Sendable {
    /// The current date on this clock.
    public let now: @Sendable () -> Date
    /// The manual clock behind ``manual(_:origin:)``, given to the memory level.
    let manualClock: ManualClock?

    /// A clock that reads `now`.
    public init(now: @escaping @Sendable () -> Date) {
        self.now = now
        manualClock = nil
    }

    /// The system's clock (`Date()`).
    public static var system: WallClock { WallClock(now: { Date() }) }

    /// `clock` read as a date: `origin` plus the time `clock` has advanced.
    public static func manual(
        _ clock: ManualClock,
        origin: Date = Date(timeIntervalSince1970: 1_800_000_000)
    ) -> WallClock {
        WallClock(
            now: { origin.addingTimeInterval(clock.now.offset.timeInterval) },
            manualClock: clock
        )
    }

    private init(now: @escaping @Sendable () -> Date, manualClock: ManualClock) {
        self.now = now
        self.manualClock = manualClock
    }
}

extension Duration {
    /// This duration in seconds, as `TimeInterval`.
    var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
