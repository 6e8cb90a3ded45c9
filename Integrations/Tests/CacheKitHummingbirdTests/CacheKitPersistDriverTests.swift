import CacheKit
import CacheKitHummingbird
import Foundation
import Hummingbird
import HummingbirdAuth
import HummingbirdTesting
import Testing

/// Hummingbird's persist behaviours (set, create, duplicates, expiry, time to live, codable
/// values, wrong types, removal), checked through routes against `CacheKitPersistDriver`, with a
/// `ManualClock` for time.
@Suite(.timeLimit(.minutes(1))) struct CacheKitPersistDriverTests {
    struct Note: Codable, Sendable, Equatable {
        var text: String
    }

    /// A router over `persist` with the routes Hummingbird's persist tests use.
    static func router(_ persist: some PersistDriver) -> Router<BasicRequestContext> {
        let router = Router()
        router.put("/persist/:tag") { request, context -> HTTPResponse.Status in
            let body = try await request.body.collect(upTo: .max)
            try await persist.set(key: try context.parameters.require("tag"), value: String(buffer: body))
            return .ok
        }
        router.put("/persist/:tag/:seconds") { request, context -> HTTPResponse.Status in
            let seconds = try context.parameters.require("seconds", as: Int.self)
            let body = try await request.body.collect(upTo: .max)
            let tag = try context.parameters.require("tag")
            try await persist.set(key: tag, value: String(buffer: body), expires: .seconds(seconds))
            return .ok
        }
        router.put("/create/:tag") { request, context -> HTTPResponse.Status in
            let body = try await request.body.collect(upTo: .max)
            do {
                try await persist.create(key: try context.parameters.require("tag"), value: String(buffer: body))
            } catch let error as PersistError where error == .duplicate {
                throw HTTPError(.conflict)
            }
            return .ok
        }
        router.get("/persist/:tag") { _, context -> String? in
            try await persist.get(key: try context.parameters.require("tag"), as: String.self)
        }
        router.get("/persist/:tag/ttl") { _, context -> String? in
            let found = try await persist.getWithTTL(key: try context.parameters.require("tag"), as: String.self)
            return found.map { $0.ttl.map { String($0.components.seconds) } ?? "none" }
        }
        router.delete("/persist/:tag") { _, context -> HTTPResponse.Status in
            try await persist.remove(key: try context.parameters.require("tag"))
            return .noContent
        }
        router.put("/note/:tag") { request, context -> HTTPResponse.Status in
            let body = try await request.body.collect(upTo: .max)
            try await persist.set(key: try context.parameters.require("tag"), value: Note(text: String(buffer: body)))
            return .ok
        }
        router.get("/note/:tag") { _, context -> String? in
            try await persist.get(key: try context.parameters.require("tag"), as: Note.self)?.text
        }
        router.get("/as-int/:tag") { _, context -> String? in
            do {
                return try await persist.get(key: try context.parameters.require("tag"), as: Int.self).map(String.init)
            } catch let error as PersistError where error == .invalidConversion {
                throw HTTPError(.badRequest)
            }
        }
        return router
    }

    static func body(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

    @Test func aValueSetReadsBack() async throws {
        let persist = CacheKitPersistDriver(countLimit: 100, clock: ManualClock())
        let app = Application(router: Self.router(persist))
        try await app.test(.router) { client in
            try await client.execute(uri: "/persist/a", method: .get) { #expect($0.status == .noContent) }
            try await client.execute(uri: "/persist/a", method: .put, body: Self.body("first")) { _ in }
            try await client.execute(uri: "/persist/a", method: .get) { #expect(String(buffer: $0.body) == "first") }
            try await client.execute(uri: "/persist/a", method: .put, body: Self.body("second")) { _ in }
            try await client.execute(uri: "/persist/a", method: .get) { #expect(String(buffer: $0.body) == "second") }
        }
    }

    @Test func createStoresOnceAndThenReportsADuplicate() async throws {
        let persist = CacheKitPersistDriver(countLimit: 100, clock: ManualClock())
        let app = Application(router: Self.router(persist))
        try await app.test(.router) { client in
            try await client.execute(uri: "/create/a", method: .put, body: Self.body("first")) {
                #expect($0.status == .ok)
            }
            try await client.execute(uri: "/create/a", method: .put, body: Self.body("second")) {
                #expect($0.status == .conflict)
            }
            try await client.execute(uri: "/persist/a", method: .get) { #expect(String(buffer: $0.body) == "first") }
        }
    }

    @Test func ofConcurrentCreatesOfOneKeyExactlyOneSucceeds() async throws {
        let persist = CacheKitPersistDriver(countLimit: 100, clock: ManualClock())
        let winners = await withTaskGroup(of: Int?.self) { group in
            for writer in 0..<64 {
                group.addTask {
                    do {
                        try await persist.create(key: "contested", value: writer, expires: nil)
                        return writer
                    } catch {
                        #expect(error as? PersistError == .duplicate)
                        return nil
                    }
                }
            }
            return await group.compactMap { $0 }.reduce(into: []) { $0.append($1) }
        }
        #expect(winners.count == 1)
        #expect(try await persist.get(key: "contested", as: Int.self) == winners.first)
    }

    @Test func createAfterExpiryStoresAgain() async throws {
        let clock = ManualClock()
        let persist = CacheKitPersistDriver(countLimit: 100, clock: clock)
        try await persist.create(key: "a", value: "first", expires: .seconds(10))
        clock.advance(by: .seconds(10))
        try await persist.create(key: "a", value: "second", expires: nil)
        #expect(try await persist.get(key: "a", as: String.self) == "second")
    }

    @Test func valuesExpireWhenTheClockPassesTheirLifetime() async throws {
        let clock = ManualClock()
        let persist = CacheKitPersistDriver(countLimit: 100, clock: clock)
        let app = Application(router: Self.router(persist))
        try await app.test(.router) { client in
            try await client.execute(uri: "/persist/short/0", method: .put, body: Self.body("gone")) { _ in }
            try await client.execute(uri: "/persist/long/10", method: .put, body: Self.body("kept")) { _ in }
            clock.advance(by: .seconds(1))
            try await client.execute(uri: "/persist/short", method: .get) { #expect($0.status == .noContent) }
            try await client.execute(uri: "/persist/long", method: .get) { #expect(String(buffer: $0.body) == "kept") }
            clock.advance(by: .seconds(9))
            try await client.execute(uri: "/persist/long", method: .get) { #expect($0.status == .noContent) }
            // An expired key takes a new value with a new lifetime.
            try await client.execute(uri: "/persist/long/10", method: .put, body: Self.body("again")) { _ in }
            try await client.execute(uri: "/persist/long", method: .get) { #expect(String(buffer: $0.body) == "again") }
        }
    }

    @Test func aSetWithoutExpiryKeepsTheExistingDeadline() async throws {
        let clock = ManualClock()
        let persist = CacheKitPersistDriver(countLimit: 100, clock: clock)
        let app = Application(router: Self.router(persist))
        try await app.test(.router) { client in
            try await client.execute(uri: "/persist/a/10", method: .put, body: Self.body("first")) { _ in }
            clock.advance(by: .seconds(4))
            try await client.execute(uri: "/persist/a", method: .put, body: Self.body("second")) { _ in }
            try await client.execute(uri: "/persist/a/ttl", method: .get) { #expect(String(buffer: $0.body) == "6") }
            clock.advance(by: .seconds(6))
            try await client.execute(uri: "/persist/a", method: .get) { #expect($0.status == .noContent) }
        }
    }

    @Test func getWithTTLReportsWhatIsLeft() async throws {
        let clock = ManualClock()
        let persist = CacheKitPersistDriver(countLimit: 100, clock: clock)
        let app = Application(router: Self.router(persist))
        try await app.test(.router) { client in
            try await client.execute(uri: "/persist/a/10", method: .put, body: Self.body("x")) { _ in }
            try await client.execute(uri: "/persist/a/ttl", method: .get) { #expect(String(buffer: $0.body) == "10") }
            clock.advance(by: .seconds(3))
            try await client.execute(uri: "/persist/a/ttl", method: .get) { #expect(String(buffer: $0.body) == "7") }
            try await client.execute(uri: "/persist/b", method: .put, body: Self.body("y")) { _ in }
            try await client.execute(uri: "/persist/b/ttl", method: .get) { #expect(String(buffer: $0.body) == "none") }
        }
    }

    @Test func codableValuesReadBackAndTheWrongTypeIsAnInvalidConversion() async throws {
        let persist = CacheKitPersistDriver(countLimit: 100, clock: ManualClock())
        let app = Application(router: Self.router(persist))
        try await app.test(.router) { client in
            try await client.execute(uri: "/note/a", method: .put, body: Self.body("remember")) { _ in }
            try await client.execute(uri: "/note/a", method: .get) { #expect(String(buffer: $0.body) == "remember") }
            try await client.execute(uri: "/as-int/a", method: .get) { #expect($0.status == .badRequest) }
        }
        await #expect(throws: PersistError.invalidConversion) { try await persist.get(key: "a", as: String.self) }
    }

    @Test func removeDeletesTheValue() async throws {
        let persist = CacheKitPersistDriver(countLimit: 100, clock: ManualClock())
        let app = Application(router: Self.router(persist))
        try await app.test(.router) { client in
            try await client.execute(uri: "/persist/a", method: .put, body: Self.body("x")) { _ in }
            try await client.execute(uri: "/persist/a", method: .delete) { #expect($0.status == .noContent) }
            try await client.execute(uri: "/persist/a", method: .get) { #expect($0.status == .noContent) }
        }
    }

    @Test func theCountLimitHolds() async throws {
        let persist = CacheKitPersistDriver(countLimit: 2, policy: .lru, clock: ManualClock())
        try await persist.set(key: "a", value: 1)
        try await persist.set(key: "b", value: 2)
        _ = try await persist.get(key: "a", as: Int.self)
        try await persist.set(key: "c", value: 3)
        #expect(persist.count == 2)
        #expect(try await persist.get(key: "b", as: Int.self) == nil)
        #expect(try await persist.get(key: "a", as: Int.self) == 1)
    }

    @Test func runSweepsExpiredEntriesAndShutdownEmptiesTheDriver() async throws {
        let clock = ManualClock()
        let persist = CacheKitPersistDriver(countLimit: 100, clock: clock, sweepInterval: .seconds(30))
        try await persist.set(key: "short", value: "x", expires: .seconds(10))
        try await persist.set(key: "kept", value: "y")
        let app = Application(router: Self.router(persist), services: [persist])
        try await app.test(.router) { client in
            await Self.waitForSleepers(on: clock)
            clock.advance(by: .seconds(30))
            await Self.waitForSleepers(on: clock)  // the sweep ran and sleeps again
            // Statistics are read without sweeping: only the driver's sweep counts the expiry.
            #expect(persist.statistics.removalCounts[.expired] == 1)
            #expect(persist.count == 1)
            try await client.execute(uri: "/persist/kept", method: .get) { #expect(String(buffer: $0.body) == "y") }
        }
        #expect(persist.count == 0)
    }

    /// Yields until a task sleeps on `clock`.
    static func waitForSleepers(on clock: ManualClock) async {
        while clock.sleeperCount == 0 { await Task.yield() }
    }

    @Test func sessionsLiveInTheDriverAndExpireWithIt() async throws {
        struct User: Sendable { let name: String }
        struct Visit: Codable, Sendable { var count: Int }
        let clock = ManualClock()
        let persist = CacheKitPersistDriver(countLimit: 100, clock: clock)
        let router = Router(context: BasicSessionRequestContext<Visit, User>.self)
        router.addMiddleware { SessionMiddleware(storage: persist) }
        router.put("session") { _, context -> HTTPResponse.Status in
            context.sessions.createSession(Visit(count: 0), expiresIn: .seconds(60))
            return .ok
        }
        router.get("session") { _, context -> String in
            guard var visit = context.sessions.session else { throw HTTPError(.unauthorized) }
            visit.count += 1
            _ = context.sessions.updateSession(visit)
            return String(visit.count)
        }
        let app = Application(router: router)
        try await app.test(.router) { client in
            let cookie = try await client.execute(uri: "/session", method: .put) { response -> String? in
                #expect(response.status == .ok)
                return response.headers[.setCookie]
            }
            let cookies = try #require(cookie)
            #expect(persist.count == 1)
            try await client.execute(uri: "/session", method: .get, headers: [.cookie: cookies]) {
                #expect(String(buffer: $0.body) == "1")
            }
            try await client.execute(uri: "/session", method: .get, headers: [.cookie: cookies]) {
                #expect(String(buffer: $0.body) == "2")
            }
            clock.advance(by: .seconds(60))
            try await client.execute(uri: "/session", method: .get, headers: [.cookie: cookies]) {
                #expect($0.status == .unauthorized)
            }
        }
    }
}
