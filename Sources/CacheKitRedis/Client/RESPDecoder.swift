#if Redis
import NIOCore

/// An incremental RESP2/RESP3 decoder with bounded memory and depth.
///
/// `decode(_:)` reads as many bytes of the buffer as complete one value and returns it, or reads
/// what it can and returns `nil` when the value continues beyond the buffer; fed the rest, it
/// continues where it stopped. Aggregates are built on an explicit stack, never by recursion, so
/// nesting costs no stack frames and is bounded by ``RedisReplyLimits/maximumNestingDepth``. A bulk
/// string's header stays unread until its whole body is in the buffer, and nothing is allocated for
/// elements before they arrive, so a length or count sent by the peer never sizes an allocation.
/// A whole reply is bounded too, in bytes and in values at every level together
/// (``RedisReplyLimits/maximumReplyBytes``, ``RedisReplyLimits/maximumReplyElements``): a blob
/// that would take a reply past its bytes is refused from its header, before its body is awaited.
/// A line that arrives a few bytes at a time is scanned once: each call resumes where the last
/// stopped, so decoding costs time linear in the bytes received.
///
/// Error replies decode to ``RESPValue/error(_:)``; the connection turns one at the top level into
/// a thrown ``RedisError/server(message:)``. Attributes (`|`) are read and dropped. After a
/// ``RedisError/protocolViolation(_:)`` the decoder's state is undefined: the connection closes.
package struct RESPDecoder {
    private enum AggregateKind {
        case array, set, push, map, attribute
    }

    private struct Frame {
        var kind: AggregateKind
        var remaining: Int
        var elements: [RESPValue]
    }

    private let limits: RedisReplyLimits
    private var stack: [Frame] = []
    /// Wire bytes and values of the reply under way (reset when a reply completes).
    private var replyBytes = 0
    private var replyElements = 0
    /// How many bytes of the line that starts after the reader index's type byte are known to
    /// hold no CR: the next scan starts there (reset whenever a token is consumed).
    private var lineScanned = 0
    /// Bytes examined by line scans so far, over the decoder's life: for tests that decoding is
    /// linear in the bytes received.
    package private(set) var bytesScanned = 0

    package init(limits: RedisReplyLimits = RedisReplyLimits()) {
        // The properties are settable: clamp again, so that no limit can disable a bound.
        self.limits = RedisReplyLimits(
            maximumBulkLength: limits.maximumBulkLength,
            maximumAggregateCount: limits.maximumAggregateCount,
            maximumNestingDepth: limits.maximumNestingDepth,
            maximumLineLength: limits.maximumLineLength,
            maximumReplyBytes: limits.maximumReplyBytes,
            maximumReplyElements: limits.maximumReplyElements
        )
    }

    /// Whether a value has begun but not completed.
    package var isMidValue: Bool { !stack.isEmpty }

    /// The next complete value, or `nil` when the buffer ends before one does.
    package mutating func decode(_ buffer: inout ByteBuffer) throws(RedisError) -> RESPValue? {
        while true {
            let start = buffer.readerIndex
            guard let token = try readToken(&buffer) else { return nil }
            lineScanned = 0
            replyBytes += buffer.readerIndex - start
            replyElements += 1
            guard replyBytes <= limits.maximumReplyBytes else {
                throw .protocolViolation("reply of more than \(limits.maximumReplyBytes) bytes")
            }
            guard replyElements <= limits.maximumReplyElements else {
                throw .protocolViolation("reply of more than \(limits.maximumReplyElements) values")
            }
            var completed: RESPValue?
            switch token {
            case .value(let value):
                completed = value
            case .aggregate(let kind, let count):
                guard stack.count < limits.maximumNestingDepth else {
                    throw .protocolViolation("nesting deeper than \(limits.maximumNestingDepth)")
                }
                if count == 0 {
                    completed = Self.build(kind, [])
                    if kind == .attribute { completed = nil }
                } else {
                    stack.append(Frame(kind: kind, remaining: count, elements: []))
                }
            }
            // Attach the completed value to its parents, completing them in turn.
            while let value = completed {
                guard !stack.isEmpty else {
                    replyBytes = 0
                    replyElements = 0
                    return value
                }
                stack[stack.count - 1].elements.append(value)
                stack[stack.count - 1].remaining -= 1
                guard stack[stack.count - 1].remaining == 0 else {
                    completed = nil
                    break
                }
                let frame = stack.removeLast()
                if frame.kind == .attribute {
                    // An attribute annotates the value after it: dropped, and that value is read next.
                    completed = nil
                } else {
                    completed = Self.build(frame.kind, frame.elements)
                }
            }
        }
    }

    private static func build(_ kind: AggregateKind, _ elements: [RESPValue]) -> RESPValue {
        switch kind {
        case .array: return .array(elements)
        case .set: return .set(elements)
        case .push: return .push(elements)
        case .map, .attribute:
            var map: [RESPValue: RESPValue] = [:]
            var index = 0
            while index + 1 < elements.count {
                map[elements[index]] = elements[index + 1]
                index += 2
            }
            return .map(map)
        }
    }

    private enum Token {
        case value(RESPValue)
        case aggregate(AggregateKind, count: Int)
    }

    /// The bytes that begin a RESP2 or RESP3 value.
    private static let typeBytes = Set("+-:_#,($!=*~>%|".utf8)

    /// Reads one type byte and its line (and a bulk body), or nothing when they are incomplete.
    private mutating func readToken(_ buffer: inout ByteBuffer) throws(RedisError) -> Token? {
        let start = buffer.readerIndex
        guard let type = buffer.getInteger(at: start, as: UInt8.self) else { return nil }
        // Refused as soon as it arrives, not after the line that would follow it.
        guard Self.typeBytes.contains(type) else { throw .protocolViolation("unknown type byte \(type)") }
        guard let lineEnd = try findLineEnd(buffer, from: start + 1) else { return nil }
        let line = buffer.viewBytes(at: start + 1, length: lineEnd - start - 1) ?? ByteBufferView()
        let afterLine = lineEnd + 2

        switch type {
        case UInt8(ascii: "+"):
            buffer.moveReaderIndex(to: afterLine)
            return .value(.simpleString(String(decoding: line, as: UTF8.self)))
        case UInt8(ascii: "-"):
            buffer.moveReaderIndex(to: afterLine)
            return .value(.error(String(decoding: line, as: UTF8.self)))
        case UInt8(ascii: ":"):
            guard let value = Self.parseInteger(line) else { throw .protocolViolation("malformed integer") }
            buffer.moveReaderIndex(to: afterLine)
            return .value(.integer(value))
        case UInt8(ascii: "_"):
            guard line.isEmpty else { throw .protocolViolation("malformed null") }
            buffer.moveReaderIndex(to: afterLine)
            return .value(.null)
        case UInt8(ascii: "#"):
            let value: Bool
            if line.elementsEqual([UInt8(ascii: "t")]) {
                value = true
            } else if line.elementsEqual([UInt8(ascii: "f")]) {
                value = false
            } else {
                throw .protocolViolation("malformed boolean")
            }
            buffer.moveReaderIndex(to: afterLine)
            return .value(.boolean(value))
        case UInt8(ascii: ","):
            guard let value = Self.parseDouble(line) else { throw .protocolViolation("malformed double") }
            buffer.moveReaderIndex(to: afterLine)
            return .value(.double(value))
        case UInt8(ascii: "("):
            guard Self.isBigNumber(line) else { throw .protocolViolation("malformed big number") }
            buffer.moveReaderIndex(to: afterLine)
            return .value(.bigNumber(String(decoding: line, as: UTF8.self)))
        case UInt8(ascii: "$"), UInt8(ascii: "!"), UInt8(ascii: "="):
            guard let length = Self.parseInteger(line) else { throw .protocolViolation("malformed length") }
            if length == -1 && type == UInt8(ascii: "$") {
                buffer.moveReaderIndex(to: afterLine)
                return .value(.null)
            }
            guard length >= 0 else { throw .protocolViolation("negative length \(length)") }
            guard length <= limits.maximumBulkLength else {
                throw .protocolViolation("blob of \(length) bytes exceeds \(limits.maximumBulkLength)")
            }
            let count = Int(length)
            guard replyBytes + (afterLine - start) + count + 2 <= limits.maximumReplyBytes else {
                throw .protocolViolation("reply of more than \(limits.maximumReplyBytes) bytes")
            }
            // The body and its CRLF must be readable before anything is consumed.
            guard buffer.writerIndex - afterLine >= count + 2 else { return nil }
            guard buffer.getInteger(at: afterLine + count, as: UInt8.self) == UInt8(ascii: "\r"),
                buffer.getInteger(at: afterLine + count + 1, as: UInt8.self) == UInt8(ascii: "\n")
            else { throw .protocolViolation("blob not followed by CRLF") }
            let body = buffer.getBytes(at: afterLine, length: count) ?? []
            buffer.moveReaderIndex(to: afterLine + count + 2)
            switch type {
            case UInt8(ascii: "$"): return .value(.blobString(body))
            case UInt8(ascii: "!"): return .value(.error(String(decoding: body, as: UTF8.self)))
            default:
                guard body.count >= 4, body[3] == UInt8(ascii: ":") else {
                    throw .protocolViolation("verbatim string without a format")
                }
                return .value(.verbatimString(String(decoding: body[4...], as: UTF8.self)))
            }
        case UInt8(ascii: "*"), UInt8(ascii: "~"), UInt8(ascii: ">"), UInt8(ascii: "%"), UInt8(ascii: "|"):
            guard let count = Self.parseInteger(line) else { throw .protocolViolation("malformed count") }
            if count == -1 && type == UInt8(ascii: "*") {
                buffer.moveReaderIndex(to: afterLine)
                return .value(.null)
            }
            guard count >= 0 else { throw .protocolViolation("negative count \(count)") }
            let isMap = type == UInt8(ascii: "%") || type == UInt8(ascii: "|")
            let limit = isMap ? limits.maximumAggregateCount / 2 : limits.maximumAggregateCount
            guard count <= limit else {
                throw .protocolViolation("aggregate of \(count) elements exceeds \(limits.maximumAggregateCount)")
            }
            let kind: AggregateKind
            switch type {
            case UInt8(ascii: "*"): kind = .array
            case UInt8(ascii: "~"): kind = .set
            case UInt8(ascii: ">"): kind = .push
            case UInt8(ascii: "%"): kind = .map
            default: kind = .attribute
            }
            buffer.moveReaderIndex(to: afterLine)
            return .aggregate(kind, count: Int(isMap ? count * 2 : count))
        default:
            throw .protocolViolation("unknown type byte \(type)")
        }
    }

    /// The index of the CR of the first CRLF at or after `from`, `nil` when the line is not complete
    /// yet; a violation when the line is longer than the limit or holds a bare CR. Resumes the scan
    /// where the last call on the same line stopped (`lineScanned`).
    private mutating func findLineEnd(_ buffer: ByteBuffer, from: Int) throws(RedisError) -> Int? {
        let available = buffer.writerIndex - from
        let searched = min(available, limits.maximumLineLength + 2)
        let resume = min(lineScanned, searched)
        guard searched > resume, let view = buffer.viewBytes(at: from + resume, length: searched - resume) else {
            return nil
        }
        let cr = view.firstIndex(of: UInt8(ascii: "\r"))
        bytesScanned += cr.map { $0 - view.startIndex + 1 } ?? view.count
        if let cr {
            let offset = resume + (cr - view.startIndex)
            // Before looking for the LF: a CR one past the limit is the last byte searched, and
            // would otherwise be waited on for ever.
            guard offset <= limits.maximumLineLength else {
                throw .protocolViolation("line longer than \(limits.maximumLineLength) bytes")
            }
            let next = cr + 1
            guard next < view.endIndex else {
                lineScanned = offset  // the CR is the last byte so far: look again from it
                return nil
            }
            guard view[next] == UInt8(ascii: "\n") else { throw .protocolViolation("CR without LF") }
            return from + offset
        }
        if available > limits.maximumLineLength {
            throw .protocolViolation("line longer than \(limits.maximumLineLength) bytes")
        }
        lineScanned = searched
        return nil
    }

    private static func parseInteger(_ line: ByteBufferView) -> Int64? {
        guard !line.isEmpty, line.count <= 20 else { return nil }
        var negative = false
        var digits = line[...]
        if line.first == UInt8(ascii: "-") {
            negative = true
            digits = line.dropFirst()
        } else if line.first == UInt8(ascii: "+") {
            digits = line.dropFirst()
        }
        guard !digits.isEmpty else { return nil }
        var value: Int64 = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let digit = Int64(byte - UInt8(ascii: "0"))
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) =
                negative ? shifted.subtractingReportingOverflow(digit) : shifted.addingReportingOverflow(digit)
            guard !overflow1, !overflow2 else { return nil }
            value = next
        }
        return value
    }

    private static func parseDouble(_ line: ByteBufferView) -> Double? {
        guard !line.isEmpty, line.count <= 400 else { return nil }
        for byte in line {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."),
                UInt8(ascii: "e"), UInt8(ascii: "E"), UInt8(ascii: "i"), UInt8(ascii: "n"), UInt8(ascii: "f"),
                UInt8(ascii: "a"):
                continue
            default:
                return nil
            }
        }
        return Double(String(decoding: line, as: UTF8.self))
    }

    private static func isBigNumber(_ line: ByteBufferView) -> Bool {
        var digits = line[...]
        if line.first == UInt8(ascii: "-") || line.first == UInt8(ascii: "+") { digits = line.dropFirst() }
        guard !digits.isEmpty else { return false }
        return digits.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }
}
#endif
