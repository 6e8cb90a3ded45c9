#if Macros
@_exported import CacheKit

/// Memoizes a function or method: calls with arguments seen before return the stored result
/// instead of running the body again. Adding caching to an existing method is one line.
///
/// ```swift
/// import CacheKitMacros
///
/// final class WeatherService: Sendable {
///     @Memoized(countLimit: 5, policy: .lru, expiresAfter: .seconds(5))
///     func weather(for location: Location) async throws -> Weather {
///         try await api.fetch(location)
///     }
/// }
/// ```
///
/// The method is written as usual; the macro keeps its signature and replaces its body with a
/// call through a `MemoizedFunction`, which it adds beside it:
///
/// ```swift
/// func weather(for location: Location) async throws -> Weather {
///     try await self._memoized_weather.call(arguments: CacheKit.MemoArguments(location)) {
///         () async throws -> Weather in
///         try await self._uncached_weather(for: location)
///     }
/// }
/// let _memoized_weather = CacheKit.MemoizedFunction<Weather>(
///     "WeatherService.weather(for:)", countLimit: 5, policy: .lru, expiresAfter: .seconds(5))
/// private func _uncached_weather(for location: Location) async throws -> Weather {
///     try await api.fetch(location)
/// }
/// ```
///
/// `_memoized_NAME` is the function's `MemoizedFunction`, with the function's access level:
/// use it for `MemoizedFunction/statistics`, `MemoizedFunction/expireAll()`, expiration
/// triggers (`MemoizedFunction/expireAll(whenever:)`, `MemoizedFunction/expireAll(on:object:center:)`)
/// and `MemoizedFunction/isEnabled`. `_uncached_NAME` is the body as written, private. The
/// function's identity (its `MemoizedFunction/id`, part of every key) is its module, the
/// enclosing types' names and the function's full name, such as
/// `"App.WeatherService.weather(for:)"`, so that same-named functions of two modules sharing a
/// cache never share results; or its file and then the names (`"App/Weather.swift:weather(for:)"`)
/// when it or an enclosing type is private or fileprivate, so that those of two files do not. As the
/// body runs in `_uncached_NAME`, `#function` inside it names `_uncached_NAME` (`#fileID` and
/// `#line` are unchanged).
///
/// ## Options
/// Every option but `keys` is passed as written to `MemoizedFunction`'s initializer, where its
/// meaning is documented; each is evaluated where the storage is initialized (once per instance
/// for per-instance storage, see below), so it may name static members but not `self` (for a
/// class or actor instance method, through the type's name: `Self` is a compile-time error).
/// - `countLimit`: the most results kept; `0` (the default) means no limit.
/// - `totalCostLimit`: the most total `cost` kept; `0` means no limit.
/// - `policy`: which result leaves first when a limit is reached: any `EvictionPolicy`
///   (`.lru`, `.fifo`, `.lfu`, `.sieve`, `.s3fifo`, `.arc`, `.wTinyLFU`, `.adaptive`, `.default`).
/// - `expiration`: the cache's `Expiration` (time to live, time to idle, refresh).
/// - `expiresAfter`: each result's own time to live ("older than").
/// - `clock`: the clock expiry is measured on, e.g. a shared `ManualClock` in tests.
/// - `insertionPolicy`: asked with each result before it is stored; a result it refuses is
///   returned but not stored. Name the closure's parameter type, as the macro cannot infer it:
///   `insertionPolicy: { (image: Data) in image.count <= 30_000 }`.
/// - `cost`: each result's cost, for `totalCostLimit`; annotate it as `insertionPolicy`.
/// - `expiresWhen`: your own expiration rule, asked by each call that finds a stored result,
///   with the result and its age (`true`: run the body again); annotate it as `insertionPolicy`:
///   `expiresWhen: { (quote: Quote, age: Duration) in quote.isClosed || age > .seconds(60) }`.
/// - `isEnabled`: whether caching starts on for this function.
/// - `cache`: a `MemoCache` shared with other functions (another overload), such as a
///   `static let`; its limits, policy and expiration apply to all of them. Keys carry each
///   function's identity, so shared functions never collide.
/// - `storage`: a `MemoStorage` of your own instead of a `MemoCache` (another overload), such
///   as a disk store; it may be shared as `cache` is.
/// - `keys`: the parameters the cache key is made of, by name (ClearCache's `parameterIndexes`):
///   all of them by default, or a subset, `keys: ["location"]`; `[]` stores one result for all
///   calls. `"self"` adds the instance itself (which must be `Hashable`) for a method whose
///   result depends on its instance's state. The order listed does not matter. Calls whose keys
///   are equal must have interchangeable results: leaving a parameter out says it does not
///   change the result. An unknown name is a compile-time error naming it.
///
/// Each parameter in the key must be `Hashable` and `Sendable`: one that is not is a
/// compile-time error (`MemoArguments` requires `Hashable`), so leave it out with `keys`.
///
/// ## Where the cache lives
/// - Instance methods declared in a class or an actor: a `let` per instance, so each instance
///   has its own cache.
/// - Static and class methods, and methods of structs, enums and extensions (which cannot
///   have stored instance properties): a `static let`, so all instances share one cache,
///   keyed by the arguments only. Add `"self"` to `keys` when the result depends on the
///   instance. Generic types cannot have static stored properties: memoize such methods in a
///   class or actor, or outside the type.
/// - Free functions: a global `let`.
///
/// ## Results, errors and concurrency
/// The result type is the cache's `Output` (`Void` without one; it must be `Sendable`). An
/// `Optional` result is stored as is (a stored `nil` is a hit); a `Void` function runs once per
/// key while its entry is cached. A call that throws stores nothing. Synchronous functions keep
/// their effects: a non-throwing one stays non-throwing, `throws(E)` stays typed. `async`
/// functions are single-flight: concurrent calls with equal keys run the body once and share its
/// result or error. The body runs in a task of its own, in the function's own isolation (an
/// actor's method on its actor), so `self` and the arguments of an `async` method must be
/// `Sendable`. Switch caching off per function (`_memoized_NAME.isEnabled`), globally
/// (`Memoization/isEnabled`) or for one task (`Memoization/withCachingDisabled(_:)-(()->R)`).
///
/// ## Limitations
/// `@Memoized` reports these itself, with an error naming the problem: generic functions and
/// `some` parameters or results (the cache holds one result type); `inout` parameters and
/// `mutating` methods (a cached call would skip the side effect); `rethrows`; `async throws(E)`
/// (concurrent callers share one run throwing `any Error`); parameters named `_`; operators;
/// local functions; protocol requirements; unknown or repeated names in `keys`; methods of
/// generic structs and enums.
///
/// The compiler reports these, in the expansion: methods in protocol extensions and in
/// extensions of generic types ("static stored properties not supported"); two memoized methods
/// with the same base name in one type, or a memoized override of a memoized method (both
/// declare `_memoized_NAME`). A type with synthesized `Codable`, `Equatable` or `Hashable`
/// conformance and per-instance storage needs `CodingKeys` or its own `==` and `hash(into:)`.
@attached(body)
@attached(peer, names: prefixed(_memoized_), prefixed(_uncached_))
public macro Memoized(
    countLimit: Int = 0,
    totalCostLimit: Int = 0,
    policy: EvictionPolicy = .default,
    expiration: Expiration = .never,
    expiresAfter: Duration? = nil,
    clock: any Clock<Duration> = ContinuousClock(),
    isEnabled: Bool = true,
    keys: [String]? = nil
) = #externalMacro(module: "CacheKitMacrosPlugin", type: "MemoizedMacro")

/// Memoizes a function or method, with an insertion policy or a cost for its results `Output`.
/// See `Memoized(countLimit:totalCostLimit:policy:expiration:expiresAfter:clock:isEnabled:keys:)`.
///
/// ```swift
/// @Memoized(countLimit: 100, insertionPolicy: { (thumbnail: Data) in thumbnail.count <= 30_000 })
/// func thumbnail(for url: URL) async throws -> Data { ... }
/// ```
@attached(body)
@attached(peer, names: prefixed(_memoized_), prefixed(_uncached_))
public macro Memoized<Output>(
    countLimit: Int = 0,
    totalCostLimit: Int = 0,
    policy: EvictionPolicy = .default,
    expiration: Expiration = .never,
    expiresAfter: Duration? = nil,
    clock: any Clock<Duration> = ContinuousClock(),
    insertionPolicy: (@Sendable (Output) -> Bool)? = nil,
    cost: (@Sendable (Output) -> Int)? = nil,
    expiresWhen: (@Sendable (Output, Duration) -> Bool)? = nil,
    isEnabled: Bool = true,
    keys: [String]? = nil
) = #externalMacro(module: "CacheKitMacrosPlugin", type: "MemoizedMacro")

/// Memoizes a function or method in `cache`, a `MemoCache` other functions may share (its
/// limits, policy and expiration apply to all of them). See
/// `Memoized(countLimit:totalCostLimit:policy:expiration:expiresAfter:clock:isEnabled:keys:)`.
///
/// ```swift
/// enum Lookups {
///     static let cache = MemoCache(countLimit: 1_000, policy: .lru)
///     @Memoized(cache: Lookups.cache) static func country(code: String) -> Country? { ... }
///     @Memoized(cache: Lookups.cache) static func currency(code: String) -> Currency? { ... }
/// }
/// ```
@attached(body)
@attached(peer, names: prefixed(_memoized_), prefixed(_uncached_))
public macro Memoized(
    cache: MemoCache,
    expiresAfter: Duration? = nil,
    isEnabled: Bool = true,
    keys: [String]? = nil
) = #externalMacro(module: "CacheKitMacrosPlugin", type: "MemoizedMacro")

/// Memoizes a function or method in the shared `cache`, with an insertion policy or a cost for
/// its results `Output`. See `Memoized(cache:expiresAfter:isEnabled:keys:)`.
@attached(body)
@attached(peer, names: prefixed(_memoized_), prefixed(_uncached_))
public macro Memoized<Output>(
    cache: MemoCache,
    expiresAfter: Duration? = nil,
    insertionPolicy: (@Sendable (Output) -> Bool)? = nil,
    cost: (@Sendable (Output) -> Int)? = nil,
    expiresWhen: (@Sendable (Output, Duration) -> Bool)? = nil,
    isEnabled: Bool = true,
    keys: [String]? = nil
) = #externalMacro(module: "CacheKitMacrosPlugin", type: "MemoizedMacro")

/// Memoizes a function or method in `storage`, a ``MemoStorage`` of your own (ClearCache's
/// `INNCache`: a disk or database store, say), which other functions may share. The function
/// enforces `expiresAfter` (measured on `clock`) itself; the storage decides what it keeps. See
/// `Memoized(countLimit:totalCostLimit:policy:expiration:expiresAfter:clock:isEnabled:keys:)`.
///
/// ```swift
/// enum Weather {
///     static let results = DiskResults(directory: resultsURL)  // your MemoStorage
///     @Memoized(storage: Weather.results, expiresAfter: .seconds(600))
///     static func forecast(for city: String) async throws -> Forecast { ... }
/// }
/// ```
@attached(body)
@attached(peer, names: prefixed(_memoized_), prefixed(_uncached_))
public macro Memoized(
    storage: any MemoStorage,
    expiresAfter: Duration? = nil,
    clock: any Clock<Duration> = ContinuousClock(),
    isEnabled: Bool = true,
    keys: [String]? = nil
) = #externalMacro(module: "CacheKitMacrosPlugin", type: "MemoizedMacro")

/// Memoizes a function or method in `storage`, with an insertion policy, a cost or an
/// expiration rule for its results `Output`. See `Memoized(storage:expiresAfter:clock:isEnabled:keys:)`.
@attached(body)
@attached(peer, names: prefixed(_memoized_), prefixed(_uncached_))
public macro Memoized<Output>(
    storage: any MemoStorage,
    expiresAfter: Duration? = nil,
    clock: any Clock<Duration> = ContinuousClock(),
    insertionPolicy: (@Sendable (Output) -> Bool)? = nil,
    cost: (@Sendable (Output) -> Int)? = nil,
    expiresWhen: (@Sendable (Output, Duration) -> Bool)? = nil,
    isEnabled: Bool = true,
    keys: [String]? = nil
) = #externalMacro(module: "CacheKitMacrosPlugin", type: "MemoizedMacro")
#endif
