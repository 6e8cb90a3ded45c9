/// The key a memoized function stores a result under: the function's identity and the arguments
/// it was called with (ClearCache's "selector + parameters").
///
/// Two keys are equal when their functions are equal and their arguments are of the same type and
/// equal, so several functions share one ``MemoCache`` without collisions, even when they are
/// called with the same arguments.
public struct MemoKey: Hashable, Sendable, CustomStringConvertible {
    /// The function's identity, such as `"WeatherService.weather(for:)"`.
    public let function: String
    /// The arguments chosen for the key: one value, a ``MemoArguments`` of several, or whatever a
    /// key closure returned.
    public let arguments: any Hashable & Sendable

    /// A key for `function` called with `arguments`.
    public init(function: String, arguments: some Hashable & Sendable) {
        self.function = function
        self.arguments = arguments
    }

    public static func == (lhs: MemoKey, rhs: MemoKey) -> Bool {
        lhs.function == rhs.function && lhs.arguments._isEqual(to: rhs.arguments)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(function)
        hasher.combine(arguments)
    }

    /// The function followed by the arguments, e.g. `weather(for:) [Paris]`: what logs show.
    public var description: String { "\(function) [\(arguments)]" }
}

extension Hashable {
    /// Whether `other` holds a value of exactly this type equal to this one. Exactly: `as?`
    /// alone would also unwrap an `Optional` or accept a subclass, whose hashes differ, making
    /// equal keys that hash apart.
    fileprivate func _isEqual(to other: any Hashable) -> Bool {
        guard type(of: other) == Self.self, let other = other as? Self else { return false }
        return self == other
    }
}

/// Several arguments as one hashable key: what a memoized function of two or more arguments
/// stores its results under.
///
/// Each argument must be `Hashable` and `Sendable`; an argument that is not is a compile-time
/// error, so leave it out of the key with a key closure.
public struct MemoArguments<each Argument: Hashable & Sendable>: Hashable, Sendable, CustomStringConvertible {
    /// The arguments, in order.
    public let values: (repeat each Argument)

    /// The arguments `values`, in order.
    public init(_ values: repeat each Argument) {
        self.values = (repeat each values)
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        for (left, right) in repeat (each lhs.values, each rhs.values) {
            guard left == right else { return false }
        }
        return true
    }

    public func hash(into hasher: inout Hasher) {
        for value in repeat each values { hasher.combine(value) }
    }

    /// The arguments separated by commas, e.g. `Paris, 3`.
    public var description: String {
        var parts: [String] = []
        for value in repeat each values { parts.append(String(describing: value)) }
        return parts.joined(separator: ", ")
    }
}
