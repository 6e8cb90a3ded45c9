import Foundation

// cachekit: CacheKit's command-line tool. Subcommands: bench (the default for now).
let usage = """
    usage: cachekit [bench] [options]

    subcommands:
      bench   ns/op of CacheKit's caches against Dictionary and NSCache (default)
              bench --memory: bytes per entry

    Run `cachekit bench --help` for the options.
    """

var arguments = Array(CommandLine.arguments.dropFirst())
let subcommand = arguments.first.flatMap { $0.hasPrefix("-") ? nil : $0 } ?? "bench"
if arguments.first == subcommand { arguments.removeFirst() }

do {
    switch subcommand {
    case "bench":
        try Bench.run(arguments)
    case "help":
        print(usage)
    default:
        throw Arguments.Failure(description: "unknown subcommand '\(subcommand)'")
    }
} catch {
    FileHandle.standardError.write(Data("cachekit: \(error)\n\n\(usage)\n".utf8))
    exit(2)
}
