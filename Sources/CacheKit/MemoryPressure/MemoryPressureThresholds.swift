/// When readings count as ``MemoryPressureLevel/warning`` or ``MemoryPressureLevel/critical``.
///
/// Each signal that is present gives a level and the highest wins:
/// - PSI: the share of the last 10 seconds in which some task stalled waiting for memory
///   (`some avg10` in `/proc/pressure/memory`, in percent), against ``psiWarning`` and
///   ``psiCritical``;
/// - usage: the cgroup's memory in use (minus inactive page cache, which the kernel reclaims
///   first) as a fraction of its limit, against ``usageWarning`` and ``usageCritical``;
/// - events: any new cgroup v2 `memory.events` `high` event since the previous reading is a
///   warning; any new `max`, `oom`, `oom_kill` or `oom_group_kill` event is critical.
public struct MemoryPressureThresholds: Hashable, Sendable {
    /// PSI `some avg10` (percent, 0–100) from which pressure is a warning.
    public let psiWarning: Double
    /// PSI `some avg10` (percent, 0–100) from which pressure is critical.
    public let psiCritical: Double
    /// Fraction of the cgroup's memory limit in use from which pressure is a warning.
    public let usageWarning: Double
    /// Fraction of the cgroup's memory limit in use from which pressure is critical.
    public let usageCritical: Double

    /// Creates thresholds.
    ///
    /// - Precondition: `0 < psiWarning <= psiCritical <= 100` and
    ///   `0 < usageWarning <= usageCritical <= 1`. A violation traps with a message naming the
    ///   parameter.
    public init(
        psiWarning: Double = 10,
        psiCritical: Double = 40,
        usageWarning: Double = 0.85,
        usageCritical: Double = 0.95
    ) {
        precondition(
            psiWarning > 0 && psiWarning <= 100,
            "MemoryPressureThresholds: psiWarning must be in (0, 100] (got \(psiWarning))"
        )
        precondition(
            psiCritical >= psiWarning && psiCritical <= 100,
            "MemoryPressureThresholds: psiCritical must be in [psiWarning, 100] (got \(psiCritical))"
        )
        precondition(
            usageWarning > 0 && usageWarning <= 1,
            "MemoryPressureThresholds: usageWarning must be in (0, 1] (got \(usageWarning))"
        )
        precondition(
            usageCritical >= usageWarning && usageCritical <= 1,
            "MemoryPressureThresholds: usageCritical must be in [usageWarning, 1] (got \(usageCritical))"
        )
        self.psiWarning = psiWarning
        self.psiCritical = psiCritical
        self.usageWarning = usageWarning
        self.usageCritical = usageCritical
    }

    /// PSI 10% / 40%, usage 85% / 95%.
    public static let `default` = MemoryPressureThresholds()

    /// The level these readings show: the highest level any present signal reaches.
    public func level(for readings: MemoryPressureReadings) -> MemoryPressureLevel {
        var level = MemoryPressureLevel.normal
        if let stall = readings.stallPercent {
            if stall >= psiCritical {
                level = max(level, .critical)
            } else if stall >= psiWarning {
                level = max(level, .warning)
            }
        }
        if let fraction = readings.usageFraction {
            if fraction >= usageCritical {
                level = max(level, .critical)
            } else if fraction >= usageWarning {
                level = max(level, .warning)
            }
        }
        if readings.newLimitEvents > 0 {
            level = max(level, .critical)
        } else if readings.newHighEvents > 0 {
            level = max(level, .warning)
        }
        return level
    }
}
