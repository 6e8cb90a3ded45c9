import CacheKit
import Foundation
import Testing

/// A folder shaped like `/` holding only the files a test writes, for `LinuxMemoryPressureSource(root:)`.
final class FakeRoot {
    let path: String

    init() throws {
        path =
            FileManager.default.temporaryDirectory
            .appendingPathComponent("cachekit-pressure-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// Writes `text` at `relative` (e.g. `proc/pressure/memory`), creating folders.
    func write(_ relative: String, _ text: String) throws {
        let url = URL(fileURLWithPath: path).appendingPathComponent(relative)
        try FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(),
            withIntermediateDirectories: true
        )
        try text.write(to: url, atomically: true, encoding: .utf8)
    }

    /// Makes a folder at `relative`: a path that exists but cannot be read as a file.
    func makeFolder(_ relative: String) throws {
        try FileManager.default.createDirectory(
            atPath: path + "/" + relative,
            withIntermediateDirectories: true
        )
    }

    func file(_ relative: String) -> String { path + "/" + relative }

    func psi(some avg10: String) throws {
        try write(
            "proc/pressure/memory",
            """
            some avg10=\(avg10) avg60=0.00 avg300=0.00 total=12345
            full avg10=0.00 avg60=0.00 avg300=0.00 total=678

            """
        )
    }

    /// A cgroup v2 process in `/app.slice/app.service`.
    func cgroupV2(current: String, max: String, events: String? = nil, stat: String? = nil) throws {
        try write("proc/self/cgroup", "0::/app.slice/app.service\n")
        let folder = "sys/fs/cgroup/app.slice/app.service/"
        try write(folder + "memory.current", current + "\n")
        try write(folder + "memory.max", max + "\n")
        if let events { try write(folder + "memory.events", events) }
        if let stat { try write(folder + "memory.stat", stat) }
    }

    static func events(high: Int = 0, max: Int = 0, oom: Int = 0, oomKill: Int = 0) -> String {
        "low 0\nhigh \(high)\nmax \(max)\noom \(oom)\noom_kill \(oomKill)\noom_group_kill 0\n"
    }
}

/// A source whose level the test sets.
final class FakeSource: MemoryPressureSource {
    private let state = Locked<Result<MemoryPressureLevel, MemoryPressureSourceError>>(.success(.normal))
    private let readingCount = Locked(0)

    var level: MemoryPressureLevel {
        get { (try? state.value.get()) ?? .normal }
        set { state.mutate { $0 = .success(newValue) } }
    }

    var reads: Int { readingCount.value }

    func fail(_ error: MemoryPressureSourceError) { state.mutate { $0 = .failure(error) } }

    func currentLevel() throws -> MemoryPressureLevel {
        readingCount.mutate { $0 += 1 }
        return try state.value.get()
    }
}

/// What a subscriber heard, to await in order.
final class Heard: Sendable {
    let stream: AsyncStream<MemoryPressureLevel>
    private let continuation: AsyncStream<MemoryPressureLevel>.Continuation

    init() { (stream, continuation) = AsyncStream.makeStream() }

    func record(_ level: MemoryPressureLevel) { continuation.yield(level) }

    func finish() { continuation.finish() }

    /// Everything heard so far (finishes the stream).
    func all() async -> [MemoryPressureLevel] {
        finish()
        var result: [MemoryPressureLevel] = []
        for await level in stream { result.append(level) }
        return result
    }
}

func makeCache(_ count: Int = 10) -> Cache<Int, Int> {
    let cache = Cache<Int, Int>(countLimit: 100, policy: .lru)
    for i in 0..<count { cache[i] = i }
    return cache
}

@Suite("Memory pressure", .timeLimit(.minutes(10)))
struct MemoryPressureTests {
    // MARK: Thresholds

    @Test(
        "thresholds: the highest signal wins",
        arguments: [
            (MemoryPressureReadings(), MemoryPressureLevel.normal),
            (MemoryPressureReadings(stallPercent: 9.99), .normal),
            (MemoryPressureReadings(stallPercent: 10), .warning),
            (MemoryPressureReadings(stallPercent: 40), .critical),
            (MemoryPressureReadings(usedBytes: 84, limitBytes: 100), .normal),
            (MemoryPressureReadings(usedBytes: 85, limitBytes: 100), .warning),
            (MemoryPressureReadings(usedBytes: 95, limitBytes: 100), .critical),
            (MemoryPressureReadings(usedBytes: 95, limitBytes: nil), .normal),
            (MemoryPressureReadings(newHighEvents: 1), .warning),
            (MemoryPressureReadings(newHighEvents: 1, newLimitEvents: 1), .critical),
            (MemoryPressureReadings(stallPercent: 12, usedBytes: 96, limitBytes: 100), .critical),
            (MemoryPressureReadings(stallPercent: 45, usedBytes: 10, limitBytes: 100), .critical),
        ]
    )
    func thresholds(readings: MemoryPressureReadings, expected: MemoryPressureLevel) {
        #expect(MemoryPressureThresholds.default.level(for: readings) == expected)
    }

    @Test("custom thresholds move the boundaries")
    func customThresholds() {
        let strict = MemoryPressureThresholds(psiWarning: 1, psiCritical: 5, usageWarning: 0.5, usageCritical: 0.6)
        #expect(strict.level(for: MemoryPressureReadings(stallPercent: 2)) == .warning)
        #expect(strict.level(for: MemoryPressureReadings(stallPercent: 5)) == .critical)
        #expect(strict.level(for: MemoryPressureReadings(usedBytes: 55, limitBytes: 100)) == .warning)
        #expect(strict.level(for: MemoryPressureReadings(usedBytes: 60, limitBytes: 100)) == .critical)
        #expect(MemoryPressureLevel.normal < .warning && MemoryPressureLevel.warning < .critical)
    }

    // MARK: Linux files

    @Test(
        "PSI: some avg10 gives the level",
        arguments: [("0.00", MemoryPressureLevel.normal), ("12.50", .warning), ("55.00", .critical)]
    )
    func psi(avg10: String, expected: MemoryPressureLevel) throws {
        let root = try FakeRoot()
        try root.psi(some: avg10)
        let source = try LinuxMemoryPressureSource(root: root.path)
        #expect(try source.readings().stallPercent == Double(avg10))
        #expect(try source.currentLevel() == expected)
    }

    @Test(
        "cgroup v2: memory.current over memory.max gives the level; max is unlimited",
        arguments: [
            ("500", "1000", MemoryPressureLevel.normal),
            ("900", "1000", .warning),
            ("970", "1000", .critical),
            ("999999999", "max", .normal),
        ]
    )
    func cgroupV2(current: String, max: String, expected: MemoryPressureLevel) throws {
        let root = try FakeRoot()
        try root.cgroupV2(current: current, max: max)
        let source = try LinuxMemoryPressureSource(root: root.path)
        #expect(try source.currentLevel() == expected)
        #expect(source.watchedFiles.contains(root.file("sys/fs/cgroup/app.slice/app.service/memory.current")))
        #expect(try source.readings().limitBytes == (max == "max" ? nil : UInt64(max)))
    }

    @Test("cgroup v2: inactive page cache in memory.stat does not count as used")
    func cgroupV2Stat() throws {
        let root = try FakeRoot()
        try root.cgroupV2(current: "970", max: "1000", stat: "anon 500\nfile 470\ninactive_file 300\n")
        let source = try LinuxMemoryPressureSource(root: root.path)
        #expect(try source.readings().usedBytes == 670)
        #expect(try source.currentLevel() == .normal)
    }

    @Test("cgroup v2: new memory.events since the last reading raise the level once")
    func cgroupV2Events() throws {
        let root = try FakeRoot()
        let events = "sys/fs/cgroup/app.slice/app.service/memory.events"
        // Old events (before the source existed) are the baseline, not pressure.
        try root.cgroupV2(current: "1", max: "max", events: FakeRoot.events(high: 7, oomKill: 2))
        let source = try LinuxMemoryPressureSource(root: root.path)
        #expect(try source.currentLevel() == .normal)

        try root.write(events, FakeRoot.events(high: 9, oomKill: 2))
        #expect(try source.readings().newHighEvents == 2)
        #expect(try source.currentLevel() == .normal)  // no new event since the reading above

        try root.write(events, FakeRoot.events(high: 10, oomKill: 2))
        #expect(try source.currentLevel() == .warning)
        try root.write(events, FakeRoot.events(high: 10, oomKill: 3))
        #expect(try source.currentLevel() == .critical)
        try root.write(events, FakeRoot.events(high: 10, max: 1, oomKill: 3))
        #expect(try source.currentLevel() == .critical)
        #expect(try source.currentLevel() == .normal)
        // A counter that goes down was reset (the cgroup was recreated): what it counts now
        // happened since the last reading.
        try root.write(events, FakeRoot.events())
        #expect(try source.currentLevel() == .normal)  // reset to zero: nothing new
        try root.write(events, FakeRoot.events(high: 4))
        #expect(try source.readings().newHighEvents == 4)
        try root.write(events, FakeRoot.events(high: 1, oomKill: 1))  // reset again, then 1 and 1
        let afterReset = try source.readings()
        #expect(afterReset.newHighEvents == 1 && afterReset.newLimitEvents == 1)
    }

    @Test(
        "cgroup v1: usage over limit gives the level; a huge limit is unlimited",
        arguments: [
            ("100", "1000", MemoryPressureLevel.normal),
            ("860", "1000", .warning),
            ("960", "1000", .critical),
            ("960", "9223372036854771712", .normal),
        ]
    )
    func cgroupV1(usage: String, limit: String, expected: MemoryPressureLevel) throws {
        let root = try FakeRoot()
        try root.write("proc/self/cgroup", "12:pids:/docker/abc\n4:memory:/docker/abc\n0::/\n")
        try root.write("sys/fs/cgroup/memory/docker/abc/memory.usage_in_bytes", usage + "\n")
        try root.write("sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", limit + "\n")
        let source = try LinuxMemoryPressureSource(root: root.path)
        #expect(try source.currentLevel() == expected)
    }

    @Test("cgroup v2: a limit on an ancestor binds the process; the cgroup nearest its limit gives the level")
    func cgroupV2AncestorLimit() throws {
        let root = try FakeRoot()
        // The slice is limited, the service is not (systemd's MemoryMax= on a slice).
        try root.cgroupV2(current: "950", max: "max")
        try root.write("sys/fs/cgroup/app.slice/memory.max", "1000\n")
        try root.write("sys/fs/cgroup/app.slice/memory.current", "990\n")
        try root.write("sys/fs/cgroup/app.slice/memory.stat", "inactive_file 40\n")
        let source = try LinuxMemoryPressureSource(root: root.path)
        #expect(try source.readings() == MemoryPressureReadings(usedBytes: 950, limitBytes: 1000))
        #expect(try source.currentLevel() == .critical)
        // The service's own limit is nearer: it gives the level.
        try root.write("sys/fs/cgroup/app.slice/app.service/memory.max", "960\n")
        #expect(try source.readings() == MemoryPressureReadings(usedBytes: 950, limitBytes: 960))
        // Under a cgroup namespace the container's own cgroup is the mount point.
        let container = try FakeRoot()
        try container.write("proc/self/cgroup", "0::/init\n")
        try container.write("sys/fs/cgroup/memory.max", "1000\n")
        try container.write("sys/fs/cgroup/memory.current", "990\n")
        try container.write("sys/fs/cgroup/init/memory.max", "max\n")
        try container.write("sys/fs/cgroup/init/memory.current", "990\n")
        #expect(try LinuxMemoryPressureSource(root: container.path).currentLevel() == .critical)
    }

    @Test("cgroup v2: event counters near 2^64 add up without trapping")
    func cgroupV2HugeEvents() throws {
        let root = try FakeRoot()
        let events = "sys/fs/cgroup/app.slice/app.service/memory.events"
        try root.cgroupV2(current: "1", max: "max", events: FakeRoot.events())
        let source = try LinuxMemoryPressureSource(root: root.path)
        try root.write(
            events,
            "low 0\nhigh 0\nmax 9223372036854775808\noom 9223372036854775808\noom_kill 0\noom_group_kill 0\n"
        )
        #expect(try source.readings().newLimitEvents == .max)
        try root.write(
            events,
            "low 0\nhigh 0\nmax 9223372036854775809\noom 9223372036854775808\noom_kill 0\noom_group_kill 0\n"
        )
        #expect(try source.currentLevel() == .critical)
    }

    @Test("cgroup v1: the mount point stands in for a cgroup folder the container cannot see")
    func cgroupV1MountPoint() throws {
        let root = try FakeRoot()
        try root.write("proc/self/cgroup", "4:memory,foo:/docker/abc\n")
        try root.write("sys/fs/cgroup/memory/memory.usage_in_bytes", "900\n")
        try root.write("sys/fs/cgroup/memory/memory.limit_in_bytes", "1000\n")
        try root.write("sys/fs/cgroup/memory/memory.stat", "cache 10\ntotal_inactive_file 200\n")
        let source = try LinuxMemoryPressureSource(root: root.path)
        #expect(try source.readings() == MemoryPressureReadings(usedBytes: 700, limitBytes: 1000))
        #expect(try source.currentLevel() == .normal)
    }

    @Test("missing and unreadable files are skipped; nothing readable is an error")
    func missingFiles() throws {
        let root = try FakeRoot()
        #expect(throws: MemoryPressureSourceError.self) { try LinuxMemoryPressureSource(root: root.path) }
        do {
            _ = try LinuxMemoryPressureSource(root: root.path)
        } catch let MemoryPressureSourceError.nothingReadable(tried) {
            #expect(tried == [root.file("proc/pressure/memory")])
        }

        // A folder where the PSI file should be cannot be read: skipped like a missing file.
        try root.makeFolder("proc/pressure/memory")
        #expect(throws: MemoryPressureSourceError.nothingReadable(tried: [root.file("proc/pressure/memory")])) {
            try LinuxMemoryPressureSource(root: root.path)
        }

        // Only memory.events is readable: no usage signal and no new event (the first reading is the
        // baseline), but no error either.
        try root.write("proc/self/cgroup", "0::/app\n")
        try root.write("sys/fs/cgroup/app/memory.events", FakeRoot.events())
        let source = try LinuxMemoryPressureSource(root: root.path)
        #expect(try source.readings() == MemoryPressureReadings())
        #expect(try source.currentLevel() == .normal)

        // Files that disappear later: a reading with nothing left fails the same way.
        try FileManager.default.removeItem(atPath: root.file("sys/fs/cgroup/app/memory.events"))
        #expect(throws: MemoryPressureSourceError.nothingReadable(tried: source.watchedFiles)) {
            try source.readings()
        }
    }

    @Test(
        "malformed files: the error names the file and line",
        arguments: [
            ("proc/pressure/memory", "some avg10=abc avg60=0.00\n", 1),
            ("proc/pressure/memory", "full avg10=0.00\nsome avg60=1.00\n", 2),
            ("proc/pressure/memory", "hello\n", 1),
            ("proc/self/cgroup", "0::/app\nnot a cgroup line\n", 2),
            ("sys/fs/cgroup/app/memory.events", "low 0\nhigh 0\nmax lots\n", 3),
            ("sys/fs/cgroup/app/memory.current", "12 MB\n", 1),
            ("sys/fs/cgroup/app/memory.max", "\n", 1),
            ("sys/fs/cgroup/app/memory.stat", "anon 1\n\ninactive_file\n", 3),
        ]
    )
    func malformed(file: String, text: String, line: Int) throws {
        let root = try FakeRoot()
        try root.psi(some: "0.00")
        try root.write("proc/self/cgroup", "0::/app\n")
        try root.write("sys/fs/cgroup/app/memory.events", FakeRoot.events())
        try root.write("sys/fs/cgroup/app/memory.current", "1\n")
        try root.write("sys/fs/cgroup/app/memory.max", "max\n")
        try root.write(file, text)
        do {
            _ = try LinuxMemoryPressureSource(root: root.path)
            Issue.record("no error for \(file)")
        } catch let MemoryPressureSourceError.malformed(errorFile, errorLine, reason) {
            #expect(errorFile == root.file(file))
            #expect(errorLine == line)
            #expect(!reason.isEmpty)
            #expect(
                "\(MemoryPressureSourceError.malformed(file: errorFile, line: errorLine, reason: reason))"
                    .hasPrefix("\(root.file(file)):\(line): ")
            )
        }
    }

    @Test("a file that becomes malformed fails the next reading, and the monitor keeps its level")
    func malformedLater() throws {
        let root = try FakeRoot()
        try root.psi(some: "50.00")
        let source = try LinuxMemoryPressureSource(root: root.path)
        let monitor = MemoryPressureMonitor(source: source, clock: ManualClock())
        #expect(try monitor.check() == .critical)
        try root.write("proc/pressure/memory", "some avg10=x\n")
        #expect(
            throws: MemoryPressureSourceError.malformed(
                file: root.file("proc/pressure/memory"),
                line: 1,
                reason: "expected avg10=<percent> on the \"some\" line"
            )
        ) {
            try monitor.check()
        }
        #expect(monitor.level == .critical)
        #expect(monitor.lastError != nil)
        try root.psi(some: "0.00")
        #expect(try monitor.check() == .normal)
        #expect(monitor.lastError == nil)
    }

    // MARK: Monitor

    @Test("advancing the clock polls the source; a rise empties a subscribed cache")
    func pollingEmptiesCache() async throws {
        let clock = ManualClock()
        let source = FakeSource()
        let monitor = MemoryPressureMonitor(source: source, interval: .seconds(5), clock: clock)
        let cache = makeCache()
        let removals = RemovalLog<Int, Int>()
        cache.removalHandler = { removals.append($0) }
        cache.respond(to: monitor)
        let heard = Heard()
        // Subscribers run in order: when this one hears the level, the cache has acted.
        _ = monitor.subscribe { heard.record($0) }
        var events = heard.stream.makeAsyncIterator()

        await eventually { clock.sleeperCount == 1 }
        clock.advance(by: .seconds(5))  // normal: nothing happens
        await eventually { source.reads == 1 }
        #expect(cache.count == 10)

        source.level = .warning
        await eventually { clock.sleeperCount == 1 }
        clock.advance(by: .seconds(4))
        #expect(source.reads == 1)  // not yet due
        clock.advance(by: .seconds(1))
        #expect(await events.next() == .warning)
        #expect(cache.count == 0)
        #expect(removals.all.count == 10)
        #expect(removals.all.allSatisfy { $0.reason == .memoryPressure })
    }

    @Test("trim: a cache keeps the fraction its action says; nil uses its own memoryPressureAction")
    func trimActions() async throws {
        let source = FakeSource()
        let monitor = MemoryPressureMonitor(source: source, clock: ManualClock())
        let trimmed = makeCache()
        let own = makeCache()
        own.memoryPressureAction = .trim(toFraction: 0.3)
        let untouched = makeCache()
        trimmed.respond(to: monitor, with: .trim(toFraction: 0.5))
        own.respond(to: monitor)
        untouched.respond(to: monitor, at: .critical)

        source.level = .warning
        try monitor.check()
        #expect(trimmed.count == 5)
        #expect(trimmed.keys == [5, 6, 7, 8, 9])  // the least recently used went first
        #expect(own.count == 3)
        #expect(untouched.count == 10)  // only on critical

        source.level = .critical  // a further rise: every subscriber at or below it acts again
        try monitor.check()
        #expect(trimmed.count == 2)
        #expect(own.count == 0)
        #expect(untouched.count == 0)
    }

    @Test("trimming to a fraction keeps the fraction as written, in every cache", arguments: [0.29, 0.57, 0.1, 0.7])
    func trimKeepsTheWrittenFraction(fraction: Double) {
        let expected = Int((fraction * 100).rounded())  // 100 entries
        let cache = Cache<Int, Int>()
        let serial = SerialCache<Int, Int>()
        let shared = SharedCache<Int, Int>()
        for i in 0..<100 {
            cache[i] = i
            serial[i] = i
            shared[i] = i
        }
        cache.memoryPressureAction = .trim(toFraction: fraction)
        cache.handleMemoryPressure()
        serial.memoryPressureAction = .trim(toFraction: fraction)
        serial.handleMemoryPressure()
        shared.handleMemoryPressure(.trim(toFraction: fraction))
        #expect(cache.count == expected)
        #expect(serial.count == expected)
        #expect(shared.count == expected)
    }

    @Test("the veto is asked on memory pressure")
    func veto() throws {
        let source = FakeSource()
        let monitor = MemoryPressureMonitor(source: source, clock: ManualClock())
        let cache = makeCache()
        cache.evictionVeto = { key, _, reason in reason != .memoryPressure || key != 3 }
        cache.respond(to: monitor, with: .removeAll)
        source.level = .critical
        try monitor.check()
        #expect(cache.keys == [3])
    }

    @Test("subscribers hear rises only; levels hear every change, back to normal included")
    func risesAndLevels() async throws {
        let source = FakeSource()
        let monitor = MemoryPressureMonitor(source: source, clock: ManualClock())
        let warning = Heard()
        let critical = Heard()
        _ = monitor.subscribe(at: .warning) { warning.record($0) }
        _ = monitor.subscribe(at: .critical) { critical.record($0) }
        var first = monitor.levels.makeAsyncIterator()
        var second = monitor.levels.makeAsyncIterator()

        for level in [MemoryPressureLevel.warning, .warning, .critical, .warning, .normal, .critical, .normal] {
            source.level = level
            try monitor.check()
        }
        #expect(await warning.all() == [.warning, .critical, .critical])
        #expect(await critical.all() == [.critical, .critical])
        let expected: [MemoryPressureLevel] = [.normal, .warning, .critical, .warning, .normal, .critical, .normal]
        for level in expected {
            #expect(await first.next() == level)
            #expect(await second.next() == level)
        }
        monitor.stop()
        #expect(await first.next() == nil)
        #expect(await second.next() == nil)
        var late = monitor.levels.makeAsyncIterator()
        #expect(await late.next() == nil)
    }

    @Test("a handler that checks again leaves every later subscriber with the newest level")
    func reentrantCheck() throws {
        let source = FakeSource()
        let monitor = MemoryPressureMonitor(source: source, clock: ManualClock())
        let heard = Locked<[String]>([])
        let first = monitor.subscribe { level in
            heard.mutate { $0.append("A \(level)") }
            if level == .warning {
                source.level = .critical
                _ = try? monitor.check()
            }
        }
        let second = monitor.subscribe { level in heard.mutate { $0.append("B \(level)") } }
        source.level = .warning
        try monitor.check()
        #expect(monitor.level == .critical)
        #expect(heard.value == ["A warning", "A critical", "B critical"])
        first.cancel()
        second.cancel()
        monitor.stop()
    }

    @Test("a handler that checks again and finds the level lower still leaves the later subscribers called")
    func reentrantCheckThatFalls() throws {
        // The handler's own check reads a fall (critical to warning), which calls no one: the
        // later subscribers are still called, with the newest level, so the cache is told.
        let source = FakeSource()
        let monitor = MemoryPressureMonitor(source: source, clock: ManualClock())
        let first = monitor.subscribe(at: .warning) { _ in
            source.level = .warning  // frees memory: the pressure eases but stays
            _ = try? monitor.check()
        }
        let cache = Cache<Int, Int>()
        for i in 0..<100 { cache[i] = i }
        let heard = Locked<[MemoryPressureLevel]>([])
        let second = monitor.subscribe(at: .warning) { level in heard.mutate { $0.append(level) } }
        let third = cache.respond(to: monitor, at: .warning, with: .removeAll)
        let critical = monitor.subscribe(at: .critical) { level in heard.mutate { $0.append(level) } }
        source.level = .critical
        try monitor.check()
        #expect(monitor.level == .warning)
        #expect(heard.value == [.warning], "the .warning subscriber hears the newest level once; .critical no one")
        #expect(cache.count == 0)
        for subscription in [first, second, third, critical] { subscription.cancel() }
        monitor.stop()
    }

    @Test("a subscription made under pressure is called by the next reading that still finds it")
    func subscribedUnderPressure() throws {
        let source = FakeSource()
        let monitor = MemoryPressureMonitor(source: source, clock: ManualClock())
        source.level = .warning
        try monitor.check()
        let heard = Locked<[String]>([])
        let warning = monitor.subscribe(at: .warning) { level in heard.mutate { $0.append("W \(level)") } }
        let critical = monitor.subscribe(at: .critical) { level in heard.mutate { $0.append("C \(level)") } }
        let cache = makeCache()
        let responder = cache.respond(to: monitor, at: .warning, with: .removeAll)
        #expect(heard.value.isEmpty, "subscribing calls no one by itself")
        try monitor.check()  // still .warning
        #expect(heard.value == ["W warning"])
        #expect(cache.count == 0, "a cache that subscribed during pressure acted at the next reading")
        try monitor.check()
        #expect(heard.value == ["W warning"], "called once, not at every reading")

        // Joined under pressure, called by a change that keeps the level at the threshold.
        source.level = .critical
        try monitor.check()
        let late = monitor.subscribe(at: .warning) { level in heard.mutate { $0.append("L \(level)") } }
        source.level = .warning
        try monitor.check()
        #expect(heard.value == ["W warning", "W critical", "C critical", "L warning"])

        // Joined under pressure that ends before the next reading: not called, until a rise.
        let gone = monitor.subscribe(at: .warning) { level in heard.mutate { $0.append("G \(level)") } }
        source.level = .normal
        try monitor.check()
        #expect(!heard.value.contains { $0.hasPrefix("G") })
        source.level = .warning
        try monitor.check()
        #expect(heard.value.suffix(3).contains("G warning"))

        // Cancelled before the next reading: never called.
        let cancelled = monitor.subscribe(at: .warning) { level in heard.mutate { $0.append("X \(level)") } }
        cancelled.cancel()
        try monitor.check()
        #expect(!heard.value.contains { $0.hasPrefix("X") })
        for subscription in [warning, critical, responder, late, gone] { subscription.cancel() }
        monitor.stop()
    }

    @Test("subscriptions made under pressure keep subscription order when a handler checks again")
    func subscribedUnderPressureInOrder() throws {
        let source = FakeSource()
        let monitor = MemoryPressureMonitor(source: source, clock: ManualClock())
        let heard = Locked<[String]>([])
        let late = Locked<[MemoryPressureSubscription]>([])
        @Sendable func record(_ name: String) -> @Sendable (MemoryPressureLevel) -> Void {
            { level in heard.mutate { $0.append("\(name) \(level)") } }
        }
        /// Records, then subscribes `newcomer` and checks again (the level unchanged).
        func recordSubscribeAndCheck(_ name: String, newcomer: String) -> @Sendable (MemoryPressureLevel) -> Void {
            { level in
                heard.mutate { $0.append("\(name) \(level)") }
                let subscription = monitor.subscribe(record(newcomer))
                late.mutate { $0.append(subscription) }
                _ = try? monitor.check()
            }
        }
        // A handler of a rise subscribes a newcomer and checks again: B, subscribed before the
        // newcomer, is still owed the rise.
        let first = monitor.subscribe(recordSubscribeAndCheck("A", newcomer: "L"))
        let second = monitor.subscribe(record("B"))
        source.level = .warning
        try monitor.check()
        #expect(heard.value == ["A warning", "B warning", "L warning"])

        // Two that joined under pressure, the first of which subscribes a third and checks again.
        heard.mutate { $0 = [] }
        let x1 = monitor.subscribe(recordSubscribeAndCheck("X1", newcomer: "Y"))
        let x2 = monitor.subscribe(record("X2"))
        try monitor.check()
        #expect(heard.value == ["X1 warning", "X2 warning", "Y warning"])
        for subscription in [first, second, x1, x2] + late.value { subscription.cancel() }
        monitor.stop()
    }

    @Test("a cancelled subscription is not called; cancelling twice does nothing")
    func cancellation() throws {
        let source = FakeSource()
        let monitor = MemoryPressureMonitor(source: source, clock: ManualClock())
        let cache = makeCache()
        let subscription = cache.respond(to: monitor)
        #expect(monitor.subscriberCount == 1)
        #expect(!subscription.isCancelled)
        subscription.cancel()
        subscription.cancel()
        #expect(subscription.isCancelled)
        #expect(monitor.subscriberCount == 0)
        source.level = .critical
        try monitor.check()
        #expect(cache.count == 10)
    }

    @Test("a subscription cancelled by an earlier handler of the same reading is not called")
    func cancelledDuringDelivery() throws {
        let source = FakeSource()
        let monitor = MemoryPressureMonitor(source: source, clock: ManualClock())
        let calls = Locked<[String]>([])
        let later = Locked<MemoryPressureSubscription?>(nil)
        let first = monitor.subscribe { _ in
            calls.mutate { $0.append("first") }
            later.value?.cancel()
        }
        later.mutate { $0 = monitor.subscribe { _ in calls.mutate { $0.append("second") } } }
        source.level = .warning
        try monitor.check()
        #expect(calls.value == ["first"])
        #expect(later.value?.isCancelled == true && monitor.subscriberCount == 1)
        first.cancel()
    }

    @Test("the subscription holds the cache weakly and ends with it")
    func cacheHeldWeakly() throws {
        let source = FakeSource()
        let monitor = MemoryPressureMonitor(source: source, clock: ManualClock())
        weak var weakCache: Cache<Int, Int>?
        let subscription: MemoryPressureSubscription
        do {
            let cache = makeCache()
            weakCache = cache
            subscription = cache.respond(to: monitor)
            #expect(monitor.subscriberCount == 1)
        }
        #expect(weakCache == nil)
        #expect(subscription.isCancelled)
        #expect(monitor.subscriberCount == 0)
        source.level = .critical
        #expect(try monitor.check() == .critical)
    }

    @Test("the monitor's poller ends with the monitor and with stop()")
    func pollerEnds() async throws {
        let clock = ManualClock()
        let source = FakeSource()
        do {
            let monitor = MemoryPressureMonitor(source: source, interval: .seconds(1), clock: clock)
            await eventually { clock.sleeperCount == 1 }
            clock.advance(by: .seconds(1))
            await eventually { source.reads == 1 }
            await eventually { clock.sleeperCount == 1 }
            _ = monitor
        }
        clock.advance(by: .seconds(1))  // the poller wakes, finds the monitor gone, and ends
        await eventually { clock.sleeperCount == 0 }
        #expect(source.reads == 1)

        let stopped = MemoryPressureMonitor(source: source, interval: .seconds(1), clock: clock)
        await eventually { clock.sleeperCount == 1 }
        stopped.stop()
        await eventually { clock.sleeperCount == 0 }
        clock.advance(by: .seconds(10))
        #expect(source.reads == 1)
        source.level = .warning
        #expect(try stopped.check() == .warning)  // a manual check still works
    }

    @Test("a failing source keeps the level and records the error")
    func failingSource() throws {
        let source = FakeSource()
        let monitor = MemoryPressureMonitor(source: source, clock: ManualClock())
        source.level = .warning
        try monitor.check()
        source.fail(.nothingReadable(tried: ["x"]))
        #expect(throws: MemoryPressureSourceError.nothingReadable(tried: ["x"])) { try monitor.check() }
        #expect(monitor.level == .warning)
        #expect(monitor.lastError as? MemoryPressureSourceError == .nothingReadable(tried: ["x"]))
    }

    #if os(Linux)
    @Test("the system monitor reads this machine's files")
    func system() throws {
        let monitor = try MemoryPressureMonitor.system()
        _ = try monitor.check()
        monitor.stop()
    }
    #endif
}
