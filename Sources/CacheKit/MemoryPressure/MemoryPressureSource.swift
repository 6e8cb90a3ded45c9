/// Where a ``MemoryPressureMonitor`` gets its readings: something that can say, when asked, how
/// hard the system is pressed for memory.
///
/// CacheKit provides ``LinuxMemoryPressureSource`` (PSI and cgroup files) and, on Apple platforms,
/// `DispatchMemoryPressureSource`. Tests and other environments supply their own.
public protocol MemoryPressureSource: Sendable {
    /// The level now. Called by the monitor once per polling interval, never concurrently with
    /// itself from the monitor's poller (a manual ``MemoryPressureMonitor/check()`` may overlap it).
    ///
    /// - Throws: If the readings cannot be taken; the monitor keeps its previous level and records
    ///   the error in ``MemoryPressureMonitor/lastError``.
    func currentLevel() throws -> MemoryPressureLevel
}
