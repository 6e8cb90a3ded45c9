// Wrapping a function value: the memoized function takes the same arguments and returns the same
// result. Any number of arguments (parameter packs); the key is all of them, each of which must be
// `Hashable` and `Sendable`, or what a key closure makes of them.
//
// Throwing and non-throwing functions have separate overloads rather than one over typed throws:
// the 6.3 compiler crashes converting a parameter-pack function type with `throws(Never)`.

extension MemoizedFunction {
    /// `function`, memoized: a function with the same arguments whose results are stored under
    /// all of its arguments.
    ///
    /// ```swift
    /// let slowSquare: (Int) -> Int = { $0 * $0 }
    /// let square = MemoizedFunction<Int>("square", countLimit: 100).wrap(slowSquare)
    /// ```
    ///
    /// - Complexity: O(1). Each call of the returned function costs what `call` does: O(1) on a hit,
    ///   plus `function` on a miss.
    public func wrap<each Argument: Hashable & Sendable>(
        _ function: @escaping (repeat each Argument) -> Output
    ) -> (repeat each Argument) -> Output {
        { (argument: repeat each Argument) -> Output in
            self.call(arguments: MemoArguments(repeat each argument)) { function(repeat each argument) }
        }
    }

    /// The throwing `function`, memoized: its results are stored under all of its arguments; what
    /// it throws reaches the caller and is not stored.
    ///
    /// - Complexity: O(1). Each call of the returned function costs what `call` does: O(1) on a hit,
    ///   plus `function` on a miss.
    public func wrap<each Argument: Hashable & Sendable>(
        _ function: @escaping (repeat each Argument) throws -> Output
    ) -> (repeat each Argument) throws -> Output {
        { (argument: repeat each Argument) throws -> Output in
            try self.call(arguments: MemoArguments(repeat each argument)) { () throws -> Output in
                try function(repeat each argument)
            }
        }
    }

    /// `function`, memoized, with its results stored under the key `key` makes of its arguments:
    /// a subset (`{ location, _ in location }`) or a derived value. Arguments left out of the key
    /// need not be `Hashable`; calls whose keys are equal must have interchangeable results.
    ///
    /// - Complexity: O(1). Each call of the returned function runs `key`, then costs what `call`
    ///   does: O(1) on a hit, plus `function` on a miss.
    public func wrap<each Argument, Key: Hashable & Sendable>(
        _ function: @escaping (repeat each Argument) -> Output,
        key: @escaping (repeat each Argument) -> Key
    ) -> (repeat each Argument) -> Output {
        { (argument: repeat each Argument) -> Output in
            self.call(arguments: key(repeat each argument)) { function(repeat each argument) }
        }
    }

    /// The throwing `function`, memoized, with its results stored under the key `key` makes of
    /// its arguments.
    ///
    /// - Complexity: O(1). Each call of the returned function runs `key`, then costs what `call`
    ///   does: O(1) on a hit, plus `function` on a miss.
    public func wrap<each Argument, Key: Hashable & Sendable>(
        _ function: @escaping (repeat each Argument) throws -> Output,
        key: @escaping (repeat each Argument) -> Key
    ) -> (repeat each Argument) throws -> Output {
        { (argument: repeat each Argument) throws -> Output in
            try self.call(arguments: key(repeat each argument)) { () throws -> Output in
                try function(repeat each argument)
            }
        }
    }

    /// The `async` `function`, memoized and single-flight: its results are stored under all of its
    /// arguments, and concurrent calls with equal arguments run it once.
    ///
    /// - Complexity: O(1). Each call of the returned function costs what `call` does: O(1) on a hit,
    ///   plus `function` on a miss.
    public func wrap<each Argument: Hashable & Sendable>(
        _ function: @escaping @Sendable (repeat each Argument) async throws -> Output
    ) -> @Sendable (repeat each Argument) async throws -> Output {
        { (argument: repeat each Argument) async throws -> Output in
            let arguments = MemoArguments(repeat each argument)
            return try await self.call(arguments: arguments) { () async throws -> Output in
                try await function(repeat each arguments.values)
            }
        }
    }

    /// The `async` `function`, memoized and single-flight, with its results stored under the key
    /// `key` makes of its arguments. The arguments must be `Sendable`: the function runs in a
    /// task of its own.
    ///
    /// - Complexity: O(1). Each call of the returned function runs `key`, then costs what `call`
    ///   does: O(1) on a hit, plus `function` on a miss.
    public func wrap<each Argument: Sendable, Key: Hashable & Sendable>(
        _ function: @escaping @Sendable (repeat each Argument) async throws -> Output,
        key: @escaping @Sendable (repeat each Argument) -> Key
    ) -> @Sendable (repeat each Argument) async throws -> Output {
        { (argument: repeat each Argument) async throws -> Output in
            let arguments = SendablePack(repeat each argument)
            return try await self.call(arguments: key(repeat each argument)) { () async throws -> Output in
                try await function(repeat each arguments.values)
            }
        }
    }

    /// The non-throwing `async` `function`, memoized and single-flight (see
    /// the throwing `call(arguments:_:)`).
    ///
    /// - Complexity: O(1). Each call of the returned function costs what `call` does: O(1) on a hit,
    ///   plus `function` on a miss.
    public func wrap<each Argument: Hashable & Sendable>(
        _ function: @escaping @Sendable (repeat each Argument) async -> Output
    ) -> @Sendable (repeat each Argument) async -> Output {
        { (argument: repeat each Argument) async -> Output in
            let arguments = MemoArguments(repeat each argument)
            return await self.call(arguments: arguments) { () async -> Output in
                await function(repeat each arguments.values)
            }
        }
    }

    /// The non-throwing `async` `function`, memoized and single-flight, with its results stored
    /// under the key `key` makes of its arguments.
    ///
    /// - Complexity: O(1). Each call of the returned function runs `key`, then costs what `call`
    ///   does: O(1) on a hit, plus `function` on a miss.
    public func wrap<each Argument: Sendable, Key: Hashable & Sendable>(
        _ function: @escaping @Sendable (repeat each Argument) async -> Output,
        key: @escaping @Sendable (repeat each Argument) -> Key
    ) -> @Sendable (repeat each Argument) async -> Output {
        { (argument: repeat each Argument) async -> Output in
            let arguments = SendablePack(repeat each argument)
            return await self.call(arguments: key(repeat each argument)) { () async -> Output in
                await function(repeat each arguments.values)
            }
        }
    }
}

/// Arguments carried into the task an async memoized call runs in.
struct SendablePack<each Element: Sendable>: Sendable {
    let values: (repeat each Element)
    init(_ values: repeat each Element) { self.values = (repeat each values) }
}
