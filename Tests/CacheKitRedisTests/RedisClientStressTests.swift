#if Redis
import CacheKitRedis
import Testing

/// Many tasks sending on one shared client at once; run under ThreadSanitizer in CI.
@Suite(.enabled(if: RedisServer.shouldRun, RedisServer.skipMessage))
struct RedisClientStressTests {
    @Test func concurrentCommandsOnASharedClient() async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        let client = RedisClient(configuration: server.configuration { $0.poolSize = 3 })
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<16 {
                group.addTask {
                    for step in 0..<100 {
                        let key = "stress:\(worker):\(step % 10)"
                        let value = Array("\(worker)-\(step)".utf8)
                        try await client.set(key, to: value)
                        #expect(try await client.get(key) == value)
                        let echo = try await client.send("ECHO", [RedisArgument(value)])
                        #expect(echo == .blobString(value))
                    }
                }
            }
            try await group.waitForAll()
        }
        await client.close()
    }

    @Test func closingWhileCommandsRunNeverHangs() async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        let client = RedisClient(configuration: server.configuration())
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for step in 0..<50 {
                        _ = try? await client.send("ECHO", [RedisArgument("\(worker):\(step)")])
                    }
                }
            }
            group.addTask { await client.close() }
        }
        await #expect(throws: RedisError.closed) { try await client.ping() }
    }
}
#endif
