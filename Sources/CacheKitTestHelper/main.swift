// The one helper executable of CacheKit's tests: each subcommand is a second process that a test
// drives or kills (not a product). Usage: CacheKitTestHelper SUBCOMMAND ARGUMENTS…; each
// subcommand's file describes its arguments and output.
import Foundation

/// Writes `line` to standard output at once (unbuffered), so that a kill loses none of it.
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

let subcommands = "persistence-crash, disk-store-crash, sqlite-store-crash, redis"
let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "persistence-crash":
    persistenceCrash(arguments)
case "disk-store-crash":
    await diskStoreCrash(arguments)
#if SQLite
case "sqlite-store-crash":
    await sqliteStoreCrash(arguments)
#endif
#if Redis
case "redis":
    try await redisNearCache(arguments)
#endif
case let other?:
    FileHandle.standardError.write(
        Data("CacheKitTestHelper: '\(other)' is not a subcommand of this build (\(subcommands))\n".utf8)
    )
    exit(2)
case nil:
    FileHandle.standardError.write(Data("usage: CacheKitTestHelper SUBCOMMAND ARGUMENTS (\(subcommands))\n".utf8))
    exit(2)
}
