/// Reads memory pressure the way Linux reports it: pressure stall information (PSI) and the
/// process's cgroup (v2 or v1) memory files.
///
/// ```swift
/// let source = try LinuxMemoryPressureSource()
/// let monitor = MemoryPressureMonitor(source: source)
/// ```
///
/// The files, all under `root` (`/` on a real system; a temporary folder in tests):
/// - `proc/pressure/memory`: PSI, its `some avg10` figure;
/// - `proc/self/cgroup`, which names the process's cgroup. For cgroup v2 (a line `0::/path`):
///   `sys/fs/cgroup/<path>/memory.current`, `memory.max` (`max` means unlimited),
///   `memory.events` and `memory.stat`. For cgroup v1 (a line `N:...memory...:/path`):
///   `sys/fs/cgroup/memory/<path>/memory.usage_in_bytes`, `memory.limit_in_bytes` (a limit of
///   2^62 bytes or more means unlimited) and `memory.stat`. If the folder for `<path>` does not
///   exist (a container that sees its own cgroup at the mount point), the mount point is used.
///   In v2, a limit on an ancestor of `<path>` (up to the mount point) binds the process too:
///   the usage and limit read are those of the cgroup, its own or an ancestor, nearest to its
///   limit. (v1 is read at `<path>` alone.)
///
/// Inactive page cache (`inactive_file`, v1 `total_inactive_file` in `memory.stat`) is subtracted
/// from the usage, as the kernel reclaims it first (the kubelet's "working set").
///
/// A missing or unreadable file is skipped: the level comes from what can be read. The files are
/// located once, when the source is created; creating it fails with
/// ``MemoryPressureSourceError/nothingReadable(tried:)`` if none of them can be read, and with
/// ``MemoryPressureSourceError/malformed(file:line:reason:)`` (naming the file and line) if one
/// is not in the kernel's format. A later reading reports the same errors.
public final class LinuxMemoryPressureSource: MemoryPressureSource {
    /// When the readings count as a warning or critical.
    public let thresholds: MemoryPressureThresholds
    /// Every file this source reads, whether or not it exists now.
    public let watchedFiles: [String]

    private let psi: String
    private let cgroup: CgroupFiles?
    /// The `memory.events` counters at the previous reading, to count new events.
    private let previousEvents = _Locked<[String: UInt64]?>(nil)

    /// Locates the files under `root` and takes a first reading (the baseline for event counts).
    ///
    /// - Throws: ``MemoryPressureSourceError/nothingReadable(tried:)`` if no file can be read;
    ///   ``MemoryPressureSourceError/malformed(file:line:reason:)`` if one is malformed.
    public init(root: String = "/", thresholds: MemoryPressureThresholds = .default) throws {
        self.thresholds = thresholds
        psi = TextFile.join(root, "proc/pressure/memory")
        cgroup = try CgroupFiles.locate(root: root)
        watchedFiles = [psi] + (cgroup?.all ?? [])
        _ = try readings()
    }

    /// Reads every watched file now. Event counts are those since the previous reading (or since
    /// the source was created).
    ///
    /// - Throws: ``MemoryPressureSourceError`` if no file is readable or one is malformed.
    public func readings() throws -> MemoryPressureReadings {
        var readings = MemoryPressureReadings()
        var readAny = false
        if let text = TextFile.contents(of: psi) {
            readings.stallPercent = try Self.parsePSI(text, file: psi)
            readAny = true
        }
        if let cgroup {
            let usage = try cgroup.usage()
            readings.usedBytes = usage.used
            readings.limitBytes = usage.limit
            readAny = readAny || usage.readAny
            if let events = cgroup.events,
                let new = try previousEvents.withLock({ previous -> [String: UInt64]? in
                    // Read under the lock, so that overlapping readings (the monitor's poller and
                    // a `check()`) compare counts in the order they were read.
                    guard let text = TextFile.contents(of: events) else { return nil }
                    let counts = try Self.parseKeyValues(text, file: events)
                    defer { previous = counts }
                    // The first reading is the baseline. A counter that went down was reset (the
                    // cgroup was recreated): all it counts happened since the last reading.
                    guard let previous else { return [:] }
                    var new: [String: UInt64] = [:]
                    for (key, value) in counts {
                        let old = previous[key, default: 0]
                        new[key] = value >= old ? value - old : value
                    }
                    return new
                })
            {
                readAny = true
                readings.newHighEvents = new["high", default: 0]
                // Saturating: the kernel prints these as unsigned 64-bit counts, and only whether
                // any rose matters.
                readings.newLimitEvents = ["max", "oom", "oom_kill", "oom_group_kill"].reduce(0) { total, name in
                    let (sum, overflow) = total.addingReportingOverflow(new[name, default: 0])
                    return overflow ? .max : sum
                }
            }
        }
        guard readAny else { throw MemoryPressureSourceError.nothingReadable(tried: watchedFiles) }
        return readings
    }

    /// The level of ``readings()`` under ``thresholds``.
    public func currentLevel() throws -> MemoryPressureLevel {
        thresholds.level(for: try readings())
    }

    /// `some avg10` from a PSI file (`some avg10=0.00 avg60=0.00 avg300=0.00 total=0`).
    static func parsePSI(_ text: String, file: String) throws -> Double {
        for (number, line) in TextFile.numberedLines(text) {
            let fields = line.split(separator: " ")
            guard let kind = fields.first, kind == "some" || kind == "full" else {
                throw MemoryPressureSourceError.malformed(
                    file: file,
                    line: number,
                    reason: "expected a line starting with \"some\" or \"full\""
                )
            }
            guard kind == "some" else { continue }
            for field in fields.dropFirst() where field.hasPrefix("avg10=") {
                guard let value = Double(field.dropFirst("avg10=".count)), value >= 0, value <= 100 else {
                    break
                }
                return value
            }
            throw MemoryPressureSourceError.malformed(
                file: file,
                line: number,
                reason: "expected avg10=<percent> on the \"some\" line"
            )
        }
        throw MemoryPressureSourceError.malformed(file: file, line: 1, reason: "no \"some\" line")
    }

    /// `key value` lines (`memory.events`, `memory.stat`).
    static func parseKeyValues(_ text: String, file: String) throws -> [String: UInt64] {
        var result: [String: UInt64] = [:]
        for (number, line) in TextFile.numberedLines(text) {
            let fields = line.split(separator: " ")
            guard fields.count == 2, let value = UInt64(fields[1]) else {
                throw MemoryPressureSourceError.malformed(
                    file: file,
                    line: number,
                    reason: "expected \"<name> <count>\", got \"\(line)\""
                )
            }
            result[String(fields[0])] = value
        }
        return result
    }

    /// A file holding one number of bytes; `unlimited` (v2 `max`) gives `nil`.
    static func parseBytes(_ text: String, file: String, unlimited: String? = nil) throws -> UInt64? {
        let lines = TextFile.numberedLines(text)
        guard let (number, line) = lines.first else {
            throw MemoryPressureSourceError.malformed(file: file, line: 1, reason: "empty file")
        }
        let value = line.trimmingSuffix { $0 == " " || $0 == "\t" || $0 == "\r" }
        if let unlimited, value == unlimited { return nil }
        guard let bytes = UInt64(value) else {
            throw MemoryPressureSourceError.malformed(
                file: file,
                line: number,
                reason: "expected a number of bytes, got \"\(line)\""
            )
        }
        return bytes
    }
}

extension Substring {
    fileprivate func trimmingSuffix(while predicate: (Character) -> Bool) -> Substring {
        var result = self
        while let last = result.last, predicate(last) { result.removeLast() }
        return result
    }
}
