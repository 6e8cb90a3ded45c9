import CacheKitBenchSupport
import CacheKitSimulator
import Foundation

// CacheKitLab: instruments that explain CacheKit's performance figures (not a product; run from
// the package folder with `swift run -c release CacheKitLab SUBCOMMAND`).
let usage = """
    usage: CacheKitLab sketches|scaling|line-transfer [options]

      sketches       minimal LRU designs beside Dictionary and Cache: what the layout and the lock cost
      scaling        read90 throughput of SharedCache variants on 1 and 2 threads
      line-transfer  how long a cache line takes to move between two threads' cores

    Run `CacheKitLab SUBCOMMAND --help` for the options.
    """

let lineTransferUsage = """
    usage: CacheKitLab line-transfer [--ops N] [--repetitions N] [--json]

    Two threads pass a counter back and forth --ops times (default 1_000_000); prints the median
    one-way time of --repetitions runs (default 5) and their range.
    """

var arguments = Array(CommandLine.arguments.dropFirst())
let subcommand = arguments.isEmpty ? "help" : arguments.removeFirst()
do {
    switch subcommand {
    case "sketches":
        try LabBench.sketches(arguments)
    case "scaling":
        try LabBench.scaling(arguments)
    case "line-transfer":
        let args = try Arguments(arguments, valueFlags: ["ops", "repetitions"], booleanFlags: ["json", "help"])
        if args.flag("help") {
            print(lineTransferUsage)
        } else {
            LineTransfer.run(
                repetitions: try args.int("repetitions", default: 5),
                rounds: try args.int("ops", default: 1_000_000, maximum: 1 << 30),
                json: args.flag("json")
            )
        }
    case "help", "--help", "-h":
        print(usage)
    default:
        throw Arguments.Failure(description: "unknown subcommand '\(TraceError.escaped(subcommand))'")
    }
} catch {
    FileHandle.standardError.write(Data("CacheKitLab: \(error)\n\n\(usage)\n".utf8))
    exit(2)
}
