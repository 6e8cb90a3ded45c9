#if Redis
import CacheKitRedis
import Testing

@Suite(.enabled(if: RedisServer.shouldRun, RedisServer.skipMessage))
struct RedisPushConnectionTests {
    static let tracking: [RedisArgument] = ["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "app:"]

    @Test func trackingInvalidationsArriveAndComeBackAfterARestart() async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        let push = RedisPushConnection(configuration: server.configuration(), setup: [Self.tracking])
        let events = PushEventRecorder(push)
        let client = RedisClient(configuration: server.configuration())

        let armed = try #require(await events.waitFor { $0.isArmed })
        try await client.set("app:x", to: [1])
        try await client.set("other:y", to: [1])
        let first = await events.waitFor(after: armed) { $0 == .invalidate(keys: ["app:x"]) }
        #expect(first != nil)
        _ = try await client.send("FLUSHALL", [])
        #expect(await events.waitFor(after: armed) { $0 == .invalidate(keys: nil) } != nil)
        #expect(!events.all.contains(.invalidate(keys: ["other:y"])))

        server.crash()
        let lost = try #require(await events.waitFor(after: armed) { $0.isDisconnected })
        try await server.restart()
        let rearmed = try #require(await events.waitFor(after: lost) { $0.isArmed })
        try await eventually { () async throws(RedisError) in try await client.set("app:z", to: [2]) }
        #expect(await events.waitFor(after: rearmed) { $0 == .invalidate(keys: ["app:z"]) } != nil)

        await push.close()
        await client.close()
    }

    @Test func repliesAndPushesInterleavedOnOneConnectionGoTheirOwnWays() async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        let push = RedisPushConnection(configuration: server.configuration(), setup: [Self.tracking])
        let events = PushEventRecorder(push)
        try #require(await events.waitFor { $0.isArmed } != nil)
        // Without NOLOOP the connection's own writes are invalidated to it, between its replies.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<50 {
                group.addTask {
                    let key = RedisArgument("app:\(index)")
                    let set = try await push.send("SET", [key, "v"])
                    let get = try await push.send("GET", [key])
                    #expect(set == .simpleString("OK") && get == .blobString(Array("v".utf8)))
                }
            }
            try await group.waitForAll()
        }
        // In BCAST mode the server gathers the keys written in one pass of its event loop into one push.
        let expected = Set((0..<50).map { "app:\($0)" })
        var invalidated = Set<String>()
        let deadline = ContinuousClock.now + .seconds(60)
        while !invalidated.isSuperset(of: expected) && ContinuousClock.now < deadline {
            for case .invalidate(let keys?) in events.all { invalidated.formUnion(keys) }
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(invalidated.isSuperset(of: expected))
        await push.close()
    }

    @Test(arguments: [RedisProtocolVersion.automatic, .resp2])
    func pubSubMessagesArrive(_ version: RedisProtocolVersion) async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        let push = RedisPushConnection(
            configuration: server.configuration { $0.protocolVersion = version },
            setup: [["SUBSCRIBE", "news", "sport"], ["PSUBSCRIBE", "log:*"]],
            pingInterval: .milliseconds(50)
        )
        let events = PushEventRecorder(push)
        let client = RedisClient(configuration: server.configuration())
        try #require(await events.waitFor { $0.isArmed } != nil)
        #expect(try await client.publish("news", Array("hello".utf8)) == 1)
        #expect(try await client.publish("log:disk", Array("full".utf8)) == 1)
        #expect(await events.waitFor { $0 == .message(channel: "news", payload: Array("hello".utf8)) } != nil)
        #expect(await events.waitFor { $0 == .message(channel: "log:disk", payload: Array("full".utf8)) } != nil)
        // Pings answered while subscribed (RESP2 answers them with ["pong", ""]) keep it armed.
        let before = events.count
        let pinged = try await push.send("PING", [])
        #expect(pinged == .simpleString("PONG") || pinged.elements?.first?.string == "pong")
        try await Task.sleep(for: .milliseconds(300))
        #expect(!events.all.dropFirst(before).contains { $0.isDisconnected })
        await push.close()
        await client.close()
    }

    @Test func anUnansweredPingCountsAsALoss() async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        let push = RedisPushConnection(
            configuration: server.configuration { $0.commandTimeout = .milliseconds(250) },
            setup: [Self.tracking],
            pingInterval: .milliseconds(100)
        )
        let events = PushEventRecorder(push)
        let armed = try #require(await events.waitFor { $0.isArmed })
        let client = RedisClient(configuration: server.configuration())
        // The server sleeps: the connection stays open but nothing answers.
        _ = try await client.send("DEBUG", ["SLEEP", "2"])
        let lost = try #require(await events.waitFor(after: armed) { $0.isDisconnected })
        guard case .disconnected(.timeout(let command, _)) = events.all[lost] else {
            Issue.record("expected a ping timeout, got \(events.all[lost])")
            return
        }
        #expect(command == "PING")
        #expect(await events.waitFor(after: lost) { $0.isArmed } != nil)
        await push.close()
        await client.close()
    }

    @Test func closingFinishesTheEvents() async throws {
        let push = RedisPushConnection(configuration: RedisConfiguration(port: try RedisServer.freePort()), setup: [])
        await push.close()
        var iterator = push.events.makeAsyncIterator()
        while await iterator.next() != nil {}
        await #expect(throws: RedisError.closed) { _ = try await push.send("PING", []) }
    }
}
#endif
