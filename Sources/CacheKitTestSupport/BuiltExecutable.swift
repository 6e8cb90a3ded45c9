import Foundation

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
