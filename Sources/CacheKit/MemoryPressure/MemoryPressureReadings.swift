/// What a ``LinuxMemoryPressureSource`` read: each signal, or `nil` where its file was missing.
public struct MemoryPressureReadings: Hashable, Sendable {
    /// PSI `some avg10`: the percentage of the last 10 seconds in which at least one task stalled
    /// waiting for memory. `nil` if `/proc/pressure/memory` was not readable.
    public var stallPercent: Double?
    /// The cgroup's memory in use, in bytes, less inactive page cache when `memory.stat` is
    /// readable. `nil` if unknown.
    public var usedBytes: UInt64?
    /// The cgroup's memory limit in bytes; `nil` if unknown or unlimited.
    public var limitBytes: UInt64?
    /// New cgroup v2 `high` events since the previous reading.
    public var newHighEvents: UInt64
    /// New cgroup v2 `max`, `oom`, `oom_kill` and `oom_group_kill` events since the previous reading.
    public var newLimitEvents: UInt64

    /// Creates readings; every signal defaults to absent.
    public init(
        stallPercent: Double? = nil,
        usedBytes: UInt64? = nil,
        limitBytes: UInt64? = nil,
        newHighEvents: UInt64 = 0,
        newLimitEvents: UInt64 = 0
    ) {
        self.stallPercent = stallPercent
        self.usedBytes = usedBytes
        self.limitBytes = limitBytes
        self.newHighEvents = newHighEvents
        self.newLimitEvents = newLimitEvents
    }

    /// ``usedBytes`` over ``limitBytes``, or `nil` if either is unknown (or the limit is 0).
    public var usageFraction: Double? {
        guard let usedBytes, let limitBytes, limitBytes > 0 else { return nil }
        return Double(usedBytes) / Double(limitBytes)
    }
}

/// How hard the system (or the process's cgroup) is pressed for memory.
///
/// Levels are ordered: `.normal < .warning < .critical`.
public enum MemoryPressureLevel: Comparable, Sendable, CustomStringConvertible {
    /// Memory is not scarce.
    case normal
    /// Memory is getting scarce: a good moment to give back what is cheap to rebuild.
    case warning
    /// Memory is about to run out (or has: the kernel reclaimed at the limit or killed a process).
    case critical

    public var description: String {
        switch self {
        case .normal: "normal"
        case .warning: "warning"
        case .critical: "critical"
        }
    }
}
