#if Redis
import CacheKitTestSupport
import Foundation
import Synchronization

/// A `CacheKitTestHelper redis` process: a second process with a near cache, driven a line at a time
/// (its commands are listed in `Sources/CacheKitTestHelper/RedisNearCache.swift`).
final class HelperProcess: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    /// The lines the helper has printed and no one has taken yet, and whether it has ended.
    private let received = Received()

    final class Received: Sendable {
        let state = Mutex<(lines: [String], ended: Bool)>(([], false))
        func withLock<T>(_ body: (inout (lines: [String], ended: Bool)) -> T) -> T { state.withLock { body(&$0) } }
    }

    /// The helper, built beside the test bundle (the test target depends on it).
    static var executable: URL? { testHelper }

    /// Starts the helper with `arguments`.
    init(_ arguments: [String]) throws {
        guard let executable = Self.executable else { throw Failure(description: testHelperMissing) }
        process.executableURL = executable
        process.arguments = ["redis"] + arguments
        process.standardInput = input
        process.standardOutput = output
        let handle = output.fileHandleForReading
        let received = received
        // A thread of its own reads the helper's output, so that no task blocks on it.
        Thread.detachNewThread {
            var pending = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    received.withLock { $0.lines.append(line) }
                    pending = Data(pending[(newline + 1)...])
                }
            }
            received.withLock { $0.ended = true }
        }
        try process.run()
    }

    /// The helper's next line of output; fails after 90 seconds or at its end.
    func nextLine() async throws -> String {
        for _ in 0..<90_000 {
            let (line, ended) = received.withLock { state -> (String?, Bool) in
                state.lines.isEmpty ? (nil, state.ended) : (state.lines.removeFirst(), false)
            }
            if let line { return line }
            if ended { break }
            try await Task.sleep(for: .milliseconds(1))
        }
        throw Failure(description: "the helper said nothing more")
    }

    /// Sends `command` and returns the helper's answer.
    func ask(_ command: String) async throws -> String {
        input.fileHandleForWriting.write(Data((command + "\n").utf8))
        return try await nextLine()
    }

    /// Ends the helper (quit, else SIGKILL) and waits for it.
    func stop() {
        if process.isRunning {
            try? input.fileHandleForWriting.write(contentsOf: Data("quit\n".utf8))
            try? input.fileHandleForWriting.close()
        }
        for _ in 0..<200 where process.isRunning { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}
#endif
