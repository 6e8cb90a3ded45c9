import CacheKit
import Dispatch
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

/// Keeps only what a file could: the result and its compute time (`MemoValue`'s public surface).
final class FileLikeStorage: MemoStorage {
    let values = Locked<[MemoKey: Int]>([:])
    let stores = Locked(0)

    func memoizedValue(forKey key: MemoKey) -> MemoValue? {
        values.value[key].map { MemoValue($0, computeTime: .milliseconds(1)) }
    }

    func storeMemoizedValue(_ value: MemoValue, forKey key: MemoKey, cost: Int) {
        stores.mutate { $0 += 1 }
        values.mutate { $0[key] = value.value as? Int }
    }

    func removeMemoizedValue(forKey key: MemoKey) { values.mutate { $0[key] = nil } }

    func removeMemoizedValues(where shouldRemove: @escaping @Sendable (MemoKey) -> Bool) {
        values.mutate { $0 = $0.filter { !shouldRemove($0.key) } }
    }
}

/// A dictionary whose next read runs `afterRead` between fetching the value and returning it:
/// what another thread may do at that moment.
final class HookStorage: MemoStorage {
    let values = Locked<[MemoKey: MemoValue]>([:])
    let afterRead = Locked<(@Sendable () -> Void)?>(nil)

    func memoizedValue(forKey key: MemoKey) -> MemoValue? {
        let value = values.value[key]
        let hook = afterRead.mutate { hook -> (@Sendable () -> Void)? in
            defer { hook = nil }
            return hook
        }
        hook?()
        return value
    }

    func storeMemoizedValue(_ value: MemoValue, forKey key: MemoKey, cost: Int) { values.mutate { $0[key] = value } }

    func removeMemoizedValue(forKey key: MemoKey) { values.mutate { $0[key] = nil } }

    func removeMemoizedValues(where shouldRemove: @escaping @Sendable (MemoKey) -> Bool) {
        values.mutate { $0 = $0.filter { !shouldRemove($0.key) } }
    }
}

/// A memory front keeping the last stored value as it is, over a "file" keeping only the `Int`.
final class TieredStorage: MemoStorage {
    let front = Locked<(MemoKey, MemoValue)?>(nil)
    let back = Locked<[MemoKey: Int]>([:])

    func memoizedValue(forKey key: MemoKey) -> MemoValue? {
        if let (k, v) = front.value, k == key { return v }
        return back.value[key].map { MemoValue($0, computeTime: .milliseconds(1)) }
    }

    func storeMemoizedValue(_ value: MemoValue, forKey key: MemoKey, cost: Int) {
        front.mutate { $0 = (key, value) }
        back.mutate { $0[key] = value.value as? Int }
    }

    func removeMemoizedValue(forKey key: MemoKey) {
        front.mutate { if $0?.0 == key { $0 = nil } }
        back.mutate { $0[key] = nil }
    }

    func removeMemoizedValues(where shouldRemove: @escaping @Sendable (MemoKey) -> Bool) {
        front.mutate { if let f = $0, shouldRemove(f.0) { $0 = nil } }
        back.mutate { $0 = $0.filter { !shouldRemove($0.key) } }
    }
}

/// A file-like storage keyed by the key's description: it keeps no reference to the arguments,
/// so the memoized function's own records hold the last ones.
final class DescribedStorage: MemoStorage {
    let values = Locked<[String: Int]>([:])

    func memoizedValue(forKey key: MemoKey) -> MemoValue? {
        values.value[key.description].map { MemoValue($0, computeTime: .milliseconds(1)) }
    }

    func storeMemoizedValue(_ value: MemoValue, forKey key: MemoKey, cost: Int) {
        values.mutate { $0[key.description] = value.value as? Int }
    }

    func removeMemoizedValue(forKey key: MemoKey) { values.mutate { $0[key.description] = nil } }

    func removeMemoizedValues(where shouldRemove: @escaping @Sendable (MemoKey) -> Bool) {
        values.mutate { $0 = [:] }
    }
}

/// An argument whose deinitializer checks, from another thread, that the memoized function is
/// not locked meanwhile: `expireAll()` there must finish.
final class ReleaseProbe: Hashable, Sendable, CustomStringConvertible {
    static let function = Locked<MemoizedFunction<Int>?>(nil)
    static let blocked = Locked<[Bool]>([])
    let n: Int

    init(_ n: Int) { self.n = n }

    static func == (a: ReleaseProbe, b: ReleaseProbe) -> Bool { a.n == b.n }

    func hash(into hasher: inout Hasher) { hasher.combine(n) }

    var description: String { "probe \(n)" }

    deinit {
        guard let memo = Self.function.value else { return }
        let done = DispatchSemaphore(value: 0)
        startThread {
            memo.expireAll()
            done.signal()
        }
        Self.blocked.mutate { $0.append(done.wait(timeout: .now() + 5) == .timedOut) }
    }
}

/// Keeps nothing: every call misses and stores (so every call records its store).
final class NullStorage: MemoStorage {
    func memoizedValue(forKey key: MemoKey) -> MemoValue? { nil }

    func storeMemoizedValue(_ value: MemoValue, forKey key: MemoKey, cost: Int) {}

    func removeMemoizedValue(forKey key: MemoKey) {}

    func removeMemoizedValues(where shouldRemove: @escaping @Sendable (MemoKey) -> Bool) {}
}

/// File-like (keeps no times); runs `beforeStore` once, at the start of the next store.
final class StoreHookStorage: MemoStorage {
    let values = Locked<[MemoKey: Int]>([:])
    let beforeStore = Locked<(@Sendable () -> Void)?>(nil)

    func memoizedValue(forKey key: MemoKey) -> MemoValue? {
        values.value[key].map { MemoValue($0, computeTime: .milliseconds(1)) }
    }

    func storeMemoizedValue(_ value: MemoValue, forKey key: MemoKey, cost: Int) {
        let hook = beforeStore.mutate { hook -> (@Sendable () -> Void)? in
            defer { hook = nil }
            return hook
        }
        hook?()
        values.mutate { $0[key] = value.value as? Int }
    }

    func removeMemoizedValue(forKey key: MemoKey) { values.mutate { $0[key] = nil } }

    func removeMemoizedValues(where shouldRemove: @escaping @Sendable (MemoKey) -> Bool) {
        values.mutate { $0 = $0.filter { !shouldRemove($0.key) } }
    }
}

// Serialized: two tests share `ReleaseProbe`'s statics.
@Suite("Memoization on a storage of one's own", .serialized)
struct MemoStorageTests {
    @Test("past its bound of stamps, a result whose stamp was dropped counts as expired")
    func droppedStampsAgeFromTheWatermark() {
        let clock = ManualClock()
        let storage = FileLikeStorage()
        let memo = MemoizedFunction<Int>("f", storage: storage, expiresAfter: .seconds(10), clock: clock)
        let runs = Locked(0)
        let first = { () -> Int in
            runs.mutate { $0 += 1 }
            return 0
        }
        #expect(memo.call(arguments: 0, first) == 0)  // at 0 s
        clock.advance(by: .seconds(1))
        for i in 1...20_000 { _ = memo.call(arguments: i) { i } }  // at 1 s: key 0's stamp is dropped
        // Key 0's stamp is gone: at 5 s, long before its 10 seconds are up, it counts as expired
        // (its age cannot be known; serving it could serve a stale result).
        clock.advance(by: .seconds(4))
        #expect(memo.call(arguments: 0, first) == 0)
        #expect(runs.value == 2)
        // The new result is stamped and kept; expireAll starts afresh.
        #expect(memo.call(arguments: 0, first) == 0)
        #expect(runs.value == 2)
    }

    @Test("a memory front over a file: results pushed out to the file keep their age")
    func tieredStorageAges() {
        let clock = ManualClock()
        let memo = MemoizedFunction<Int>("f", storage: TieredStorage(), expiresAfter: .seconds(10), clock: clock)
        let runs = Locked(0)
        func call(_ x: Int) -> Int {
            memo.call(arguments: x) { () -> Int in
                runs.mutate { $0 += 1 }
                return x
            }
        }
        #expect(call(1) == 1 && call(2) == 2)  // 1 goes to the file only
        clock.advance(by: .seconds(1_000))
        #expect(call(1) == 1)
        #expect(runs.value == 3)
    }

    @Test("an argument the record table's dictionary kept is released outside the lock")
    func dictionaryKeyReleasedOutsideTheLock() {
        let clock = ManualClock()
        let memo = MemoizedFunction<Int>("f", storage: NullStorage(), expiresAfter: .seconds(10), clock: clock)
        ReleaseProbe.blocked.mutate { $0 = [] }
        _ = memo.call(arguments: ReleaseProbe(1)) { 1 }  // the table's dictionary keeps this instance
        _ = memo.call(arguments: -2) { 2 }
        _ = memo.call(arguments: ReleaseProbe(1)) { 1 }  // an equal key: the dictionary keeps the first
        for i in 3...16_385 { _ = memo.call(arguments: -i) { i } }  // drops the stale records
        ReleaseProbe.function.mutate { $0 = memo }
        _ = memo.call(arguments: -100_000) { 0 }  // drops key 1's record: the first instance goes
        ReleaseProbe.function.mutate { $0 = nil }
        #expect(!ReleaseProbe.blocked.value.isEmpty)
        #expect(!ReleaseProbe.blocked.value.contains(true))
    }

    @Test("a store records its time after the write, so the result it replaces never looks new")
    func recordAfterTheWrite() {
        let clock = ManualClock()
        let storage = StoreHookStorage()
        let memo = MemoizedFunction<Int>("f", storage: storage, expiresAfter: .seconds(10), clock: clock)
        let served = Locked<Int?>(nil)
        _ = memo.call(arguments: 0) { () -> Int in  // misses at 0 s
            _ = memo.call(arguments: 0) { 1 }  // a racing call stores 1 at 0 s
            clock.advance(by: .seconds(15))  // this run takes 15 s
            // A reader between this call's record and its write must not get the 15-second-old 1.
            storage.beforeStore.mutate { $0 = { served.mutate { $0 = memo.call(arguments: 0) { 3 } } } }
            return 2
        }
        #expect(served.value == 3)
    }

    @Test("the function releases the arguments it kept without holding its lock")
    func argumentsReleasedOutsideTheLock() {
        let clock = ManualClock()
        let memo = MemoizedFunction<Int>("f", storage: DescribedStorage(), expiresAfter: .seconds(10), clock: clock)
        ReleaseProbe.blocked.mutate { $0 = [] }
        #expect(memo.call(arguments: ReleaseProbe(1)) { 1 } == 1)
        ReleaseProbe.function.mutate { $0 = memo }
        memo.expireAll()  // drops the last reference to ReleaseProbe(1)
        ReleaseProbe.function.mutate { $0 = nil }
        #expect(ReleaseProbe.blocked.value == [false])
    }

    @Test("a storage that keeps no times (a file): results age from when they were stored")
    func fileLikeStorageAges() {
        let clock = ManualClock()
        let storage = FileLikeStorage()
        let counted = Counted()
        let ages = Locked<[Duration]>([])
        let memo = MemoizedFunction<Int>(
            "square",
            storage: storage,
            expiresAfter: .seconds(5),
            clock: clock,
            expiresWhen: { _, age in
                ages.mutate { $0.append(age) }
                return false
            }
        )
        let square = memo.wrap(counted.square)
        #expect(square(3) == 9)
        for _ in 0..<10 {
            clock.advance(by: .seconds(2))
            #expect(square(3) == 9)
        }
        // A 5-second life read every 2 seconds to 20: stored at 0, 6, 12 and 18 s, and each
        // result found 2 and 4 seconds old before it expires.
        #expect(counted.runs.value == 4)
        let expected: [Duration] = [2, 4, 2, 4, 2, 4, 2].map { .seconds($0) }
        #expect(ages.value == expected)
        #expect(storage.stores.value == 4)  // reading never writes
    }

    @Test("a function created again with the same identity on one clock ages what the earlier one stored")
    func recreatedFunctionSharesTheTimeline() {
        let clock = ManualClock()
        let storage = DictionaryStorage()
        let first = MemoizedFunction<Int>("square", storage: storage, expiresAfter: .seconds(5), clock: clock)
        #expect(first.call(arguments: 3) { 9 } == 9)
        clock.advance(by: .seconds(100))
        let second = MemoizedFunction<Int>("square", storage: storage, expiresAfter: .seconds(5), clock: clock)
        let runs = Locked(0)
        #expect(
            second.call(arguments: 3) { () -> Int in
                runs.mutate { $0 += 1 }
                return 9
            } == 9
        )
        #expect(runs.value == 1)
    }

    @Test("a result found while expireAll and a newer store race is never written back")
    func readingNeverWritesBack() {
        let clock = ManualClock()
        let storage = HookStorage()
        let memo = MemoizedFunction<String>("price", storage: storage, expiresAfter: .seconds(60), clock: clock)
        let key = MemoKey(function: "price", arguments: "x")
        storage.values.mutate { $0[key] = MemoValue("old price", computeTime: .zero) }  // restored: unknown age
        // Another thread, between this call's read and what follows: expireAll, then a new result.
        storage.afterRead.mutate {
            $0 = {
                memo.expireAll()
                _ = memo.call(arguments: "x") { "new price" }
            }
        }
        _ = memo.call(arguments: "x") { "new price" }
        #expect(memo.call(arguments: "x") { "newest price" } == "new price")
        #expect(storage.values.value[key]?.value as? String == "new price")
    }

    @Test("an async run that finds a result stored since its caller looked answers with a hit")
    func runFindingAStoredResultIsAHit() async throws {
        let storage = HookStorage()
        let memo = MemoizedFunction<Int>("answer", storage: storage)
        let key = MemoKey(function: "answer", arguments: 1)
        // Another writer stores the result just after this caller's lookup missed.
        storage.afterRead.mutate {
            $0 = { storage.values.mutate { $0[key] = MemoValue(42, computeTime: .seconds(1)) } }
        }
        let result = try await memo.call(arguments: 1) { @Sendable () async throws -> Int in 0 }
        #expect(result == 42)
        let stats = memo.statistics
        #expect(stats.hitCount == 1 && stats.missCount == 0 && stats.runCount == 0)
        #expect(stats.timeSaved == .seconds(1))
    }

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
