import CacheKitSimulator
import Foundation

/// A small command-line parser: `--flag value`, `--flag=value` and boolean `--flag`.
///
/// Unknown flags and missing or malformed values are errors that name the flag.
package struct Arguments {
    package struct Failure: Error, CustomStringConvertible {
        package var description: String

        package init(description: String) { self.description = description }
    }

    private var values: [String: String] = [:]
    private var switches: Set<String> = []

    /// Parses `arguments`, accepting the value flags in `valueFlags` and the boolean flags in
    /// `booleanFlags` (names without the leading dashes).
    package init(_ arguments: [String], valueFlags: Set<String>, booleanFlags: Set<String>) throws {
        var i = 0
        while i < arguments.count {
            let argument = arguments[i]
            guard argument.hasPrefix("--") else {
                throw Failure(
                    description: "unexpected "
                        + "argument '\(TraceError.escaped(argument))'"
                )
            }
            var name = String(argument.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if booleanFlags.contains(name) {
                guard inlineValue == nil else { throw Failure(description: "--\(name) takes no value") }
                switches.insert(name)
            } else if valueFlags.contains(name) {
                if let inlineValue {
                    values[name] = inlineValue
                } else {
                    i += 1
                    guard i < arguments.count else { throw Failure(description: "--\(name) needs a value") }
                    values[name] = arguments[i]
                }
            } else {
                throw Failure(description: "unknown option '--\(name)'")
            }
            i += 1
        }
    }

    /// Whether the boolean flag `name` was given.
    package func flag(_ name: String) -> Bool { switches.contains(name) }

    /// The text given for `name`, if any.
    package func string(_ name: String) -> String? { values[name] }

    /// The positive integer given for `name` (underscores allowed: `1_000_000`), or `defaultValue`.
    package func int(_ name: String, default defaultValue: Int, minimum: Int = 1, maximum: Int = .max) throws -> Int {
        guard let text = values[name] else { return defaultValue }
        guard let value = Int(text.replacingOccurrences(of: "_", with: "")), value >= minimum, value <= maximum else {
            let range = maximum == .max ? ">= \(minimum)" : "from \(minimum) to \(maximum)"
            throw Failure(description: "--\(name) must be a whole number \(range) (got '\(TraceError.escaped(text))')")
        }
        return value
    }

    /// The comma-separated list given for `name`, each item checked against `allowed` (`nil`
    /// takes any); an item given twice counts once.
    package func list(_ name: String, default defaultValue: [String], allowed: [String]?) throws -> [String] {
        guard let text = values[name] else { return defaultValue }
        var items: [String] = []
        for item in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) })
        where !items.contains(item) {
            items.append(item)
        }
        if let allowed {
            for item in items where !allowed.contains(item) {
                throw Failure(
                    description: "--\(name): unknown value '\(TraceError.escaped(item))' "
                        + "(choose from \(allowed.joined(separator: ", ")))"
                )
            }
        }
        guard !items.isEmpty else { throw Failure(description: "--\(name) needs at least one value") }
        return items
    }

    /// The thread counts given for `name` (a comma-separated list, each from 1 to 64), or
    /// `defaultValue`.
    package func threadCounts(_ name: String, default defaultValue: [Int]) throws -> [Int] {
        try list(name, default: defaultValue.map(String.init), allowed: nil).map { item in
            guard let count = Int(item), (1...64).contains(count) else {
                throw Failure(
                    description: "--\(name): each count must be a whole number from "
                        + "1 to 64 (got '\(TraceError.escaped(item))')"
                )
            }
            return count
        }
    }
}
