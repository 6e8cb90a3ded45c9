#if Macros
import CacheKitMacros
import Synchronization
import Testing

// Types using @Memoized for real: the tests check what their calls return and run.

/// Instances with different state whose memoized method shares one cache.
final class Account: Sendable {
    static let shared = MemoCache(countLimit: 100, policy: .lru)
    let cents: Int

    init(cents: Int) { self.cents = cents }

    @Memoized(cache: Account.shared)
    func balance(in currency: String) -> Int {
        currency == "EUR" ? cents : cents * 2
    }
}

/// Instances whose memoized methods keep their results in one `MemoStorage` (here a
/// `SharedCache`), with a cost, and a static one on the same storage.
final class Ledger: Sendable {
    static let storage = SharedCache<MemoKey, MemoValue>(totalCostLimit: 1_000, policy: .lru)
    let cents: Int
    let runs = Atomic<Int>(0)

    init(cents: Int) { self.cents = cents }

    @Memoized(storage: Ledger.storage, cost: { (text: String) in text.count })
    func statement(for month: Int) -> String {
        runs.add(1, ordering: .relaxed)
        return "\(cents) in month \(month)"
    }

    @Memoized(storage: Ledger.storage, expiresAfter: .seconds(60))
    static func rate(_ currency: String) -> Int { currency == "EUR" ? 1 : 2 }
}

final class Squarer: Sendable {
    let runs = Atomic<Int>(0)

    @Memoized(countLimit: 10, policy: .lru)
    func square(_ value: Int) -> Int {
        runs.add(1, ordering: .relaxed)
        return value * value
    }

    @Memoized(keys: ["location"])
    func weather(for location: String, requestID: Int) -> String {
        runs.add(1, ordering: .relaxed)
        return "sunny in \(location) (request \(requestID))"
    }

    @Memoized
    func lookup(_ name: String) -> Int? {
        runs.add(1, ordering: .relaxed)
        return name == "one" ? 1 : nil
    }

    @Memoized
    func announce(_ message: String) {
        runs.add(1, ordering: .relaxed)
    }

    @Memoized
    func sum(_ values: Int..., scale: Int = 1) -> Int {
        runs.add(1, ordering: .relaxed)
        return values.reduce(0, +) * scale
    }

    @Memoized(insertionPolicy: { (text: String) in text.count <= 5 })
    func repeated(_ text: String, times: Int) -> String {
        runs.add(1, ordering: .relaxed)
        return String(repeating: text, count: times)
    }

    /// A result of 0 is stored but never served: the rule rejects it on every hit. (With the
    /// other options the initializer takes, in its order.)
    @Memoized(
        countLimit: 10,
        clock: ContinuousClock(),
        cost: { (count: Int) in count },
        expiresWhen: { (count: Int, _: Duration) in count == 0 },
        isEnabled: true
    )
    func vowels(in text: String) -> Int {
        runs.add(1, ordering: .relaxed)
        return text.filter { "aeiou".contains($0) }.count
    }

    @Memoized
    func parse(_ text: String) throws(ParseError) -> Int {
        runs.add(1, ordering: .relaxed)
        guard let value = Int(text) else { throw ParseError(text: text) }
        return value
    }
}

struct ParseError: Error, Equatable {
    var text: String
}

/// Two functions with the same arguments in one shared cache.
enum Lookups {
    static let shared = MemoCache(countLimit: 100, policy: .lru)
    static let runs = Atomic<Int>(0)

    @Memoized(cache: Lookups.shared)
    static func length(of text: String) -> Int {
        runs.add(1, ordering: .relaxed)
        return text.count
    }

    @Memoized(cache: Lookups.shared)
    static func vowels(of text: String) -> Int {
        runs.add(1, ordering: .relaxed)
        return text.filter { "aeiou".contains($0) }.count
    }
}

/// A struct's method, keyed by its instance too.
struct Greeter: Hashable, Sendable {
    var greeting: String

    @Memoized(keys: ["self", "name"])
    func greet(_ name: String) -> String { "\(greeting), \(name)!" }
}

/// A free function, recursive: each call with a new argument runs once.
@Memoized
func fibonacci(_ n: Int) -> Int {
    n < 2 ? n : fibonacci(n - 1) + fibonacci(n - 2)
}

/// Expiry on a manual clock.
enum Expiring {
    static let clock = ManualClock()
    static let runs = Atomic<Int>(0)

    @Memoized(expiresAfter: .seconds(5), clock: Expiring.clock)
    static func stamp(_ key: String) -> Int {
        runs.add(1, ordering: .relaxed)
        return runs.load(ordering: .relaxed)
    }
}

/// Lets a test hold an async body until it has seen the callers it expects.
actor Gate {
    private var entered = 0
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private var enteredWaiters: [CheckedContinuation<Void, Never>] = []
    private var isOpen = false

    var entries: Int { entered }

    /// Counts an entry and waits until the gate opens.
    func pass() async {
        entered += 1
        for waiter in enteredWaiters { waiter.resume() }
        enteredWaiters.removeAll()
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    /// Returns once at least one caller has entered.
    func waitForEntry() async {
        if entered > 0 { return }
        await withCheckedContinuation { enteredWaiters.append($0) }
    }

    func open() {
        isOpen = true
        for waiter in waiters { waiter.resume() }
        waiters.removeAll()
    }
}

struct Failure: Error {}

final class Loader: Sendable {
    let gate = Gate()
    let failures = Atomic<Int>(0)

    @Memoized
    func load(_ id: Int) async throws -> String {
        await gate.pass()
        if failures.load(ordering: .relaxed) > 0 {
            failures.subtract(1, ordering: .relaxed)
            throw Failure()
        }
        return "item \(id)"
    }

    @Memoized
    func title(_ id: Int) async -> String {
        await gate.pass()
        return "title \(id)"
    }
}

/// An actor's memoized methods run in its isolation, touching its state.
actor Counter {
    var asyncRuns = 0
    var syncRuns = 0

    @Memoized
    func double(_ value: Int) async -> Int {
        asyncRuns += 1
        return value * 2
    }

    @Memoized
    func triple(_ value: Int) -> Int {
        syncRuns += 1
        return value * 3
    }
}

/// The cache two same-named private functions in two files share (see MemoizedPrivateNames.swift).
enum PrivateNames {
    static let cache = MemoCache(countLimit: 100, policy: .lru)
}

@Memoized(cache: PrivateNames.cache)
private func describe(id: Int) -> String { "first file \(id)" }

/// Parameters the expansion must handle: a keyword as a parameter name, a type whose name ends
/// in "some" with a default value, a multi-line string whose lines sit left of the function.
enum Awkward {
    struct Awesome: Hashable, Sendable { var level = 3 }

    @Memoized
    static func forecast(in place: String, at: Int) -> String { "\(place)@\(at)" }

    @Memoized
    static func named(in: String) -> String { "in \(`in`)" }

    @Memoized
    static func rate(_ value: Awesome = Awesome()) -> Int { value.level * 2 }

    @Memoized
    static func banner(_ n: Int) -> String {
        """
        hello \(n)
            world
        """
    }
}

/// A result type written `T!`, which the macro stores as `T?`.
enum UnwrappedLookups {
    @Memoized static func find(_ id: Int) -> Int! { id < 0 ? nil : id * 2 }
}

@Suite("@Memoized behaviour")
struct MemoizedBehaviourTests {
    @Test func samePrivateNamesInTwoFilesSharingACacheDoNotCollide() {
        #expect(describe(id: 1) == "first file 1")
        #expect(describeFromSecondFile(1) == "second file 1")
        #expect(describe(id: 1) == "first file 1")
        #expect(PrivateNames.cache.count == 2)
    }

    @Test func instancesSharingAStorageKeepTheirOwnResults() {
        let (poor, rich) = (Ledger(cents: 5), Ledger(cents: 500))
        for _ in 0..<2 {
            #expect(poor.statement(for: 1) == "5 in month 1")
            #expect(rich.statement(for: 1) == "500 in month 1")
        }
        #expect(poor.runs.load(ordering: .relaxed) == 1 && rich.runs.load(ordering: .relaxed) == 1)
        #expect(Ledger.rate("EUR") == 1)
        #expect(poor._memoized_statement.storage === Ledger.storage)
        #expect(poor._memoized_statement.cache == nil)
        let mine = Ledger.storage.allItems().keys.filter { $0.function == poor._memoized_statement.id }
        #expect(mine.count == 1)
        #expect(Ledger.storage.totalCost >= "5 in month 1".count + "500 in month 1".count)
    }

    @Test func keywordNamesOpaqueLookalikesAndMultilineStringsExpandAsWritten() {
        #expect(Awkward.named(in: "x") == "in x")
        #expect(Awkward.forecast(in: "Paris", at: 3) == "Paris@3")
        #expect(Awkward.rate() == 6)
        #expect(Awkward.banner(1) == "hello 1\n    world")
        #expect(Awkward.banner(1) == "hello 1\n    world")  // stored: the same text
    }

    @Test func repeatedCallsReturnTheStoredResult() {
        let squarer = Squarer()
        #expect(squarer.square(3) == 9)
        #expect(squarer.square(3) == 9)
        #expect(squarer.square(4) == 16)
        #expect(squarer.runs.load(ordering: .relaxed) == 2)
        let statistics = squarer._memoized_square.statistics
        #expect(statistics.hitCount == 1)
        #expect(statistics.missCount == 2)
        #expect(squarer._memoized_square.id == "CacheKitMacrosTests.Squarer.square(_:)")
    }

    @Test func eachInstanceOfAClassHasItsOwnCache() {
        let first = Squarer()
        let second = Squarer()
        _ = first.square(5)
        _ = second.square(5)
        #expect(first.runs.load(ordering: .relaxed) == 1)
        #expect(second.runs.load(ordering: .relaxed) == 1)
    }

    @Test func theKeyIsTheChosenParametersOnly() {
        let squarer = Squarer()
        let first = squarer.weather(for: "Paris", requestID: 1)
        #expect(squarer.weather(for: "Paris", requestID: 2) == first)
        #expect(squarer.weather(for: "Oslo", requestID: 3) == "sunny in Oslo (request 3)")
        #expect(squarer.runs.load(ordering: .relaxed) == 2)
    }

    @Test func nilResultsAreStored() {
        let squarer = Squarer()
        #expect(squarer.lookup("two") == nil)
        #expect(squarer.lookup("two") == nil)
        #expect(squarer.lookup("one") == 1)
        #expect(squarer.runs.load(ordering: .relaxed) == 2)
        #expect(squarer._memoized_lookup.statistics.hitCount == 1)
    }

    @Test func voidFunctionsRunOncePerKey() {
        let squarer = Squarer()
        squarer.announce("hello")
        squarer.announce("hello")
        squarer.announce("bye")
        #expect(squarer.runs.load(ordering: .relaxed) == 2)
    }

    @Test func variadicParametersAreOneKey() {
        let squarer = Squarer()
        #expect(squarer.sum(1, 2, 3) == 6)
        #expect(squarer.sum(1, 2, 3) == 6)
        #expect(squarer.sum(1, 2, 3, scale: 2) == 12)
        #expect(squarer.runs.load(ordering: .relaxed) == 2)
    }

    @Test func insertionPolicyRefusesResults() {
        let squarer = Squarer()
        #expect(squarer.repeated("ab", times: 2) == "abab")
        #expect(squarer.repeated("ab", times: 2) == "abab")
        #expect(squarer.repeated("ab", times: 3) == "ababab")
        #expect(squarer.repeated("ab", times: 3) == "ababab")
        #expect(squarer.runs.load(ordering: .relaxed) == 3)  // the 6-character result is never stored
    }

    @Test func aCustomExpirationRuleIsAskedOnEveryHit() {
        let squarer = Squarer()
        #expect(squarer.vowels(in: "cache") == 2)
        #expect(squarer.vowels(in: "cache") == 2)
        #expect(squarer.vowels(in: "rhythm") == 0)
        #expect(squarer.vowels(in: "rhythm") == 0)
        #expect(squarer.runs.load(ordering: .relaxed) == 3)  // "rhythm" ran twice
        #expect(squarer._memoized_vowels.cache?.count == 2)
    }

    @Test func typedThrowsStayTypedAndErrorsAreNotStored() {
        let squarer = Squarer()
        #expect(throws: ParseError(text: "x")) { try squarer.parse("x") }
        #expect(throws: ParseError(text: "x")) { try squarer.parse("x") }
        let error: ParseError? = {
            do throws(ParseError) {
                _ = try squarer.parse("y")
                return nil
            } catch {
                return error  // statically a ParseError: the typed throws survived the macro
            }
        }()
        #expect(error == ParseError(text: "y"))
        #expect((try? squarer.parse("7")) == 7)
        #expect((try? squarer.parse("7")) == 7)
        #expect(squarer.runs.load(ordering: .relaxed) == 4)
    }

    @Test func functionsSharingACacheDoNotCollide() {
        Lookups.shared.removeAll()
        #expect(Lookups.length(of: "banana") == 6)
        #expect(Lookups.vowels(of: "banana") == 3)
        #expect(Lookups.length(of: "banana") == 6)
        #expect(Lookups.vowels(of: "banana") == 3)
        #expect(Lookups.runs.load(ordering: .relaxed) == 2)
        #expect(Lookups.shared.count == 2)
        Lookups._memoized_length.expireAll()  // only length's results leave the shared cache
        #expect(Lookups.shared.count == 1)
        #expect(Lookups._memoized_vowels.id == "CacheKitMacrosTests.Lookups.vowels(of:)")
    }

    @Test func instancesSharingACacheKeepTheirOwnResults() {
        let rich = Account(cents: 1_000)
        let poor = Account(cents: 5)
        #expect(rich.balance(in: "EUR") == 1_000)
        #expect(poor.balance(in: "EUR") == 5)
        #expect(rich.balance(in: "EUR") == 1_000)
        #expect(rich._memoized_balance.statistics.hitCount == 1)
        #expect(rich._memoized_balance.id != poor._memoized_balance.id)
        poor._memoized_balance.expireAll()  // the other instance's results stay
        #expect(rich.balance(in: "EUR") == 1_000)
        #expect(rich._memoized_balance.statistics.hitCount == 2)
    }

    @Test func selfInTheKeySeparatesInstances() {
        let hello = Greeter(greeting: "Hello")
        let hi = Greeter(greeting: "Hi")
        #expect(hello.greet("Ada") == "Hello, Ada!")
        #expect(hi.greet("Ada") == "Hi, Ada!")
        #expect(hello.greet("Ada") == "Hello, Ada!")
        #expect(Greeter._memoized_greet.statistics.hitCount >= 1)
    }

    @Test func recursiveFreeFunction() {
        #expect(fibonacci(80) == 23_416_728_348_467_685)
        #expect(_memoized_fibonacci.statistics.runCount <= 81)
    }

    @Test func resultsExpireAfterTheirTimeToLive() {
        let first = Expiring.stamp("a")
        #expect(Expiring.stamp("a") == first)
        Expiring.clock.advance(by: .seconds(6))
        #expect(Expiring.stamp("a") != first)
    }

    @Test func cachingCanBeSwitchedOff() {
        let squarer = Squarer()
        _ = squarer.square(2)
        Memoization.withCachingDisabled { _ = squarer.square(2) }
        squarer._memoized_square.isEnabled = false
        _ = squarer.square(2)
        squarer._memoized_square.isEnabled = true
        _ = squarer.square(2)
        #expect(squarer.runs.load(ordering: .relaxed) == 3)
        #expect(squarer._memoized_square.statistics.bypassCount == 2)
        #expect(squarer._memoized_square.statistics.hitCount == 1)
        squarer._memoized_square.expireAll()
        _ = squarer.square(2)
        #expect(squarer.runs.load(ordering: .relaxed) == 4)
    }

    @Test func concurrentAsyncCallsRunTheBodyOnce() async throws {
        let loader = Loader()
        let callers = 8
        let results = try await withThrowingTaskGroup(of: String.self) { group in
            group.addTask { try await loader.load(1) }
            // The first call is inside the body, held by the gate; the others call now, and find
            // its run in flight or (if the gate opened first) its stored result: never a second run.
            await loader.gate.waitForEntry()
            for _ in 1..<callers { group.addTask { try await loader.load(1) } }
            await loader.gate.open()
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results == Array(repeating: "item 1", count: callers))
        #expect(await loader.gate.entries == 1)
        let statistics = loader._memoized_load.statistics
        #expect(statistics.runCount == 1)
        #expect(statistics.hitCount + statistics.missCount == callers)
    }

    @Test func asyncErrorsAreSharedButNotStored() async throws {
        let loader = Loader()
        await loader.gate.open()
        loader.failures.store(1, ordering: .relaxed)
        await #expect(throws: Failure.self) { try await loader.load(2) }
        #expect(try await loader.load(2) == "item 2")
        #expect(try await loader.load(2) == "item 2")
        #expect(await loader.gate.entries == 2)
    }

    @Test func nonThrowingAsyncMethod() async {
        let loader = Loader()
        await loader.gate.open()
        #expect(await loader.title(3) == "title 3")
        #expect(await loader.title(3) == "title 3")
        #expect(await loader.gate.entries == 1)
    }

    @Test func actorMethodsRunInTheActorsIsolation() async {
        let counter = Counter()
        #expect(await counter.double(4) == 8)
        #expect(await counter.double(4) == 8)
        #expect(await counter.triple(4) == 12)
        #expect(await counter.triple(4) == 12)
        #expect(await counter.asyncRuns == 1)
        #expect(await counter.syncRuns == 1)
    }

    @Test func anImplicitlyUnwrappedResultCompilesAndIsStored() {
        let found: Int? = UnwrappedLookups.find(4)
        #expect(found == 8)
        #expect(UnwrappedLookups.find(-1) == nil)
        _ = UnwrappedLookups.find(4)
        #expect(UnwrappedLookups._memoized_find.statistics.hitCount == 1)
    }
}
#endif
