#if Macros
import CacheKitMacrosPlugin
import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacrosGenericTestSupport
import Testing

private let macros: [String: MacroSpec] = ["Memoized": MacroSpec(type: MemoizedMacro.self)]

/// `assertMacroExpansion` reporting its failures to Swift Testing.
private func assertExpansion(
    _ source: String,
    expandedSource: String,
    diagnostics: [DiagnosticSpec] = [],
    sourceLocation: SourceLocation = #_sourceLocation
) {
    assertMacroExpansion(
        source,
        expandedSource: expandedSource,
        diagnostics: diagnostics,
        macroSpecs: macros,
        failureHandler: { failure in
            Issue.record(Comment(rawValue: failure.message), sourceLocation: sourceLocation)
        }
    )
}

/// The diagnostic `@Memoized` reports, at a line and column of the test source.
private func error(_ message: String, line: Int, column: Int) -> DiagnosticSpec {
    DiagnosticSpec(message: message, line: line, column: column)
}

/// The diagnostic for a method whose cache would be a static property of a generic type.
private let genericTypeStaticMessage =
    "@Memoized stores the cache of this method in a static property, which generic types cannot "
    + "have; declare the method in a class or actor (whose instances each hold a cache), "
    + "or outside the generic type"

@Suite("@Memoized expansion")
struct MemoizedExpansionTests {
    @Test func asyncThrowingMethodOfAClassHasACachePerInstance() {
        assertExpansion(
            """
            final class WeatherService: Sendable {
                @Memoized(countLimit: 5, policy: .lru, expiresAfter: .seconds(5))
                func weather(for location: Location) async throws -> Weather {
                    try await api.fetch(location)
                }
            }
            """,
            expandedSource: """
                final class WeatherService: Sendable {
                    func weather(for location: Location) async throws -> Weather {
                        try await self._memoized_weather.call(arguments: CacheKit.MemoArguments(location)) { () async throws -> Weather in
                            try await self._uncached_weather(for: location)
                        }
                    }

                    let _memoized_weather = CacheKit.MemoizedFunction<Weather>("TestModule.WeatherService.weather(for:)", countLimit: 5, policy: .lru, expiresAfter: .seconds(5))

                    private func _uncached_weather(for location: Location) async throws -> Weather {
                        try await api.fetch(location)
                    }
                }
                """
        )
    }

    @Test func syncMethodKeepsItsEffectsAndAStructSharesAStaticCache() {
        assertExpansion(
            """
            struct Parser {
                @Memoized
                public func parse(_ text: String, strict: Bool) throws(ParseError) -> Int {
                    try run(text, strict)
                }
            }
            """,
            expandedSource: """
                struct Parser {
                    public func parse(_ text: String, strict: Bool) throws(ParseError) -> Int {
                        try Self._memoized_parse.call(arguments: CacheKit.MemoArguments(text, strict)) { () throws(ParseError) -> Int in
                            try self._uncached_parse(text, strict: strict)
                        }
                    }

                    public static let _memoized_parse = CacheKit.MemoizedFunction<Int>("TestModule.Parser.parse(_:strict:)")

                    private func _uncached_parse(_ text: String, strict: Bool) throws(ParseError) -> Int {
                        try run(text, strict)
                    }
                }
                """
        )
    }

    @Test func freeFunctionWithKeySubsetVariadicsAndNoResult() {
        assertExpansion(
            """
            @Memoized(keys: ["values"])
            func record(_ values: Int..., note: String = "") {
                print(values, note)
            }
            """,
            expandedSource: """
                func record(_ values: Int..., note: String = "") {
                    _memoized_record.call(arguments: CacheKit.MemoArguments(values)) { () -> Void in
                        _uncached_record(values, note: note)
                    }
                }

                let _memoized_record = CacheKit.MemoizedFunction<Void>("TestModule.record(_:note:)")

                private func _uncached_record(_ values: [Int], note: String) {
                    print(values, note)
                }
                """
        )
    }

    @Test func instanceMethodsSharingACacheGetAnIdentityPerInstance() {
        assertExpansion(
            """
            final class Account: Sendable {
                @Memoized(cache: Account.shared)
                func balance(in currency: String) -> Int {
                    cents / rate(currency)
                }
            }
            """,
            expandedSource: """
                final class Account: Sendable {
                    func balance(in currency: String) -> Int {
                        self._memoized_balance.call(arguments: CacheKit.MemoArguments(currency)) { () -> Int in
                            self._uncached_balance(in: currency)
                        }
                    }

                    let _memoized_balance = CacheKit.MemoizedFunction<Int>(CacheKit.Memoization.instanceIdentity("TestModule.Account.balance(in:)"), cache: Account.shared)

                    private func _uncached_balance(in currency: String) -> Int {
                        cents / rate(currency)
                    }
                }
                """
        )
    }

    @Test func staticMethodInAnExtensionWithASharedCacheAndNonThrowingAsync() {
        assertExpansion(
            """
            extension Outer.Lookups {
                @Memoized(cache: Self.shared, keys: ["code"])
                @MainActor static func country(code: String, verbose: Bool) async -> Country? {
                    await load(code)
                }
            }
            """,
            expandedSource: """
                extension Outer.Lookups {
                    @MainActor static func country(code: String, verbose: Bool) async -> Country? {
                        await Self._memoized_country.call(arguments: CacheKit.MemoArguments(code)) { () async -> Country? in
                            await self._uncached_country(code: code, verbose: verbose)
                        }
                    }

                    static let _memoized_country = CacheKit.MemoizedFunction<Country?>("TestModule.Outer.Lookups.country(code:verbose:)", cache: Self.shared)

                    @MainActor private static func _uncached_country(code: String, verbose: Bool) async -> Country? {
                        await load(code)
                    }
                }
                """
        )
    }

    @Test func selfInKeysOfAStaticMethodIsAnError() {
        assertExpansion(
            """
            enum E {
                @Memoized(keys: ["self"]) static func f(x: Int) -> Int { x }
            }
            """,
            expandedSource: """
                enum E {
                    static func f(x: Int) -> Int {
                        x
                    }
                }
                """,
            diagnostics: [error("'self' in keys needs an instance method", line: 2, column: 22)]
        )
    }

    @Test func selfInKeysAndAnActorMethod() {
        assertExpansion(
            """
            actor Store {
                @Memoized(insertionPolicy: { (value: Int) in value > 0 }, keys: ["self", "id"])
                func value(id: Int) async throws -> Int { try await fetch(id) }
            }
            """,
            expandedSource: """
                actor Store {
                    func value(id: Int) async throws -> Int {
                        try await self._memoized_value.call(arguments: CacheKit.MemoArguments(self, id)) { () async throws -> Int in
                            try await self._uncached_value(id: id)
                        }
                    }

                    let _memoized_value = CacheKit.MemoizedFunction<Int>("TestModule.Store.value(id:)", insertionPolicy: { (value: Int) in
                            value > 0
                        })

                    private func _uncached_value(id: Int) async throws -> Int {
                        try await fetch(id)
                    }
                }
                """
        )
    }

    @Test func unknownKeyIsAnErrorNamingIt() {
        assertExpansion(
            """
            @Memoized(keys: ["location", "dayz"])
            func forecast(location: String, days: Int) -> String { "" }
            """,
            expandedSource: """

                func forecast(location: String, days: Int) -> String {
                    ""
                }
                """,
            diagnostics: [
                error("unknown parameter 'dayz' in keys; its parameters are 'location', 'days'", line: 1, column: 30)
            ]
        )
    }

    @Test func unsupportedDeclarationsAreErrors() {
        assertExpansion(
            """
            struct S {
                @Memoized mutating func bump(by amount: inout Int) -> Int { 0 }
                @Memoized func pick<T: Hashable>(_ value: T) -> T { value }
                @Memoized func ignore(_: Int) -> Int { 0 }
                @Memoized func load(_ id: Int) async throws(LoadError) -> Int { 0 }
                @Memoized var notAFunction: Int { 0 }
            }
            """,
            expandedSource: """
                struct S {
                    mutating func bump(by amount: inout Int) -> Int {
                        0
                    }
                    func pick<T: Hashable>(_ value: T) -> T {
                        value
                    }
                    func ignore(_: Int) -> Int {
                        0
                    }
                    func load(_ id: Int) async throws(LoadError) -> Int {
                        0
                    }
                    var notAFunction: Int { 0 }
                }
                """,
            diagnostics: [
                error(
                    "@Memoized cannot memoize a mutating method: a cached call would skip its mutation",
                    line: 2,
                    column: 29
                ),
                error(
                    "@Memoized cannot memoize a function with an inout parameter ('amount'): a "
                        + "cached call would not write it back",
                    line: 2,
                    column: 34
                ),
                error(
                    "@Memoized cannot memoize a generic function: its cache holds one result type",
                    line: 3,
                    column: 24
                ),
                error("@Memoized needs a name for parameter 1, to pass it to the function's body", line: 4, column: 27),
                error(
                    "@Memoized cannot memoize an async function with typed throws: concurrent calls share one run "
                        + "that throws 'any Error'; declare it 'async throws'",
                    line: 5,
                    column: 42
                ),
                error("@Memoized applies to functions and methods only", line: 6, column: 5),
            ]
        )
    }

    @Test func autoclosureInlinableAndNestedOpaqueResultsAreErrors() {
        assertExpansion(
            """
            enum E {
                @Memoized static func lazy(_ make: @autoclosure () -> Int) -> Int { make() }
                @Memoized @inlinable static func fast(_ x: Int) -> Int { x }
                @Memoized static func many(_ x: Int) -> [some Equatable] { [x] }
            }
            """,
            expandedSource: """
                enum E {
                    static func lazy(_ make: @autoclosure () -> Int) -> Int {
                        make()
                    }
                    @inlinable static func fast(_ x: Int) -> Int {
                        x
                    }
                    static func many(_ x: Int) -> [some Equatable] {
                        [x]
                    }
                }
                """,
            diagnostics: [
                error(
                    "@Memoized cannot memoize a function with an @autoclosure parameter "
                        + "('make'): the cache key needs its value",
                    line: 2,
                    column: 32
                ),
                error(
                    "@Memoized cannot memoize an @inlinable function: its body calls the "
                        + "private copy the macro makes of the original",
                    line: 3,
                    column: 15
                ),
                error("@Memoized cannot memoize a function with an opaque result type", line: 4, column: 45),
            ]
        )
    }

    @Test func methodOfAGenericStructIsAnError() {
        assertExpansion(
            """
            struct Box<Value> {
                @Memoized func describe(_ n: Int) -> String { "" }
            }
            """,
            expandedSource: """
                struct Box<Value> {
                    func describe(_ n: Int) -> String {
                        ""
                    }
                }
                """,
            diagnostics: [
                error(
                    genericTypeStaticMessage,
                    line: 1,
                    column: 11
                )
            ]
        )
    }

    @Test func methodOfATypeNestedInAGenericOneIsAnError() {
        assertExpansion(
            """
            struct Outer<Value> {
                enum Inner {
                    @Memoized static func describe(_ n: Int) -> String { "" }
                }
            }
            """,
            expandedSource: """
                struct Outer<Value> {
                    enum Inner {
                        static func describe(_ n: Int) -> String {
                            ""
                        }
                    }
                }
                """,
            diagnostics: [
                error(
                    genericTypeStaticMessage,
                    line: 1,
                    column: 13
                )
            ]
        )
    }

    @Test func selfInTheOptionsOfAClassInstanceMethodIsAnError() {
        assertExpansion(
            """
            final class Service {
                static let limit = 10
                @Memoized(countLimit: Self.limit) func load(_ id: Int) -> Int { id }
            }
            """,
            expandedSource: """
                final class Service {
                    static let limit = 10
                    func load(_ id: Int) -> Int {
                        id
                    }
                }
                """,
            diagnostics: [
                error(
                    "the options of a class or actor instance method are evaluated where each instance's cache is "
                        + "created, which cannot name 'Self'; name the type instead",
                    line: 3,
                    column: 27
                )
            ]
        )
    }

    @Test func anImplicitlyUnwrappedResultIsStoredAsAnOptional() {
        assertExpansion(
            """
            enum Lookup {
                @Memoized static func find(_ id: Int) -> Int! { id }
            }
            """,
            expandedSource: """
                enum Lookup {
                    static func find(_ id: Int) -> Int! {
                        Self._memoized_find.call(arguments: CacheKit.MemoArguments(id)) { () -> Int? in
                            self._uncached_find(id)
                        }
                    }

                    static let _memoized_find = CacheKit.MemoizedFunction<Int?>("TestModule.Lookup.find(_:)")

                    private static func _uncached_find(_ id: Int) -> Int! {
                        id
                    }
                }
                """
        )
    }

    @Test func selfInTheResultOfAClassOrActorMethodIsAnError() {
        let message = { (kind: String) in
            "@Memoized cannot memoize a \(kind)'s method whose result type uses 'Self' (the results are stored "
                + "by a type that cannot name it); write the \(kind)'s name instead"
        }
        assertExpansion(
            """
            final class Node {
                @Memoized func copy() -> Self { self }
            }
            actor Pool {
                @Memoized func all() -> [Self] { [] }
            }
            """,
            expandedSource: """
                final class Node {
                    func copy() -> Self {
                        self
                    }
                }
                actor Pool {
                    func all() -> [Self] {
                        []
                    }
                }
                """,
            diagnostics: [
                error(message("class"), line: 2, column: 30),
                error(message("actor"), line: 5, column: 29),
            ]
        )
    }
}
#endif
