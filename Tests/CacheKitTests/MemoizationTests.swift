import CacheKit
import Foundation
import Testing

/// A function with a visible side effect: it counts its runs, so a test sees whether a call was
/// served from the cache.
final class Counted: Sendable {
    let runs = Locked(0)

    func square(_ x: Int) -> Int {
        runs.mutate { $0 += 1 }
        return x * x
    }
}

/// Not `Hashable`: it can only be left out of a memoized function's key.
struct WeatherOptions { var verbose: Bool }

@Suite("Memoization")
struct MemoizationTests {
    @Test("results are identical with caching on, off per function, off per task, and unmemoized")
    func onAndOffAgree() throws {
        var rng = SeededGenerator(seed: 42)
        // A function of three arguments whose result depends on all of them, including an Optional.
        func compute(_ a: Int, _ b: String, _ c: Bool?) throws -> String? {
            if a == 13 { throw LoadFailed(attempt: a) }
            return a % 5 == 0 ? nil : "\(a)-\(b)-\(String(describing: c))"
        }
        let memo = MemoizedFunction<String?>("compute(_:_:_:)", countLimit: 8, policy: .lru)
        let cached = memo.wrap(compute)
        let calls = (0..<2_000).map { _ in
            (
                Int.random(in: 0..<20, using: &rng), ["x", "y"].randomElement(using: &rng)!,
                [true, false, nil].randomElement(using: &rng)!
            )
        }
        func outcomes(_ f: (Int, String, Bool?) throws -> String?) -> [Result<String?, LoadFailed>] {
            calls.map { call in
                Result { try f(call.0, call.1, call.2) }.mapError { $0 as! LoadFailed }
            }
        }
        let expected = outcomes(compute)
        #expect(outcomes(cached) == expected)
        #expect(memo.statistics.hitCount > 0)
        memo.isEnabled = false
        #expect(outcomes(cached) == expected)
        memo.isEnabled = true
        #expect(Memoization.withCachingDisabled { outcomes(cached) } == expected)
        #expect(memo.statistics.bypassCount == 2 * calls.count)
        #expect(memo.statistics.failureCount == calls.filter { $0.0 == 13 }.count)
        memo.cache!._checkInvariants()
    }

    #if !os(Windows)
    @Test("the process-wide switch turns caching off for every function (in a process of its own)")
    func globalSwitch() async {
        // A child process: flipping the switch here would reach tests running in parallel.
        await #expect(processExitsWith: .success) {
            let runs = Locked(0)
            let square = MemoizedFunction<Int>("square").wrap { (x: Int) -> Int in
                runs.mutate { $0 += 1 }
                return x * x
            }
            Memoization.isEnabled = false
            precondition(square(3) == 9 && square(3) == 9 && runs.value == 2, "cached with the switch off")
            Memoization.isEnabled = true
            precondition(square(3) == 9 && square(3) == 9 && runs.value == 3, "not cached with the switch on")
        }
    }
    #endif

    @Test("a synchronous call running while its function is expired stores nothing")
    func expiredWhileRunning() {
        let counted = Counted()
        let memo = MemoizedFunction<Int>("square")
        let square = memo.wrap { (x: Int) -> Int in
            if counted.runs.value == 0 { memo.expireAll() }  // a trigger fires mid-call
            return counted.square(x)
        }
        #expect(square(4) == 16)
        #expect(memo.cache!.count == 0)
        #expect(square(4) == 16)
        #expect(square(4) == 16)
        #expect(counted.runs.value == 2)
    }

    @Test(
        "a synchronous call running while its cache is emptied stores nothing, as an async call would not",
        arguments: ["expireAll", "removeAll", "removeValue"]
    )
    func cacheEmptiedWhileRunning(how: String) {
        // (An expiration trigger calls `expireAll()`.)
        let shared = MemoCache(countLimit: 10)
        let memo = MemoizedFunction<Int>("f", cache: shared)
        let result = memo.call(arguments: 1) { () -> Int in
            switch how {
            case "expireAll": shared.expireAll()
            case "removeAll": shared.removeAll()
            default: shared.removeValue(forKey: MemoKey(function: "f", arguments: 1))
            }
            return 42
        }
        #expect(result == 42)
        #expect(shared.count == 0)
        // Without a removal meanwhile, the result is stored.
        #expect(memo.call(arguments: 1) { 43 } == 43)
        #expect(memo.call(arguments: 1) { 44 } == 43)
    }

    @Test("keys are equal only for arguments of one type: never equal but hashed apart")
    func keyEqualityMatchesHashing() {
        let plain = MemoKey(function: "f", arguments: 1)
        let optional = MemoKey(function: "f", arguments: Optional(1))
        #expect(plain != optional && optional != plain)
        #expect(plain == MemoKey(function: "f", arguments: 1))
        class Base: Hashable, @unchecked Sendable {
            static func == (a: Base, b: Base) -> Bool { true }
            func hash(into hasher: inout Hasher) {}
        }
        final class Derived: Base, @unchecked Sendable {}
        let base = MemoKey(function: "f", arguments: Base())
        let derived = MemoKey(function: "f", arguments: Derived())
        #expect(base != derived && derived != base)
    }

    @Test("a cached nil is a hit, distinct from a miss")
    func nilIsAHit() throws {
        let runs = Locked(0)
        let memo = MemoizedFunction<Int?>("lookup(_:)")
        let lookup = memo.wrap { (name: String) -> Int? in
            runs.mutate { $0 += 1 }
            return name == "known" ? 1 : nil
        }
        #expect(lookup("unknown") == nil)
        #expect(lookup("unknown") == nil)
        #expect(lookup("known") == 1)
        #expect(runs.value == 2)
        #expect(memo.statistics.hitCount == 1)
        #expect(memo.statistics.missCount == 2)
        let stored = memo.cache!.peekValue(forKey: MemoKey(function: "lookup(_:)", arguments: MemoArguments("unknown")))
        let storedResult = try #require(stored).value as! Int?
        #expect(storedResult == nil)
    }

    @Test("a Void function runs once per key while cached, again after expireAll")
    func voidIsDeduplicated() {
        let sent = Locked<[String]>([])
        let memo = MemoizedFunction<Void>("notify(_:)")
        let notify = memo.wrap { (user: String) in sent.mutate { $0.append(user) } }
        notify("ann")
        notify("ann")
        notify("bob")
        #expect(sent.value == ["ann", "bob"])
        memo.expireAll()
        notify("ann")
        #expect(sent.value == ["ann", "bob", "ann"])
    }

    @Test("zero to four arguments, all in the key by default")
    func arities() {
        let counted = Counted()
        let memo0 = MemoizedFunction<Int>("zero")
        let zero = memo0.wrap { counted.square(7) }
        #expect(zero() == 49 && zero() == 49)
        let memo4 = MemoizedFunction<Int>("four")
        let four = memo4.wrap { (a: Int, b: Int, c: Int, d: Int) in counted.square(a + b + c + d) }
        #expect(four(1, 2, 3, 4) == 100)
        #expect(four(1, 2, 3, 4) == 100)
        #expect(four(4, 3, 2, 1) == 100)  // another key: runs again
        #expect(counted.runs.value == 3)
    }

    @Test("a key closure chooses a subset of the arguments; the others need not be Hashable")
    func keySubset() {
        let runs = Locked(0)
        let memo = MemoizedFunction<String>("weather(for:options:)")
        let weather = memo.wrap(
            { (city: String, options: WeatherOptions) -> String in
                runs.mutate { $0 += 1 }
                return "sunny in \(city)\(options.verbose ? " (verbose)" : "")"
            },
            key: { city, _ in city }
        )
        #expect(weather("Paris", WeatherOptions(verbose: false)) == "sunny in Paris")
        // Same key: the stored result, although the unkeyed argument differs.
        #expect(weather("Paris", WeatherOptions(verbose: true)) == "sunny in Paris")
        #expect(weather("Rome", WeatherOptions(verbose: true)) == "sunny in Rome (verbose)")
        #expect(runs.value == 2)
        #expect(
            memo.cache!.keys.map(\.description).sorted() == [
                "weather(for:options:) [Paris]", "weather(for:options:) [Rome]",
            ]
        )
    }

    @Test("functions sharing one cache never see each other's results; expireAll is per function")
    func sharedCache() {
        let shared = MemoCache(countLimit: 100, policy: .lru)
        let squareMemo = MemoizedFunction<Int>("square", cache: shared)
        let cubeMemo = MemoizedFunction<Int>("cube", cache: shared)
        let square = squareMemo.wrap { (x: Int) in x * x }
        let cube = cubeMemo.wrap { (x: Int) in x * x * x }
        for x in 1...5 {
            #expect(square(x) == x * x)
            #expect(cube(x) == x * x * x)
        }
        #expect(shared.count == 10)
        #expect(square(3) == 9 && cube(3) == 27)
        #expect(squareMemo.statistics.hitCount == 1 && cubeMemo.statistics.hitCount == 1)
        let removed = Locked<[RemovalReason]>([])
        shared.removalHandler = { removal in removed.mutate { $0.append(removal.reason) } }
        cubeMemo.expireAll()
        #expect(shared.count == 5)
        #expect(removed.value == Array(repeating: .expired, count: 5))
        #expect(shared.keys.allSatisfy { $0.function == "square" })
        // Equal arguments of different types are different keys.
        #expect(MemoKey(function: "f", arguments: 1) != MemoKey(function: "f", arguments: Int64(1)))
        #expect(MemoKey(function: "f", arguments: 1) == MemoKey(function: "f", arguments: 1))
        #expect(MemoKey(function: "f", arguments: 1) != MemoKey(function: "g", arguments: 1))
    }

    @Test("thrown errors are not cached", arguments: [false, true])
    func errorsAreNotCached(isAsync: Bool) async throws {
        let attempts = Locked(0)
        let memo = MemoizedFunction<Int>("flaky")
        let body: @Sendable (Int) throws -> Int = { x in
            attempts.mutate { $0 += 1 }
            if attempts.value == 1 { throw LoadFailed(attempt: 1) }
            return x
        }
        let sync = memo.wrap(body)
        let async = memo.wrap { @Sendable (x: Int) async throws -> Int in try body(x) }
        let call: (Int) async throws -> Int = { isAsync ? try await async($0) : try sync($0) }
        await #expect(throws: LoadFailed(attempt: 1)) { try await call(5) }
        #expect(try await call(5) == 5)
        #expect(try await call(5) == 5)
        #expect(attempts.value == 2)
        #expect(memo.statistics.failureCount == 1)
        #expect(memo.statistics.runCount == 1)
        #expect(memo.statistics.hitCount == 1)
        #expect(memo.statistics.missCount == 2)  // the failed call is a miss, sync or async
    }

    @Test("concurrent async calls with equal arguments run the function once")
    func singleFlight() async throws {
        let gate = Gate()
        let runs = Locked(0)
        let memo = MemoizedFunction<String>("fetch(_:)")
        let fetch = memo.wrap { @Sendable (id: Int) async throws -> String in
            runs.mutate { $0 += 1 }
            await gate.wait()
            return "item \(id)"
        }
        let callers = 40
        let results = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<callers { group.addTask { try await fetch(7) } }
            await eventually { await gate.arrivals == 1 }
            await gate.open()
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results == Array(repeating: "item 7", count: callers))
        #expect(runs.value == 1)
        #expect(memo.statistics.runCount == 1)
        #expect(memo.statistics.hitCount + memo.statistics.missCount == callers)
    }

    @Test("a non-throwing async function that calls itself with its own arguments runs that call uncached")
    func nonThrowingSelfCall() async {
        let runs = Locked(0)
        let memo = MemoizedFunction<String>("echo(_:)")
        let echo = Locked<(@Sendable (String) async -> String)?>(nil)
        echo.mutate {
            $0 = memo.wrap { @Sendable (text: String) async -> String in
                let depth = runs.mutate { runs -> Int in
                    runs += 1
                    return runs
                }
                // The first run asks for its own key once: that inner call cannot wait for
                // itself, so it runs the body directly, as it would without caching.
                return depth == 1 ? await echo.value!(text) + "!" : text
            }
        }
        #expect(await echo.value!("hi") == "hi!")
        #expect(await echo.value!("hi") == "hi!")
        #expect(runs.value == 2)
        #expect(memo.statistics.bypassCount == 1)
        #expect(memo.statistics.runCount == 1)
        #expect(memo.statistics.hitCount == 1)
    }

    @Test("a memoized recursive async function runs once per argument")
    func nonThrowingAsync() async {
        let runs = Locked(0)
        let memo = MemoizedFunction<Int>("fib(_:)")
        // A memoized recursive function: fib calls itself through the memoized wrapper.
        let fib = Locked<(@Sendable (Int) async -> Int)?>(nil)
        fib.mutate {
            $0 = memo.wrap { @Sendable (n: Int) async -> Int in
                runs.mutate { $0 += 1 }
                if n < 2 { return n }
                return await fib.value!(n - 1) + fib.value!(n - 2)
            }
        }
        #expect(await fib.value!(20) == 6_765)
        #expect(runs.value == 21)  // each n from 0 to 20 once
        #expect(await fib.value!(20) == 6_765)
        #expect(runs.value == 21)
    }

    @Test("an async function that calls itself with the same arguments gets recursiveLoad")
    func recursiveCall() async {
        let memo = MemoizedFunction<Int>("loop(_:)")
        let loop = Locked<(@Sendable (Int) async throws -> Int)?>(nil)
        loop.mutate {
            $0 = memo.wrap { @Sendable (n: Int) async throws -> Int in try await loop.value!(n) }
        }
        await #expect(throws: CacheLoadError.self) { try await loop.value!(1) }
    }

    @Test("older-than expiry and the cache's own expiration, on an injected clock", arguments: [false, true])
    func olderThan(viaCacheExpiration: Bool) {
        let clock = ManualClock()
        let counted = Counted()
        let memo =
            viaCacheExpiration
            ? MemoizedFunction<Int>("square", expiration: .init(afterWrite: .seconds(5)), clock: clock)
            : MemoizedFunction<Int>("square", expiresAfter: .seconds(5), clock: clock)
        let square = memo.wrap(counted.square)
        #expect(square(3) == 9)
        clock.advance(by: .seconds(4))
        #expect(square(3) == 9)
        #expect(counted.runs.value == 1)
        clock.advance(by: .seconds(1))
        #expect(square(3) == 9)
        #expect(counted.runs.value == 2)
    }

    @Test("a custom expiration rule sees each stored result and its age; a rejected result runs the function again")
    func customExpirationRule() async throws {
        let clock = ManualClock()
        let shared = MemoCache(clock: clock)
        let log = RemovalLog<MemoKey, MemoValue>()
        shared.removalHandler = log.append
        let asked = Locked<[(result: Int, age: Duration)]>([])
        // ClearCache's custom expiration policy: here, results of even numbers expire after 10
        // seconds, odd ones never.
        let rule: @Sendable (Int, Duration) -> Bool = { result, age in
            asked.mutate { $0.append((result, age)) }
            return result.isMultiple(of: 2) && age >= .seconds(10)
        }
        let counted = Counted()
        let memo = MemoizedFunction<Int>("square", cache: shared, expiresWhen: rule)
        let square = memo.wrap(counted.square)
        #expect(square(2) == 4 && square(3) == 9)
        #expect(asked.value.isEmpty)  // fresh results are not asked about
        clock.advance(by: .seconds(4))
        #expect(square(2) == 4)
        #expect(asked.value.map(\.result) == [4] && asked.value.map(\.age) == [.seconds(4)])
        clock.advance(by: .seconds(6))
        #expect(square(2) == 4 && square(3) == 9)
        #expect(counted.runs.value == 3)  // 2 ran again; 3 did not
        #expect(asked.value.map(\.age).suffix(2) == [.seconds(10), .seconds(10)])
        #expect(log.all.map(\.reason) == [.expired])
        #expect(log.all.first?.value.value as? Int == 4)
        // The new result's age counts from its own run.
        clock.advance(by: .seconds(9))
        #expect(square(2) == 4)
        #expect(counted.runs.value == 3)
        #expect(asked.value.last?.age == .seconds(9))
        #expect(memo.statistics.hitCount == 3 && memo.statistics.missCount == 3)
        // The cache counts a rejected result as a miss too, and the rule moves nothing in it.
        #expect(shared.statistics.hitCount == 3 && shared.statistics.missCount == 3)

        // The async path: a rejected hit is removed and the function runs again, once.
        let asyncMemo = MemoizedFunction<Int>("asyncSquare", cache: shared, expiresWhen: rule)
        let asyncSquare = asyncMemo.wrap { @Sendable (x: Int) async -> Int in counted.square(x) }
        #expect(await asyncSquare(6) == 36)
        clock.advance(by: .seconds(10))
        #expect(await asyncSquare(6) == 36)
        #expect(counted.runs.value == 5)
        #expect(await asyncSquare(6) == 36)  // the new result is fresh
        #expect(counted.runs.value == 5)
        #expect(asyncMemo.statistics.hitCount == 1 && asyncMemo.statistics.missCount == 2)
        #expect(shared.statistics.hitCount == 4 && shared.statistics.missCount == 5)
        #expect(log.all.map(\.reason) == [.expired, .expired])
    }

    @Test("a result of unknown age (stored by hand or restored) ages from when the rule first sees it")
    func customExpirationUnknownAge() {
        let clock = ManualClock()
        let shared = MemoCache(clock: clock)
        let ages = Locked<[Duration]>([])
        let memo = MemoizedFunction<Int>(
            "f",
            cache: shared,
            expiresWhen: { _, age in
                ages.mutate { $0.append(age) }
                return age > .seconds(10)
            }
        )
        clock.advance(by: .seconds(3_600))
        shared[MemoKey(function: "f", arguments: 1)] = MemoValue(1, computeTime: .zero)  // as a restore would
        #expect(memo.call(arguments: 1) { 42 } == 1)
        clock.advance(by: .seconds(5))
        #expect(memo.call(arguments: 1) { 42 } == 1)
        clock.advance(by: .seconds(6))
        #expect(memo.call(arguments: 1) { 42 } == 42)
        #expect(ages.value == [.zero, .seconds(5), .seconds(11)])
    }

    @Test("a custom expiration rule never removes a newer result stored after the one it rejected")
    func customExpirationKeepsNewerResult() {
        let shared = MemoCache()
        let key = MemoKey(function: "f", arguments: 1)
        let memo = MemoizedFunction<Int>(
            "f",
            cache: shared,
            expiresWhen: { result, _ in
                // While the rule is asked about the old result, another caller stores a new one.
                if result == 1 { shared[key] = MemoValue(2, computeTime: .zero) }
                return result == 1
            }
        )
        shared[key] = MemoValue(1, computeTime: .zero)
        let log = RemovalLog<MemoKey, MemoValue>()
        shared.removalHandler = log.append
        // The rule rejected 1, but 2 had replaced it: 2 stays, and, as with any two racing
        // calls, the result stored first is the one returned.
        #expect(memo.call(arguments: 1) { 3 } == 2)
        #expect(shared[key]?.value as? Int == 2)
        #expect(log.all.map(\.reason) == [.replaced])
    }

    @Test("older-than expiry of one function in a shared cache leaves the others' results")
    func olderThanInSharedCache() async throws {
        let clock = ManualClock()
        let shared = MemoCache(clock: clock)
        let counted = Counted()
        let short = MemoizedFunction<Int>("short", cache: shared, expiresAfter: .seconds(1)).wrap(counted.square)
        let long = MemoizedFunction<Int>("long", cache: shared).wrap(counted.square)
        _ = short(2)
        _ = long(2)
        clock.advance(by: .seconds(1))
        #expect(shared.count == 1)
        _ = short(2)
        _ = long(2)
        #expect(counted.runs.value == 3)
        // The async path stores with the same per-function expiry.
        let asyncShort = MemoizedFunction<Int>("asyncShort", cache: shared, expiresAfter: .seconds(1))
            .wrap { @Sendable (x: Int) async -> Int in counted.square(x) }
        _ = await asyncShort(4)
        _ = await asyncShort(4)
        #expect(counted.runs.value == 4)
        clock.advance(by: .seconds(1))
        _ = await asyncShort(4)
        #expect(counted.runs.value == 5)
    }

    @Test("the cache kind is per function: FIFO, LFU and LRU evict as their policies say")
    func policies() {
        // Fill 3 slots with 1, 2, 3; use 1 twice more; insert 4. LRU evicts 2 (least recent),
        // FIFO evicts 1 (first in), LFU evicts 2 (least frequent, oldest among ties).
        let expectedSurvivors: [(EvictionPolicy, Set<Int>)] = [
            (.lru, [1, 3, 4]), (.fifo, [2, 3, 4]), (.lfu, [1, 3, 4]),
        ]
        for (policy, survivors) in expectedSurvivors {
            let memo = MemoizedFunction<Int>("id", countLimit: 3, policy: policy)
            let id = memo.wrap { (x: Int) in x }
            for x in [1, 2, 3, 1, 1, 4] { _ = id(x) }
            let kept = Set(memo.cache!.keys.map { ($0.arguments as! MemoArguments<Int>).values })
            #expect(kept == survivors, "\(policy)")
        }
    }

    @Test("the insertion policy and cost apply per function, sync and async", arguments: [false, true])
    func insertionPolicyAndCost(isAsync: Bool) async {
        let runs = Locked(0)
        let memo = MemoizedFunction<[UInt8]>(
            "image(_:)",
            totalCostLimit: 100,
            insertionPolicy: { $0.count <= 60 },  // "do not cache images over 60 bytes"
            cost: { $0.count }
        )
        let body: @Sendable (Int) -> [UInt8] = { size in
            runs.mutate { $0 += 1 }
            return [UInt8](repeating: 0, count: size)
        }
        let syncImage = memo.wrap(body)
        let asyncImage = memo.wrap { @Sendable (size: Int) async -> [UInt8] in body(size) }
        let image: (Int) async -> [UInt8] = { isAsync ? await asyncImage($0) : syncImage($0) }
        _ = await image(80)
        _ = await image(80)  // refused: runs again
        #expect(runs.value == 2)
        _ = await image(50)
        _ = await image(40)
        #expect(memo.cache!.totalCost == 90)
        _ = await image(30)  // over the cost limit: something leaves
        #expect(memo.cache!.totalCost <= 100)
        #expect(memo.cache!.count == 2)
    }

    @Test("triggers expire a memoized function: a notification, and an async sequence")
    func triggers() async {
        let center = NotificationCenter()
        let name = Notification.Name("MemoizationTests.logout")
        let counted = Counted()
        let memo = MemoizedFunction<Int>("square")
        let square = memo.wrap(counted.square)
        let trigger = memo.expireAll(on: name, center: center)
        _ = square(2)
        center.post(name: name, object: nil)
        _ = square(2)
        #expect(counted.runs.value == 2)
        trigger.cancel()
        center.post(name: name, object: nil)
        _ = square(2)
        #expect(counted.runs.value == 2)

        let (events, continuation) = AsyncStream.makeStream(of: Void.self)
        memo.expireAll(whenever: events)
        continuation.yield()
        await eventually { memo.cache!.count == 0 }
        _ = square(2)
        #expect(counted.runs.value == 3)
        continuation.finish()
    }

    @Test("the task-local switch turns caching off for one task while parallel tasks keep caching")
    func taskLocalSwitch() async {
        let counted = Counted()
        let memo = MemoizedFunction<Int>("square")
        let square: @Sendable () -> Int = { memo.call(arguments: 9) { counted.square(9) } }
        _ = square()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for _ in 0..<500 { _ = square() }
            }
            group.addTask {
                Memoization.withCachingDisabled {
                    #expect(!Memoization.isEnabledForCurrentTask)
                    #expect(!memo.isCaching)
                    for _ in 0..<500 { _ = square() }
                }
            }
        }
        // Only the task with caching off ran the function; the other was served from the cache
        // throughout.
        #expect(memo.statistics.bypassCount == 500)
        #expect(memo.statistics.hitCount == 500)
        #expect(counted.runs.value == 501)
        #expect(Memoization.isEnabledForCurrentTask)
    }

    @Test("statistics: hits, misses, runs, and the time hits saved")
    func statistics() {
        let memo = MemoizedFunction<Int>("sum")
        let sum = memo.wrap { (n: Int) in (0..<n).reduce(0, +) }
        _ = sum(100_000)
        _ = sum(100_000)
        _ = sum(100_000)
        _ = sum(10)
        let stats = memo.statistics
        #expect(stats.hitCount == 2 && stats.missCount == 2 && stats.runCount == 2)
        let computeTime = memo.cache!.peekValue(forKey: MemoKey(function: "sum", arguments: MemoArguments(100_000)))!
            .computeTime
        #expect(stats.timeSaved == computeTime * 2)
        #expect(stats.runTime >= computeTime)
        #expect(stats.hitRatio == 0.5)
        #expect(memo.cache!.statistics.hitCount == 2)
        memo.resetStatistics()
        #expect(memo.statistics == MemoStatistics())
    }

    @Test(
        "a task a run started may call the function with the run's key: it waits or hits, never a false recursiveLoad",
        arguments: [false, true]
    )
    func callFromATaskTheRunStarted(onStorage: Bool) async throws {
        let memo =
            onStorage
            ? MemoizedFunction<Int>("f", storage: SharedCache<MemoKey, MemoValue>(countLimit: 10))
            : MemoizedFunction<Int>("f")
        let (gate, open) = AsyncStream<Void>.makeStream()
        let started = Locked<Task<Int, any Error>?>(nil)
        let first = try await memo.call(arguments: 1) { () async throws -> Int in
            // Inherits the run's task-locals, its load chain among them; the run does not wait for it.
            let task = Task { () async throws -> Int in
                for await _ in gate { break }
                return try await memo.call(arguments: 1) { () async throws -> Int in 99 }
            }
            started.mutate { $0 = task }
            return 42
        }
        #expect(first == 42)
        open.yield()
        open.finish()
        let inner = try #require(started.value)
        #expect(try await inner.value == 42, "a hit on the stored result")
    }

    @Test("a non-throwing function's recursive call counts once, as the bypass it runs")
    func recursionCountsOnce() async {
        let memo = MemoizedFunction<Int>("r")
        let value = await memo.call(arguments: 1) { () async -> Int in
            await memo.call(arguments: 1) { () async -> Int in 5 } + 1
        }
        #expect(value == 6)
        let statistics = memo.statistics
        #expect(statistics.missCount == 1)
        #expect(statistics.bypassCount == 1)
        #expect(statistics.hitCount + statistics.missCount + statistics.bypassCount == 2)
    }
}
