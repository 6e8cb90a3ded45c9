#if Redis
import CacheKitRedis
import Foundation
import Testing

/// Writers and readers in two processes, each with a near cache over one Redis, while the
/// connections that carry invalidations are dropped and the server is killed and restarted.
///
/// The rule checked: no read returns a value older than a write acknowledged before the read
/// began, by its own process, or by the other process more than ``crossProcessDelay`` before.
/// A copy in one process's memory can outlive another process's write for as long as the
/// invalidation takes to arrive (tens of microseconds on loopback, longer when the machine is
/// busy): only a round trip to Redis on every read could close that window, which is what a
/// near cache exists to avoid. A lost invalidation would leave a stale copy for good, far longer
/// than the allowance.
@Suite("Near caching through server restarts", .enabled(if: RedisServer.shouldRun, RedisServer.skipMessage))
struct NearCacheChaosTests {
    /// How long another process's acknowledged write may take to reach a near cache.
    static let crossProcessDelay: UInt64 = 50_000_000

    struct Write {
        var process: String
        var value: String
        var start: UInt64
        var end: UInt64
        var acknowledged: Bool
    }

    struct Read {
        var process: String
        var key: String
        var value: String?
        var start: UInt64
    }

    /// The writes and reads of one log, with the line of anything malformed.
    static func parse(_ text: String, writes: inout [String: [String: Write]], reads: inout [Read]) throws {
        for (number, line) in text.split(separator: "\n").enumerated() {
            let fields = line.split(separator: " ").map(String.init)
            if fields.count == 7, fields[0] == "W", let start = UInt64(fields[4]), let end = UInt64(fields[5]) {
                writes[fields[2], default: [:]][fields[3]] = Write(
                    process: fields[1],
                    value: fields[3],
                    start: start,
                    end: end,
                    acknowledged: fields[6] == "ok"
                )
            } else if fields.count == 6, fields[0] == "R", let start = UInt64(fields[4]) {
                reads.append(
                    Read(process: fields[1], key: fields[2], value: fields[3] == "-" ? nil : fields[3], start: start)
                )
            } else {
                throw HelperProcess.Failure(description: "log line \(number + 1) is malformed: \(line)")
            }
        }
    }

    /// The reads that returned a value older than a write acknowledged before they began (see
    /// the suite's rule), or a value nobody wrote.
    static func staleReads(writes: [String: [String: Write]], reads: [Read]) -> [String] {
        var stale: [String] = []
        for read in reads {
            guard let value = read.value else { continue }
            guard let write = writes[read.key]?[value] else {
                stale.append("\(read.key) read \(value), which nobody wrote")
                continue
            }
            // A failed write may have reached the server: it is never superseded by time alone.
            let written = write.acknowledged ? write.end : UInt64.max
            let newer = writes[read.key]!.values.first { other in
                let known = other.process == read.process ? other.end : other.end &+ crossProcessDelay
                return other.acknowledged && other.start > written && known < read.start
            }
            if let newer {
                stale.append(
                    "\(read.process) read \(read.key) = \(value) at \(read.start), after "
                        + "\(newer.value) was acknowledged at \(newer.end)"
                )
            }
        }
        return stale
    }

    @Test func noReadIsOlderThanAnAcknowledgedWriteThroughRestarts() async throws {
        let server = try await RedisServer.start(persistent: true)
        defer { server.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cachekit-chaos-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let operations = 3_000
        let processes = try ["a", "b"].enumerated().map { index, id in
            try HelperProcess([
                "--chaos", "\(server.port)", "chaos:", "tracking", id, "2", "2", "\(operations)", "100",
                "\(index + 1)", directory.appendingPathComponent("\(id).log").path,
            ])
        }
        defer { for process in processes { process.stop() } }
        for process in processes { #expect(try await process.nextLine() == "ready") }

        // As the first process passes these counts of operations, drop every connection that
        // receives invalidations (the server and the other connections stay up, so writes go on
        // while the near caches are deaf), or kill the server and restart it.
        let admin = RedisClient(configuration: server.configuration())
        defer { Task { await admin.close() } }
        var faults: [(at: Int, restart: Bool)] = [
            (400, false), (800, true), (1_200, false), (1_600, true), (2_000, false), (2_400, true),
        ]
        var dropped = 0
        var restarts = 0
        while true {
            let line = try await processes[0].nextLine()
            if line == "done" { break }
            guard line.hasPrefix("progress "), let done = Int(line.dropFirst("progress ".count)) else { continue }
            guard let fault = faults.first, done >= fault.at else { continue }
            faults.removeFirst()
            if fault.restart {
                server.stop(signal: SIGKILL)
                try await server.restart()
                restarts += 1
            } else {
                dropped += try await Self.dropInvalidationConnections(admin, expected: processes.count)
            }
        }
        while try await processes[1].nextLine() != "done" {}
        #expect(restarts == 3)
        #expect(dropped >= 3 * processes.count, "each drop closes the connection of each process")

        var writes: [String: [String: Write]] = [:]
        var reads: [Read] = []
        for id in ["a", "b"] {
            let text = try String(contentsOf: directory.appendingPathComponent("\(id).log"), encoding: .utf8)
            try Self.parse(text, writes: &writes, reads: &reads)
        }
        #expect(reads.count + writes.values.reduce(0) { $0 + $1.count } == 2 * operations)
        let answered = reads.filter { $0.value != nil }
        #expect(answered.count > reads.count / 4, "most reads must be answered: \(answered.count) of \(reads.count)")
        let stale = Self.staleReads(writes: writes, reads: reads)
        let acknowledged = writes.values.reduce(0) { $0 + $1.values.filter(\.acknowledged).count }
        #expect(acknowledged > operations / 2, "most writes must be acknowledged: \(acknowledged)")
        #expect(stale.isEmpty, "\(stale.count) stale reads, the first: \(stale.prefix(5))")
    }

    /// Closes every connection that receives invalidations (tracking, or subscribed to a channel),
    /// as a network fault would, once there are at least `expected` (each process's is connected
    /// again after an earlier fault); returns how many it closed.
    static func dropInvalidationConnections(_ admin: RedisClient, expected: Int) async throws -> Int {
        var ids: [String] = []
        for _ in 0..<500 {
            ids = []
            if let text = (try? await admin.send("CLIENT", ["LIST"]))?.string {
                for line in text.split(separator: "\n") {
                    var fields: [Substring: Substring] = [:]
                    for field in line.split(separator: " ") {
                        let parts = field.split(separator: "=", maxSplits: 1)
                        if parts.count == 2 { fields[parts[0]] = parts[1] }
                    }
                    let tracking = fields["flags"]?.contains("t") ?? false
                    let subscribed = (fields["sub"].flatMap { Int($0) } ?? 0) > 0
                    if tracking || subscribed, let id = fields["id"] { ids.append(String(id)) }
                }
            }
            if ids.count >= expected { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        for id in ids { _ = try await admin.send("CLIENT", ["KILL", "ID", RedisArgument(id)]) }
        return ids.count
    }

    @Test func theCheckFindsAStaleRead() throws {
        var writes: [String: [String: Write]] = [:]
        var reads: [Read] = []
        try Self.parse(
            """
            W a k a-0-1 10 20 ok
            W a k a-0-2 30 40 ok
            W a k a-0-3 50 60 failed
            R a k a-0-1 25 26
            R a k a-0-2 45 46
            R a k a-0-1 45 46
            R b k a-0-1 45 46
            R b k a-0-1 50000041 50000042
            R a k a-0-3 100 101
            R a k a-0-9 100 101
            R a k - 100 101
            """,
            writes: &writes,
            reads: &reads
        )
        let stale = Self.staleReads(writes: writes, reads: reads)
        // Process a read a-0-1 after its own a-0-2 was acknowledged; process b did so more than
        // the allowance after it.
        #expect(stale.count == 3)
        #expect(stale.first?.contains("a read k = a-0-1 at 45, after a-0-2") == true)
        #expect(stale.dropFirst().first?.contains("b read k = a-0-1 at 50000041") == true)
        #expect(stale.last?.contains("nobody wrote") == true)
    }
}
#endif
