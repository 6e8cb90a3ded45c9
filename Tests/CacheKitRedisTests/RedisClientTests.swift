#if Redis
import CacheKitRedis
import Testing

@Suite(.enabled(if: RedisServer.shouldRun, RedisServer.skipMessage))
struct RedisClientTests {
    @Test func stringCommands() async throws {
        let server = try await RedisServer.start()
        let client = RedisClient(configuration: server.configuration())
        defer { server.stop() }
        try await client.ping()
        try await client.set("greeting", to: Array("hello".utf8))
        #expect(try await client.get("greeting") == Array("hello".utf8))
        #expect(try await client.get("missing") == nil)
        #expect(try await client.mget(["greeting", "missing"]) == [Array("hello".utf8), nil])
        try await client.set("binary", to: [0, 13, 10, 255])
        #expect(try await client.get("binary") == [0, 13, 10, 255])
        #expect(try await client.del(["greeting", "missing"]) == 1)
        #expect(try await client.get("greeting") == nil)
        #expect(try await client.unlink(["binary"]) == 1)
        #expect(try await client.send("HINCRBY", ["counters", "hits", 5]) == .integer(5))
        await client.close()
    }

    @Test func expiration() async throws {
        let server = try await RedisServer.start()
        let client = RedisClient(configuration: server.configuration())
        defer { server.stop() }
        try await client.set("short", to: [1], expiresAfter: .microseconds(10))
        try await client.set("long", to: [1], expiresAfter: .seconds(100))
        guard case .integer(let ttl) = try await client.send("PTTL", ["long"]) else {
            Issue.record("PTTL must answer an integer")
            return
        }
        #expect(ttl > 90_000 && ttl <= 100_000)
        #expect(try await client.expire("long", after: .milliseconds(1500)))
        #expect(try await client.expire("nothing", after: .seconds(1)) == false)
        guard case .integer(let shorter) = try await client.send("PTTL", ["long"]) else { return }
        #expect(shorter > 0 && shorter <= 1500)
        await client.close()
    }

    @Test func scanVisitsEveryKey() async throws {
        let server = try await RedisServer.start()
        let client = RedisClient(configuration: server.configuration())
        defer { server.stop() }
        for index in 0..<250 {
            try await client.set("scan:\(index)", to: [UInt8(index % 256)])
        }
        try await client.set("other", to: [0])
        var seen = Set<String>()
        var cursor = "0"
        var steps = 0
        repeat {
            let page = try await client.scan(cursor: cursor, match: "scan:*", count: 50)
            seen.formUnion(page.keys)
            cursor = page.cursor
            steps += 1
        } while cursor != "0" && steps < 1000
        #expect(seen == Set((0..<250).map { "scan:\($0)" }))
        await client.close()
    }

    @Test func publishCountsSubscribers() async throws {
        let server = try await RedisServer.start()
        let client = RedisClient(configuration: server.configuration())
        defer { server.stop() }
        #expect(try await client.publish("nobody", [1, 2]) == 0)
        await client.close()
    }

    @Test func pipelinedRepliesMatchTheirCommands() async throws {
        let server = try await RedisServer.start()
        let client = RedisClient(configuration: server.configuration { $0.poolSize = 1 })
        defer { server.stop() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<500 {
                group.addTask {
                    let reply = try await client.send("ECHO", [RedisArgument("value \(index)")])
                    #expect(reply == .blobString(Array("value \(index)".utf8)))
                }
            }
            try await group.waitForAll()
        }
        await client.close()
    }

    @Test(arguments: [RedisProtocolVersion.automatic, .resp3, .resp2])
    func protocolVersions(_ version: RedisProtocolVersion) async throws {
        let server = try await RedisServer.start()
        let client = RedisClient(configuration: server.configuration { $0.protocolVersion = version })
        defer { server.stop() }
        let info = try await client.send("CLIENT", ["INFO"]).string ?? ""
        #expect(info.contains(version == .resp2 ? "resp=2" : "resp=3"))
        try await client.set("k", to: [1])
        #expect(try await client.mget(["k", "none"]) == [[1], nil])
        let hash = try await client.send("HGETALL", ["nothing"])
        #expect(hash == (version == .resp2 ? .array([]) : .map([:])))
        await client.close()
    }

    @Test(arguments: [RedisProtocolVersion.automatic, .resp2])
    func authentication(_ version: RedisProtocolVersion) async throws {
        let server = try await RedisServer.start(password: "s3cret")
        defer { server.stop() }
        let client = RedisClient(configuration: server.configuration { $0.protocolVersion = version })
        try await client.ping()
        await client.close()

        let named = RedisClient(
            configuration: server.configuration {
                $0.protocolVersion = version
                $0.username = "default"
            }
        )
        try await named.ping()
        await named.close()

        let wrong = RedisClient(configuration: server.configuration { $0.password = "wrong" })
        await #expect(
            throws: RedisError.server(message: "WRONGPASS invalid username-password pair or user is disabled.")
        ) {
            try await wrong.ping()
        }
        await wrong.close()

        let anonymous = RedisClient(
            configuration: server.configuration {
                $0.password = nil
                $0.protocolVersion = .resp2
            }
        )
        await #expect(throws: RedisError.server(message: "NOAUTH Authentication required.")) {
            try await anonymous.ping()
        }
        await anonymous.close()
    }

    @Test func selectsTheDatabase() async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        let three = RedisClient(configuration: server.configuration { $0.database = 3 })
        let zero = RedisClient(configuration: server.configuration())
        try await three.set("where", to: Array("three".utf8))
        #expect(try await three.get("where") == Array("three".utf8))
        #expect(try await zero.get("where") == nil)
        await three.close()
        await zero.close()
    }

    @Test func errorRepliesKeepTheirText() async throws {
        let server = try await RedisServer.start()
        // One connection: MULTI and EXEC must go to the same one.
        let client = RedisClient(configuration: server.configuration { $0.poolSize = 1 })
        defer { server.stop() }
        _ = try await client.send("LPUSH", ["list", "a"])
        await #expect(
            throws: RedisError.server(message: "WRONGTYPE Operation against a key holding the wrong kind of value")
        ) {
            try await client.get("list")
        }
        // An error inside an aggregate reply is a value.
        _ = try await client.send("MULTI", [])
        _ = try await client.send("SET", ["plain", "1"])
        _ = try await client.send("LPOP", ["plain"])
        let results = try await client.send("EXEC", [])
        #expect(
            results
                == .array([
                    .simpleString("OK"), .error("WRONGTYPE Operation against a key holding the wrong kind of value"),
                ])
                || results == .array([.error("WRONGTYPE Operation against a key holding the wrong kind of value")])
        )
        // The connection stays usable.
        try await client.ping()
        await client.close()
    }

    @Test func aSlowReplyTimesOutAndClosesItsConnection() async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        let client = RedisClient(
            configuration: server.configuration {
                $0.poolSize = 1
                $0.commandTimeout = .milliseconds(200)
            }
        )
        // The timeout error itself shows the command did not wait for the reply.
        await #expect(throws: RedisError.timeout(command: "DEBUG", after: .milliseconds(200))) {
            _ = try await client.send("DEBUG", ["SLEEP", "0.6"])
        }
        // Once the server is awake, a new connection answers.
        try await eventually { () async throws(RedisError) in try await client.ping() }
        await client.close()
    }

    @Test func aLostServerFailsCommandsInFlightAndIsReconnectedLater() async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        let client = RedisClient(configuration: server.configuration { $0.poolSize = 1 })
        try await client.set("before", to: [1])
        let blocked = Task { () async throws(RedisError) -> RESPValue in
            try await client.send("BLPOP", ["never", "30"])
        }
        // The BLPOP is in flight once the server lists a blocked client.
        try await eventually { () async throws(RedisError) in
            let info = try await RedisClient(configuration: server.configuration()).send("INFO", ["clients"])
            guard info.string?.contains("blocked_clients:1") == true else { throw .closed }
        }
        server.crash()
        let result = await blocked.result
        guard case .failure(let error) = result, isConnectionClosed(error) else {
            Issue.record("an in-flight command must fail with connectionClosed, got \(result)")
            return
        }
        // While the server is down, commands fail (and never hang).
        await #expect(throws: RedisError.self) { try await client.ping() }
        try await server.restart()
        try await eventually { () async throws(RedisError) in try await client.ping() }
        #expect(try await client.get("before") == nil)
        await client.close()
    }

    @Test func anOpenConnectionServesWhileAnotherBacksOff() async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        server.stop()
        let client = RedisClient(
            configuration: server.configuration {
                $0.poolSize = 2
                $0.reconnectBackoff = RedisBackoff(initial: .seconds(60), maximum: .seconds(60))
            }
        )
        // The first connection fails and backs off for a minute.
        await #expect(throws: RedisError.self) { try await client.ping() }
        try await server.restart()
        // The second opens; every command then goes to it.
        for _ in 0..<6 {
            try await client.ping()
        }
        await client.close()
    }

    @Test func aClosedClientRefusesCommands() async throws {
        let client = RedisClient(configuration: RedisConfiguration(port: 1))
        await client.close()
        await #expect(throws: RedisError.closed) { try await client.ping() }
    }

    @Test func anUnreachableServerFailsFastWhileBackingOff() async throws {
        let port = try RedisServer.freePort()
        let client = RedisClient(
            configuration: RedisConfiguration(
                port: port,
                reconnectBackoff: RedisBackoff(initial: .seconds(30), maximum: .seconds(30))
            )
        )
        for _ in 0..<3 {
            do {
                try await client.ping()
                Issue.record("nothing listens on port \(port)")
            } catch {
                guard case .connectionFailed = error else {
                    Issue.record("expected connectionFailed, got \(error)")
                    return
                }
            }
        }
        await client.close()
    }
}
#endif
