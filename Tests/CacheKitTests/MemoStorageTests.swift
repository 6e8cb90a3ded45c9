import CacheKit
import Synchronization
import Testing

/// A `MemoStorage` of a test's own: a dictionary behind a lock, logging every call.
final class DictionaryStorage: MemoStorage {
    enum Call: Equatable {
        case read(String)
        case store(String, cost: Int)
        case remove(String)
        case removeWhere
    }

    let values = Locked<[MemoKey: MemoValue]>([:])
    let calls = Locked<[Call]>([])

    func memoizedValue(forKey key: MemoKey) -> MemoValue? {
        calls.mutate { $0.append(.read(key.description)) }
        return values.value[key]
    }

    func storeMemoizedValue(_ value: MemoValue, forKey key: MemoKey, cost: Int) {
        calls.mutate { $0.append(.store(key.description, cost: cost)) }
        values.mutate { $0[key] = value }
    }

    func removeMemoizedValue(forKey key: MemoKey) {
        calls.mutate { $0.append(.remove(key.description)) }
        values.mutate { $0[key] = nil }
    }

    func removeMemoizedValues(where shouldRemove: @escaping @Sendable (MemoKey) -> Bool) {
        calls.mutate { $0.append(.removeWhere) }
        values.mutate { $0 = $0.filter { !shouldRemove($0.key) } }
    }

    var stores: Int { calls.value.filter { if case .store = $0 { true } else { false } }.count }
}

@Suite("Memoization on a storage of one's own")
struct MemoStorageTests {
    @Test("results go to the storage, keyed by function and arguments; hits come from it")
    func storesAndReads() throws {
        let storage = DictionaryStorage()
        let counted = Counted()
        let memo = MemoizedFunction<Int>("square", storage: storage)
        #expect(memo.cache == nil)
        #expect(memo.storage === storage)
        let square = memo.wrap(counted.square)
        #expect(square(3) == 9 && square(3) == 9 && square(4) == 16)
        #expect(counted.runs.value == 2)
        #expect(storage.values.value.keys.map(\.description).sorted() == ["square [3]", "square [4]"])
        #expect(storage.stores == 2)
        let stats = memo.statistics
        #expect(stats.hitCount == 1 && stats.missCount == 2 && stats.runCount == 2)
        // A result the storage lost is a miss, run again.
        storage.values.mutate { $0.removeAll() }
        #expect(square(3) == 9)
        #expect(counted.runs.value == 3)
        // Caching off: the storage is neither read nor written.
        let before = storage.calls.value.count
        memo.isEnabled = false
        #expect(square(3) == 9)
        #expect(storage.calls.value.count == before && counted.runs.value == 4)
    }

    @Test("older-than expiry on an injected clock; a result of unknown age ages from its first read")
    func olderThan() {
        let clock = ManualClock()
        let storage = DictionaryStorage()
        let counted = Counted()
        let memo = MemoizedFunction<Int>("square", storage: storage, expiresAfter: .seconds(5), clock: clock)
        let square = memo.wrap(counted.square)
        #expect(square(3) == 9)
        clock.advance(by: .seconds(4))
        #expect(square(3) == 9 && counted.runs.value == 1)
        clock.advance(by: .seconds(1))
        #expect(square(3) == 9 && counted.runs.value == 2)
        #expect(storage.calls.value.contains(.remove("square [3]")))

        // Restored by the storage (from a file, say): its age is unknown until a call finds it.
        let key = MemoKey(function: "square", arguments: MemoArguments(7))
        storage.values.mutate { $0[key] = MemoValue(49, computeTime: .milliseconds(3)) }
        clock.advance(by: .seconds(100))
        #expect(square(7) == 49)  // stamped now
        clock.advance(by: .seconds(4))
        #expect(square(7) == 49 && counted.runs.value == 2)
        clock.advance(by: .seconds(1))
        #expect(square(7) == 49 && counted.runs.value == 3)
    }

    @Test("a custom expiration rule sees the result and its age; a rejected result is removed and run again")
    func customRule() {
        let clock = ManualClock()
        let storage = DictionaryStorage()
        let counted = Counted()
        let asked = Locked<[Duration]>([])
        let memo = MemoizedFunction<Int>(
            "square",
            storage: storage,
            clock: clock,
            expiresWhen: { result, age in
                asked.mutate { $0.append(age) }
                return result.isMultiple(of: 2) && age >= .seconds(10)
            }
        )
        let square = memo.wrap(counted.square)
        #expect(square(2) == 4 && square(3) == 9)
        clock.advance(by: .seconds(10))
        #expect(square(3) == 9 && square(2) == 4)
        #expect(counted.runs.value == 3)  // 2 again, 3 kept
        #expect(asked.value == [.seconds(10), .seconds(10)])
        #expect(memo.statistics.missCount == 3 && memo.statistics.hitCount == 1)
    }

    @Test("the insertion policy and cost apply before the storage sees a result", arguments: [false, true])
    func insertionPolicyAndCost(async: Bool) async throws {
        let storage = DictionaryStorage()
        let memo = MemoizedFunction<String>(
            "text",
            storage: storage,
            insertionPolicy: { $0.count <= 5 },
            cost: { $0.count }
        )
        for text in ["short", "much longer", "short"] {
            let result =
                async
                ? try await memo.call(arguments: text) { @Sendable () async throws in text }
                : memo.call(arguments: text) { text }
            #expect(result == text)
        }
        #expect(storage.values.value.count == 1)
        #expect(
            storage.calls.value.filter { if case .store = $0 { true } else { false } } == [
                .store("text [short]", cost: 5)
            ]
        )
        #expect(memo.statistics.hitCount == 1)
    }

    @Test("a stored value of another type is a miss: removed, and replaced by a new run")
    func foreignType() {
        let storage = DictionaryStorage()
        let key = MemoKey(function: "square", arguments: MemoArguments(3))
        storage.values.mutate { $0[key] = MemoValue("nine", computeTime: .zero) }
        let counted = Counted()
        let square = MemoizedFunction<Int>("square", storage: storage).wrap(counted.square)
        #expect(square(3) == 9)
        #expect(counted.runs.value == 1)
        #expect(storage.values.value[key]?.value as? Int == 9)
    }

    @Test("expireAll removes this function's results from a shared storage and leaves the others'")
    func expireAllShared() {
        let storage = DictionaryStorage()
        let counted = Counted()
        let square = MemoizedFunction<Int>("square", storage: storage)
        let cube = MemoizedFunction<Int>("cube", storage: storage)
        #expect(square.call(arguments: 2) { counted.square(2) } == 4)
        #expect(cube.call(arguments: 2) { 8 } == 8)
        square.expireAll()
        #expect(storage.values.value.keys.map(\.function) == ["cube"])
        #expect(square.call(arguments: 2) { counted.square(2) } == 4)
        #expect(counted.runs.value == 2)
    }

    @Test("a synchronous call running while its function is expired stores nothing")
    func syncCallDuringExpireAll() {
        let storage = DictionaryStorage()
        let memo = MemoizedFunction<Int>("answer", storage: storage)
        let result = memo.call(arguments: 0) { () -> Int in
            memo.expireAll()
            return 42
        }
        #expect(result == 42)
        #expect(storage.values.value.isEmpty)
    }

    @Test("concurrent async calls with equal arguments run the function once; a failure reaches them all")
    func singleFlight() async throws {
        let storage = DictionaryStorage()
        let memo = MemoizedFunction<String>("fetch(_:)", storage: storage)
        for failing in [true, false] {
            let gate = Gate()
            let runs = Locked(0)
            storage.calls.mutate { $0.removeAll() }
            let fetch = memo.wrap { @Sendable (id: Int) async throws -> String in
                runs.mutate { $0 += 1 }
                await gate.wait()
                if failing { throw LoadFailed(attempt: id) }
                return "item \(id)"
            }
            let callers = 20
            let results = await withTaskGroup(of: Result<String, LoadFailed>.self) { group in
                for _ in 0..<callers {
                    group.addTask {
                        do { return .success(try await fetch(7)) } catch { return .failure(error as! LoadFailed) }
                    }
                }
                await eventually { await gate.arrivals == 1 }
                // Let the others join the run before it ends: each caller reads once, and so
                // does the run before it starts.
                await eventually { storage.calls.value.filter { $0 == .read("fetch(_:) [7]") }.count == callers + 1 }
                await gate.open()
                return await group.reduce(into: []) { $0.append($1) }
            }
            let expected: Result<String, LoadFailed> = failing ? .failure(LoadFailed(attempt: 7)) : .success("item 7")
            #expect(results == Array(repeating: expected, count: callers))
            #expect(runs.value == 1)
            #expect(storage.values.value.count == (failing ? 0 : 1))
        }
        #expect(memo.statistics.runCount == 1 && memo.statistics.failureCount == 1)
        #expect(
            try await memo.call(arguments: MemoArguments(7)) { @Sendable () async throws -> String in "other" }
                == "item 7"
        )
    }

    @Test("an async call after expireAll does not join a run that started before it, whose result is not stored")
    func asyncExpireAllDetaches() async throws {
        let storage = DictionaryStorage()
        let memo = MemoizedFunction<Int>("value", storage: storage)
        let gate = Gate()
        let old = Task {
            try await memo.call(arguments: 1) { @Sendable () async throws -> Int in
                await gate.wait()
                return 1
            }
        }
        await eventually { await gate.arrivals == 1 }
        memo.expireAll()
        let new = try await memo.call(arguments: 1) { @Sendable () async throws -> Int in 2 }
        #expect(new == 2)
        await gate.open()
        #expect(try await old.value == 1)
        #expect(storage.values.value.values.map { $0.value as? Int } == [2])
    }

    @Test("an async function that calls itself with the same arguments gets recursiveLoad")
    func recursiveCall() async {
        let memo = MemoizedFunction<Int>("loop(_:)", storage: DictionaryStorage())
        let loop = Locked<(@Sendable (Int) async throws -> Int)?>(nil)
        loop.mutate {
            $0 = memo.wrap { @Sendable (n: Int) async throws -> Int in try await loop.value!(n) }
        }
        await #expect(throws: CacheLoadError.recursiveLoad(key: "loop(_:) [1]")) { try await loop.value!(1) }
    }

    @Test("a SharedCache is a MemoStorage: results are read back at once; expireAll removes one function's")
    func sharedCacheStorage() {
        let shared = SharedCache<MemoKey, MemoValue>(countLimit: 100, policy: .lru)
        let counted = Counted()
        let square = MemoizedFunction<Int>("square", storage: shared)
        let cube = MemoizedFunction<Int>("cube", storage: shared)
        for x in 0..<10 {
            #expect(square.call(arguments: x) { counted.square(x) } == x * x)
            #expect(square.call(arguments: x) { counted.square(x) } == x * x)
            #expect(cube.call(arguments: x) { x * x * x } == x * x * x)
        }
        #expect(counted.runs.value == 10)
        square.expireAll()
        shared.flush()
        #expect(Set(shared.allItems().keys.map(\.function)) == ["cube"])
        #expect(shared.count == 10)
    }
}
