// A Hummingbird server whose routes read items from a slow backend (5 ms a read) through a cache:
// CacheKit's persist driver, Hummingbird's MemoryPersistDriver, or a TieredCache over a DiskStore.
// `Scripts/load.sh` measures the routes with wrk. Not API.

import CacheKit
import CacheKitHummingbird
import CacheKitServiceLifecycle
import Foundation
import Hummingbird
import ServiceLifecycle

@main
struct ExampleServer {
    static func main() async throws {
        let options = try Options(CommandLine.arguments.dropFirst())
        let cachekit = CacheKitPersistDriver(countLimit: options.countLimit)
        let memory = MemoryPersistDriver()
        let storeDirectory = FileManager.default.temporaryDirectory
            .appendingPathComponent("CacheKitExampleServer-\(ProcessInfo.processInfo.processIdentifier)")
        defer { try? FileManager.default.removeItem(at: storeDirectory) }
        let store = try await DiskStore(directory: storeDirectory, byteLimit: 256 << 20)
        let tiered = TieredCache<String, String>(
            countLimit: options.countLimit,
            store: store,
            expiresAfter: options.lifetime,
            writeMode: .writeBehind(maximumPending: 1_024)
        )

        let router = Router()
        router.get("/health") { _, _ in "ok" }
        router.get("/cachekit/:id") { _, context in
            try await readThrough(cachekit, id: try context.parameters.require("id"), lifetime: options.lifetime)
        }
        router.get("/memory/:id") { _, context in
            try await readThrough(memory, id: try context.parameters.require("id"), lifetime: options.lifetime)
        }
        router.get("/tiered/:id") { _, context in
            try await tiered.value(forKey: try context.parameters.require("id"), loader: Backend.item)
        }

        let app = Application(
            router: router,
            configuration: .init(address: .hostname(options.hostname, port: options.port)),
            services: [
                cachekit, memory,
                CacheKitService([.sweeping(tiered.memory, every: .seconds(60)), .closing(tiered)]),
            ]
        )
        try await app.runService()
    }

    /// The item for `id` from `persist`, else from the backend, stored for `lifetime`.
    static func readThrough(_ persist: some PersistDriver, id: String, lifetime: Duration) async throws -> String {
        if let item = try await persist.get(key: id, as: String.self) { return item }
        let item = try await Backend.item(id)
        try await persist.set(key: id, value: item, expires: lifetime)
        return item
    }
}

/// A backend that takes 5 ms per read.
enum Backend {
    @Sendable static func item(_ id: String) async throws -> String {
        try await Task.sleep(for: .milliseconds(5))
        return "item \(id): " + String(repeating: "x", count: 200)
    }
}

/// The command line: `--hostname H --port P --count-limit N --lifetime SECONDS`.
struct Options {
    var hostname = "127.0.0.1"
    var port = 8080
    var countLimit = 100_000
    var lifetime = Duration.seconds(300)

    init(_ arguments: ArraySlice<String>) throws {
        var arguments = arguments
        while let name = arguments.popFirst() {
            guard let value = arguments.popFirst() else { throw UsageError(message: "\(name) needs a value") }
            switch name {
            case "--hostname": hostname = value
            case "--port": port = try Self.integer(value, for: name)
            case "--count-limit": countLimit = try Self.integer(value, for: name)
            case "--lifetime": lifetime = .seconds(try Self.integer(value, for: name))
            default: throw UsageError(message: "unknown option \(name)")
            }
        }
    }

    static func integer(_ text: String, for name: String) throws -> Int {
        guard let value = Int(text), value > 0 else { throw UsageError(message: "\(name) needs a positive integer") }
        return value
    }
}

struct UsageError: Error, CustomStringConvertible {
    var message: String
    var description: String {
        "\(message)\nusage: CacheKitExampleServer [--hostname H] [--port P] [--count-limit N] [--lifetime SECONDS]"
    }
}
