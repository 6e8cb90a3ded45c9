import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The executable `name` of this package, built next to the test bundle (the test target depends
/// on it so that SwiftPM builds it first), or `nil` when it cannot be found.
package func builtExecutable(named name: String, filePath: String = #filePath) -> URL? {
    var candidates: [URL] = []
    if let executable = Bundle.main.executableURL { candidates.append(executable.deletingLastPathComponent()) }
    candidates.append(URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent())
    candidates.append(Bundle.main.bundleURL.deletingLastPathComponent())
    let package = URL(fileURLWithPath: filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    candidates.append(package.appendingPathComponent(".build/debug"))
    return candidates.map { $0.appendingPathComponent(name) }
        .first { FileManager.default.isExecutableFile(atPath: $0.path) }
}

/// `CacheKitTestHelper`, the second process of the tests (crash loops, a near cache over Redis).
package let testHelper = builtExecutable(named: "CacheKitTestHelper")

/// Why a test that runs `CacheKitTestHelper` is skipped.
package let testHelperMissing = "CacheKitTestHelper not found next to the test bundle; build it first"

/// How a run of ``killedAfterSignal(_:_:signal:pause:using:)`` ended.
package enum KilledRun {
    /// The helper gave its signal and was killed with SIGKILL; `bySignal` says whether a signal
    /// ended it (rather than an exit of its own before the kill landed).
    case killed(bySignal: Bool)
    /// The helper printed something else first, or nothing; `errors` is its standard error.
    case failedEarly(errors: String)
}

/// Runs `helper` with `arguments`, waits for its first output to start with `signal` (the
/// helper's "ready"), lets it run a random `pause` of microseconds more, and kills it with
/// SIGKILL: the crash loop of the persistence and store crash tests.
package func killedAfterSignal(
    _ helper: URL,
    _ arguments: [String],
    signal: String,
    pause: ClosedRange<UInt32>,
    using generator: inout some RandomNumberGenerator
) throws -> KilledRun {
    let (process, output, errors) = try start(helper, arguments)
    let first = output.fileHandleForReading.availableData
    guard String(decoding: first, as: UTF8.self).hasPrefix(signal) else {
        process.waitUntilExit()
        return .failedEarly(errors: String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
    }
    usleep(UInt32.random(in: pause, using: &generator))
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
    return .killed(bySignal: process.terminationReason == .uncaughtSignal)
}

/// Runs `executable` with `arguments` to its end; returns its exit status and what it printed
/// on standard output and on standard error (each read to its end, output first).
package func runToEnd(
    _ executable: URL,
    _ arguments: [String]
) throws -> (status: Int32, output: String, errors: String) {
    let (process, output, errors) = try start(executable, arguments)
    let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    let reported = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return (process.terminationStatus, printed, reported)
}

/// Starts `executable` with `arguments`, its standard output and error each to a pipe.
private func start(_ executable: URL, _ arguments: [String]) throws -> (Process, Pipe, Pipe) {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    return (process, output, errors)
}
