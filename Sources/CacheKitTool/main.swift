import CacheKitBenchSupport
import CacheKitSimulator
import Foundation

// cachekit: CacheKit's command-line tool. Subcommands: simulate (the default) and bench.
let usage = """
    usage: cachekit [simulate|bench|help] [options]

    subcommands:
      simulate  replay a trace or a built-in workload through every eviction policy and OPT,
                and recommend a policy (the default)
      bench     ns/op of CacheKit's caches against Dictionary and NSCache
                bench --memory: bytes per entry
                bench --stores: the disk and SQLite stores against plain file and SQLite calls
                bench --redis: the Redis store and a near cache against one GET round trip

    Run `cachekit simulate --help` or `cachekit bench --help` for the options.
    """

var arguments = Array(CommandLine.arguments.dropFirst())
let subcommands: Set = ["simulate", "bench", "help"]
// A first argument that is not a subcommand (an option, or a trace file) goes to simulate. A bare
// word that names no file and does not look like a path is a mistyped subcommand instead.
if let first = arguments.first, !subcommands.contains(first), !first.hasPrefix("-"),
    !first.contains("/"), !first.contains("."), !FileManager.default.fileExists(atPath: first)
{
    let message = "cachekit: unknown subcommand '\(TraceError.escaped(first))'\n\n\(usage)\n"
    FileHandle.standardError.write(Data(message.utf8))
    exit(2)
}
let subcommand =
    ["--help", "-h"].contains(arguments.first ?? "")
    ? "help" : arguments.first.flatMap { subcommands.contains($0) ? $0 : nil } ?? "simulate"
if arguments.first == subcommand { arguments.removeFirst() }

do {
    switch subcommand {
    case "simulate":
        try Simulate.run(arguments)
    case "bench":
        try Bench.run(arguments)
    case "help":
        print(usage)
    default:
        throw Arguments.Failure(description: "unknown subcommand '\(TraceError.escaped(subcommand))'")
    }
} catch let error as TraceError {
    FileHandle.standardError.write(Data("cachekit: \(error)\n".utf8))
    exit(1)
} catch {
    // The usage of the subcommand whose options were wrong.
    let help =
        switch subcommand {
        case "simulate": Simulate.usage
        case "bench" where arguments.contains("--stores"): StoreBench.usage
        case "bench" where arguments.contains("--redis"): RedisBench.usage
        case "bench": Bench.usage
        default: usage
        }
    FileHandle.standardError.write(Data("cachekit: \(error)\n\n\(help)\n".utf8))
    exit(2)
}
