import CacheKit
import CacheKitBenchSupport
import CacheKitSimulator
import Foundation

#if os(Linux)
import _CacheKitToolShims
#endif

/// `cachekit bench --memory`: bytes per entry, as growth of the resident set while N `Int`-to-`Int`
/// entries are held, for each cache and for `Dictionary` and `NSCache`.
enum MemoryBench {
    struct Result: Codable {
        var subject: String
        var policy: String
        var entries: Int
        var bytesPerEntry: Double
    }

    /// The subjects `--memory` measures.
    static let subjects = ["Dictionary", "Cache", "SerialCache", "NSCache"]

    /// Measures each of `subjects` holding `entries` entries; `Cache` with each of `policies`,
    /// `SerialCache` with each of `serialPolicies`.
    static func run(
        entries: Int,
        json: Bool,
        subjects chosen: [String] = subjects,
        policies: [EvictionPolicy] = EvictionPolicy.allCases,
        serialPolicies: [EvictionPolicy] = [.lru]
    ) throws {
        #if os(Linux)
        warnIfDebug()
        // Each subject is measured in a fresh child process: in one process, the allocator keeps
        // memory freed by the previous structure (and by each doubling) and skews the next figure.
        var results: [Result] = []
        let subjects =
            [("Dictionary", "")] + policies.map { ("Cache", $0.name) }
            + serialPolicies.map { ("SerialCache", $0.name) } + [("NSCache", "")]
        for (subject, policy) in subjects where chosen.contains(subject) {
            results.append(try measureInChild(subject, policy, entries))
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(results), as: UTF8.self))
            return
        }
        print("cachekit bench --memory: resident-set growth holding \(entries) Int->Int entries")
        let baseline = results.first { $0.subject == "Dictionary" }?.bytesPerEntry ?? .nan
        printAligned(
            header: ["subject", "policy", "bytes/entry", "vs Dictionary"],
            rows: results.map { r in
                [
                    r.subject, r.policy, String(format: "%.1f", r.bytesPerEntry),
                    baseline.isNaN ? "-" : String(format: "%.2fx", r.bytesPerEntry / baseline),
                ]
            },
            rightAligned: [2, 3]
        )
        #else
        print("cachekit bench --memory reads the resident set from /proc and runs on Linux only.")
        #endif
    }

    /// Runs `cachekit bench --memory-one SUBJECT:POLICY --entries N` and reads its figure.
    private static func measureInChild(_ subject: String, _ policy: String, _ n: Int) throws -> Result {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        child.arguments = ["bench", "--memory-one", "\(subject):\(policy)", "--entries", "\(n)"]
        var environment = ProcessInfo.processInfo.environment
        environment[parentVariable] = String(ProcessInfo.processInfo.processIdentifier)
        child.environment = environment
        let pipe = Pipe()
        child.standardOutput = pipe
        try child.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        child.waitUntilExit()
        guard child.terminationStatus == 0,
            let bytes = Double(String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            throw Arguments.Failure(
                description: "measuring \(subject) \(policy) failed (exit \(child.terminationStatus))"
            )
        }
        return Result(subject: subject, policy: policy, entries: n, bytesPerEntry: bytes)
    }

    /// Names, in a measuring child's environment, the process that started it.
    private static let parentVariable = "CACHEKIT_MEMORY_PARENT"

    /// In a child that `measureInChild` started: makes it end with its parent, whichever way the
    /// parent ends (a SIGKILL included), so that no child goes on filling memory for no one. On
    /// Linux the kernel kills the child when the thread that started it exits (the main thread
    /// here); if the parent is already gone, the child exits at once. Elsewhere, nothing.
    private static func endWithParent() {
        #if os(Linux)
        guard let parent = ProcessInfo.processInfo.environment[parentVariable].flatMap(Int32.init) else { return }
        _ = _cachekit_die_with_parent()
        if getppid() != parent { exit(1) }
        #endif
    }

    /// In the child: builds one structure of `n` entries and prints its resident-set growth per entry.
    static func runOne(_ spec: String, entries n: Int) throws {
        endWithParent()
        let parts = spec.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2 else { throw Arguments.Failure(description: "--memory-one wants SUBJECT:POLICY") }
        let policy = EvictionPolicy(name: parts[1]) ?? .lru
        let before = residentBytes()
        let structure: Any
        switch parts[0] {
        case "Dictionary":
            var d: [Int: Int] = [:]
            for i in 0..<n { d[i] = i }
            structure = d
        case "Cache":
            let c = Cache<Int, Int>(policy: policy)
            for i in 0..<n { c[i] = i }
            structure = c
        case "SerialCache":
            let c = SerialCache<Int, Int>(policy: policy)
            for i in 0..<n { c[i] = i }
            structure = c
        case "NSCache":
            let c = NSCache<NSNumber, NSNumber>()
            for i in 0..<n { c.setObject(NSNumber(value: i), forKey: NSNumber(value: i)) }
            structure = c
        default:
            throw Arguments.Failure(description: "--memory-one: unknown subject '\(TraceError.escaped(parts[0]))'")
        }
        let after = residentBytes()
        withExtendedLifetime(structure) {}
        print(Double(after - before) / Double(n))
    }

    /// The resident set size, from /proc/self/statm (second field, in pages).
    private static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
