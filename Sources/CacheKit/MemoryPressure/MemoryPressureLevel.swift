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
