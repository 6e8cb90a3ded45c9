#if Redis
@testable import CacheKitRedis

/// Encodes replies the way a RESP3 server does, for feeding the decoder.
enum RESPWriter {
    static func bytes(_ value: RESPValue) -> [UInt8] {
        var out: [UInt8] = []
        write(value, into: &out)
        return out
    }

    static func write(_ value: RESPValue, into out: inout [UInt8]) {
        func line(_ text: String) { out += Array(text.utf8) + [13, 10] }
        switch value {
        case .simpleString(let text): line("+" + text)
        case .error(let text): line("-" + text)
        case .integer(let value): line(":\(value)")
        case .null: line("_")
        case .boolean(let value): line(value ? "#t" : "#f")
        case .double(let value): line(",\(value)")
        case .bigNumber(let text): line("(" + text)
        case .blobString(let bytes):
            line("$\(bytes.count)")
            out += bytes + [13, 10]
        case .verbatimString(let text):
            let body = Array("txt:\(text)".utf8)
            line("=\(body.count)")
            out += body + [13, 10]
        case .array(let elements):
            line("*\(elements.count)")
            for element in elements { write(element, into: &out) }
        case .set(let elements):
            line("~\(elements.count)")
            for element in elements { write(element, into: &out) }
        case .push(let elements):
            line(">\(elements.count)")
            for element in elements { write(element, into: &out) }
        case .map(let entries):
            line("%\(entries.count)")
            for (key, value) in entries {
                write(key, into: &out)
                write(value, into: &out)
            }
        }
    }

    /// A random reply, nested at most `depth` deep.
    static func random(depth: Int, using generator: inout SeededGenerator) -> RESPValue {
        let choice = Int.random(in: 0..<(depth > 0 ? 13 : 9), using: &generator)
        switch choice {
        case 0: return .simpleString(randomText(using: &generator))
        case 1: return .error("ERR " + randomText(using: &generator))
        case 2: return .integer(Int64.random(in: .min ... .max, using: &generator))
        case 3: return .null
        case 4: return .boolean(Bool.random(using: &generator))
        case 5: return .double(Double(Int.random(in: -1_000_000...1_000_000, using: &generator)) / 64)
        case 6: return .bigNumber(String(UInt64.random(in: 0 ... .max, using: &generator)) + "123456789012345678901")
        case 7:
            let count = Int.random(in: 0..<40, using: &generator)
            return .blobString((0..<count).map { _ in UInt8.random(in: 0 ... .max, using: &generator) })
        case 8: return .verbatimString(randomText(using: &generator))
        default:
            let count = Int.random(in: 0..<5, using: &generator)
            let elements = (0..<count).map { _ in random(depth: depth - 1, using: &generator) }
            switch choice {
            case 9: return .array(elements)
            case 10: return .set(elements)
            case 11: return .push(elements)
            default:
                var map: [RESPValue: RESPValue] = [:]
                for element in elements { map[element] = random(depth: depth - 1, using: &generator) }
                return .map(map)
            }
        }
    }

    private static func randomText(using generator: inout SeededGenerator) -> String {
        let letters = Array("abcdefghijklmnopqrstuvwxyz ABC:0123456789")
        let count = Int.random(in: 0..<20, using: &generator)
        return String((0..<count).map { _ in letters.randomElement(using: &generator)! })
    }
}
#endif
