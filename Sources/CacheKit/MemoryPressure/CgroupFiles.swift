/// The memory files of the process's cgroup, found from `/proc/self/cgroup`.
struct CgroupFiles: Sendable {
    /// `memory.current` (v2) or `memory.usage_in_bytes` (v1).
    let current: String
    /// `memory.max` (v2) or `memory.limit_in_bytes` (v1).
    let limit: String
    /// `memory.stat`, for the inactive page cache.
    let stat: String
    /// `memory.events`; v2 only.
    let events: String?
    /// Whether these are cgroup v2 files.
    let isV2: Bool
    /// The v2 cgroup's ancestors up to the mount point, nearest first: a limit set on one of
    /// them (a systemd slice's `MemoryMax=`, a container that moved itself into a child cgroup)
    /// binds the process as much as its own.
    var ancestors: [String] = []

    var all: [String] { [current, limit, stat] + (events.map { [$0] } ?? []) }

    /// A v1 limit at or above this means "no limit" (the kernel reports about 2^63 then).
    static let v1Unlimited: UInt64 = 1 << 62

    /// The process's cgroup memory files under `root`, preferring v2; `nil` if
    /// `proc/self/cgroup` is missing or names no memory cgroup whose files exist.
    static func locate(root: String) throws -> CgroupFiles? {
        let listing = TextFile.join(root, "proc/self/cgroup")
        guard let text = TextFile.contents(of: listing) else { return nil }
        var v2Path: Substring?
        var v1Path: Substring?
        // Each line is `hierarchy-ID:controller-list:path`; the path may itself contain colons.
        for (number, line) in TextFile.numberedLines(text) {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3, Int(fields[0]) != nil, fields[2].hasPrefix("/") else {
                throw MemoryPressureSourceError.malformed(
                    file: listing,
                    line: number,
                    reason: "expected \"<id>:<controllers>:/<path>\", got \"\(line)\""
                )
            }
            if fields[0] == "0" && fields[1].isEmpty {
                v2Path = fields[2]
            } else if fields[1].split(separator: ",").contains("memory") {
                v1Path = fields[2]
            }
        }
        let mount = TextFile.join(root, "sys/fs/cgroup")
        if let v2Path {
            let components = v2Path.split(separator: "/").map(String.init)
            for (folder, depth) in [(TextFile.join(mount, String(v2Path)), components.count), (mount, 0)]
            where TextFile.exists(TextFile.join(folder, "memory.current"))
                || TextFile.exists(TextFile.join(folder, "memory.events"))
            {
                // Up to the mount point itself, which is the container's own cgroup under a
                // cgroup namespace (the host's root cgroup has no `memory.max`, and is skipped).
                let ancestors = (0..<depth).reversed().map { count in
                    count == 0 ? mount : TextFile.join(mount, components.prefix(count).joined(separator: "/"))
                }
                return CgroupFiles(
                    current: TextFile.join(folder, "memory.current"),
                    limit: TextFile.join(folder, "memory.max"),
                    stat: TextFile.join(folder, "memory.stat"),
                    events: TextFile.join(folder, "memory.events"),
                    isV2: true,
                    ancestors: ancestors
                )
            }
        }
        if let v1Path {
            let v1Mount = TextFile.join(mount, "memory")
            for folder in [TextFile.join(v1Mount, String(v1Path)), v1Mount]
            where TextFile.exists(TextFile.join(folder, "memory.usage_in_bytes")) {
                return CgroupFiles(
                    current: TextFile.join(folder, "memory.usage_in_bytes"),
                    limit: TextFile.join(folder, "memory.limit_in_bytes"),
                    stat: TextFile.join(folder, "memory.stat"),
                    events: nil,
                    isV2: false
                )
            }
        }
        return nil
    }

    /// The memory in use less inactive page cache, and the limit (`nil` when unlimited), from
    /// whichever files are readable: the process's cgroup's, or, in v2, those of the ancestor
    /// whose limit is the nearest to being reached, if that one is nearer than its own.
    func usage() throws -> (used: UInt64?, limit: UInt64?, readAny: Bool) {
        var (used, limitBytes, readAny) = try usage(current: current, limit: limit, stat: stat)
        for folder in ancestors {
            let (usedHere, limitHere, _) = try usage(
                current: TextFile.join(folder, "memory.current"),
                limit: TextFile.join(folder, "memory.max"),
                stat: TextFile.join(folder, "memory.stat")
            )
            guard let usedHere, let limitHere, limitHere > 0 else { continue }
            let fractionHere = Double(usedHere) / Double(limitHere)
            if let used, let limitBytes, limitBytes > 0, Double(used) / Double(limitBytes) >= fractionHere { continue }
            (used, limitBytes) = (usedHere, limitHere)
            readAny = true
        }
        return (used, limitBytes, readAny)
    }

    /// `usage()` of one cgroup's files.
    private func usage(
        current: String,
        limit: String,
        stat: String
    ) throws -> (
        used: UInt64?, limit: UInt64?, readAny: Bool
    ) {
        var readAny = false
        var used: UInt64?
        var limitBytes: UInt64?
        if let text = TextFile.contents(of: current) {
            readAny = true
            used = try LinuxMemoryPressureSource.parseBytes(text, file: current)
        }
        if let text = TextFile.contents(of: limit) {
            readAny = true
            limitBytes = try LinuxMemoryPressureSource.parseBytes(text, file: limit, unlimited: isV2 ? "max" : nil)
            if !isV2, let bytes = limitBytes, bytes >= Self.v1Unlimited { limitBytes = nil }
        }
        if let text = TextFile.contents(of: stat) {
            readAny = true
            let stats = try LinuxMemoryPressureSource.parseKeyValues(text, file: stat)
            if let inactive = stats[isV2 ? "inactive_file" : "total_inactive_file"], let bytes = used {
                used = bytes - min(bytes, inactive)
            }
        }
        return (used, limitBytes, readAny)
    }
}
