import Foundation

/// A trace: the sequence of keys a cache was asked for, each request one key of size 1.
public struct Trace: Sendable {
    /// Where the trace came from: a file path or a synthetic workload's description.
    public var name: String
    /// The requested keys, in order. Numeric keys keep their 64-bit pattern (a key of 2^63 or more
    /// is the negative `Int` with the same bits); non-numeric keys (CSV) are hashed to integers.
    public var keys: [Int]

    /// The most requests a trace file may hold: 2^30, 8 GiB of keys in memory. A file with more
    /// (or an ARC trace whose lines name more blocks) is refused with
    /// ``TraceError/tooManyRequests(path:line:limit:)`` before it exhausts memory.
    public static let maxRequests = 1 << 30

    /// The longest line a text trace may hold: 1 MiB (1,048,576 bytes), not counting its line
    /// ending (`\n` or `\r\n`). The reader stops at a longer line, without keeping it whole, and
    /// throws ``TraceError/lineTooLong(path:line:limit:)``.
    public static let maxLineLength = 1 << 20

    /// The most blocks one line of an ARC trace may name (its `count` field): 2^20, half a GiB of
    /// 512-byte blocks, far above any real request. A line with more is a
    /// ``TraceError/malformedLine(path:line:text:expected:)``.
    public static let maxBlocksPerLine = 1 << 20

    /// A trace of `keys` called `name`.
    public init(name: String, keys: [Int]) {
        self.name = name
        self.keys = keys
    }

    /// The number of distinct keys.
    public var uniqueKeyCount: Int { Set(keys).count }
}

/// The trace file formats `cachekit simulate` reads.
public enum TraceFormat: String, Sendable, CaseIterable {
    /// One key per line; a line `*` is a marker and is skipped (LIRS traces, `.trace`, `.keys`).
    case lines
    /// ARC's `.lis`: lines `start count x y`, each standing for keys `start ..< start + count`.
    case arc
    /// CSV with a header line; the key is the column named by `keyColumn`.
    case csv
    /// libCacheSim oracleGeneral: packed little-endian 24-byte records
    /// `{u32 time, u64 id, u32 size, i64 next access}`; the key is `id`.
    case oracleGeneral

    /// The format a file's extension implies: `.lis` ARC, `.csv` CSV, `.bin` oracleGeneral, and one
    /// key per line for `.trace`, `.keys`, `.txt`. `nil` for anything else.
    public init?(pathExtension: String) {
        switch pathExtension.lowercased() {
        case "lis": self = .arc
        case "csv": self = .csv
        case "bin", "oraclegeneral": self = .oracleGeneral
        case "trace", "keys", "txt": self = .lines
        default: return nil
        }
    }
}

/// Why a trace could not be read. Each case names the file, and the line where there is one.
///
/// The text a case quotes from the file (`text`, `header`) and the column name hold at most
/// ``maxQuotedCharacters`` characters (Unicode scalars), followed by `…` when the input was
/// longer; ``description`` quotes no more, so that a message stays short whatever the input. It
/// writes control characters of a quote or a path escaped (`\n`, `\r`, `\t`, `\u{1B}`), so that a
/// message never moves the terminal's cursor or rings its bell.
public enum TraceError: Error, Equatable, CustomStringConvertible {
    /// The file could not be opened or read.
    case unreadable(path: String, reason: String)
    /// No format was given and the extension implies none.
    case unknownFormat(path: String)
    /// A line (1-based) that does not parse as the format requires; `text` is its start.
    case malformedLine(path: String, line: Int, text: String, expected: String)
    /// The CSV header, on `line`, lacks the key column; `header` is its start.
    case missingColumn(path: String, line: Int, column: String, header: String)
    /// A binary trace ends inside a record.
    case truncatedRecord(path: String, byteOffset: Int)
    /// The file holds no requests.
    case empty(path: String)
    /// The file holds more requests than ``Trace/maxRequests`` (or the cap given to
    /// ``Trace/read(path:format:keyColumn:maxRequests:)``); `line` is where the count passed it
    /// (0 for a binary trace).
    case tooManyRequests(path: String, line: Int, limit: Int)
    /// A line (1-based) of a text trace holds more than `limit` bytes
    /// (``Trace/maxLineLength``) before its line ending.
    case lineTooLong(path: String, line: Int, limit: Int)

    /// The most characters of its input an error quotes: 80.
    public static let maxQuotedCharacters = 80

    public var description: String {
        switch self {
        case .unreadable(let path, let reason):
            "\(Self.escaped(path)): cannot read: \(reason)"
        case .unknownFormat(let path):
            "\(Self.escaped(path)): unknown trace format; name it with --format "
                + "(\(TraceFormat.allCases.map(\.rawValue).joined(separator: ", ")))"
        case .malformedLine(let path, let line, let text, let expected):
            "\(Self.escaped(path)):\(line): malformed line '\(Self.escaped(Self.quote(text)))': expected \(expected)"
        case .missingColumn(let path, let line, let column, let header):
            "\(Self.escaped(path)):\(line): no column '\(Self.escaped(Self.quote(column)))' in "
                + "the header '\(Self.escaped(Self.quote(header)))'"
        case .truncatedRecord(let path, let offset):
            "\(Self.escaped(path)): truncated 24-byte record at byte \(offset)"
        case .empty(let path):
            "\(Self.escaped(path)): the trace holds no requests"
        case .tooManyRequests(let path, let line, let limit):
            "\(Self.escaped(path))\(line > 0 ? ":\(line)" : ""): the trace holds more than "
                + "\(limit) requests, the most one replay keeps in memory"
        case .lineTooLong(let path, let line, let limit):
            "\(Self.escaped(path)):\(line): the line is longer than \(limit) bytes, the most a trace line may hold"
        }
    }

    /// `text` with each control character (Unicode's Cc: U+0000–U+001F, U+007F–U+009F) written as
    /// an escape: `\n`, `\r`, `\t`, or `\u{…}` with its hexadecimal value. Other text is unchanged.
    package static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where isControl(scalar): result += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// `text` cut to ``maxQuotedCharacters`` Unicode scalars, with `…` after it when it was longer.
    /// Text it returns comes back unchanged.
    static func quote(_ text: String) -> String {
        let scalars = text.unicodeScalars
        var end = scalars.startIndex
        var count = 0
        while count < maxQuotedCharacters && end != scalars.endIndex {
            scalars.formIndex(after: &end)
            count += 1
        }
        if end == scalars.endIndex { return text }
        return String(scalars[..<end]) + "…"
    }

    /// The quotation of `bytes` as UTF-8 (invalid bytes as U+FFFD), decoding no more than it needs.
    static func quote(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        // A scalar takes at most 4 bytes: one more scalar than is quoted shows whether to cut.
        let needed = (maxQuotedCharacters + 1) * 4
        return quote(String(decoding: UnsafeBufferPointer(rebasing: bytes.prefix(needed)), as: UTF8.self))
    }
}

extension Trace {
    /// Reads a trace file, streaming it in 1 MiB chunks so that only the keys stay in memory
    /// (8 bytes a request), in time linear in the file's size.
    ///
    /// Keys in text formats are decimal integers from -2^63 to 2^64 - 1, kept as their 64-bit
    /// pattern: `18446744073709551615` (`UInt64.max`) is the key -1, like the oracleGeneral
    /// record's `u64` id. A CSV key that is not such an integer is hashed.
    ///
    /// Limits, each refused with a ``TraceError`` naming the file and line:
    /// - a text line holds at most ``maxLineLength`` bytes (1 MiB) before its line ending
    ///   (``TraceError/lineTooLong(path:line:limit:)``): the reader stops at the first byte past it;
    /// - the file holds at most `maxRequests` requests
    ///   (``TraceError/tooManyRequests(path:line:limit:)``). An ARC line counts as the `count`
    ///   requests it announces, and the reader expands the ARC ranges into keys only once the whole
    ///   file is read and within the cap: until then a line takes 24 bytes whatever its count, so a
    ///   small file that announces too many requests is refused before memory is taken for them;
    /// - an ARC line names at most ``maxBlocksPerLine`` blocks, and its keys
    ///   `start ..< start + count` stay within 64 bits: up to `Int.max` for a start written below
    ///   2^63 or negative, up to 2^64 - 1 for a start written from 2^63
    ///   (``TraceError/malformedLine(path:line:text:expected:)``).
    ///
    /// Errors quote at most ``TraceError/maxQuotedCharacters`` characters of the file.
    ///
    /// - Parameters:
    ///   - path: The file.
    ///   - format: Its format; `nil` picks one by the extension.
    ///   - keyColumn: For CSV, the column that holds the key; `nil` tries `obj_id`, `key`, `id`,
    ///     `lbn`, in that order.
    ///   - maxRequests: The most requests to accept; ``Trace/maxRequests`` unless the caller wants
    ///     a smaller cap.
    /// - Throws: `TraceError`, naming the file and line.
    public static func read(
        path: String,
        format: TraceFormat? = nil,
        keyColumn: String? = nil,
        maxRequests: Int = Trace.maxRequests
    ) throws -> Trace {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
            throw TraceError.unreadable(path: path, reason: "no such file")
        }
        guard !isFolder.boolValue else { throw TraceError.unreadable(path: path, reason: "it is a directory") }
        guard let format = format ?? TraceFormat(pathExtension: (path as NSString).pathExtension) else {
            throw TraceError.unknownFormat(path: path)
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw TraceError.unreadable(path: path, reason: "no permission to read it")
        }
        defer { try? handle.close() }
        var keys: [Int] = []
        switch format {
        case .oracleGeneral:
            try readRecords(handle, path: path, limit: maxRequests, into: &keys)
        case .lines, .arc, .csv:
            var parser = LineParser(path: path, format: format, keyColumn: keyColumn, limit: maxRequests)
            try forEachLine(handle, path: path, maxLength: maxLineLength) { line, number in
                try parser.parse(line, number: number, into: &keys)
            }
            parser.finish(&keys)
        }
        guard !keys.isEmpty else { throw TraceError.empty(path: path) }
        return Trace(name: path, keys: keys)
    }

    /// `read(path:format:keyColumn:maxRequests:)` with a cap of its own on the requests (tests use
    /// a small one).
    static func read(path: String, format: TraceFormat?, keyColumn: String?, limit: Int) throws -> Trace {
        try read(path: path, format: format, keyColumn: keyColumn, maxRequests: limit)
    }

    /// The size of one read.
    static let chunkSize = 1 << 20

    private static func chunks(
        _ handle: FileHandle,
        path: String,
        size: Int = chunkSize,
        _ body: (Data) throws -> Void
    ) throws {
        while true {
            let chunk: Data?
            do {
                chunk = try handle.read(upToCount: size)
            } catch {
                throw TraceError.unreadable(path: path, reason: "\(error.localizedDescription)")
            }
            guard let chunk, !chunk.isEmpty else { return }
            try body(chunk)
        }
    }

    /// Calls `body` with each line (without its newline) and its 1-based number.
    ///
    /// Each byte is scanned once, and only the unfinished line is carried from one chunk to the
    /// next: a line longer than `maxLength` bytes (a `\r` before its `\n` not counted) throws
    /// ``TraceError/lineTooLong(path:line:limit:)`` as soon as the bytes read pass the maximum,
    /// so the reader holds at most one chunk and `maxLength + 1` bytes of text. Reads take
    /// `chunkSize` bytes (tests use small ones).
    static func forEachLine(
        _ handle: FileHandle,
        path: String,
        maxLength: Int,
        chunkSize: Int = chunkSize,
        _ body: (UnsafeBufferPointer<UInt8>, Int) throws -> Void
    ) throws {
        var pending: [UInt8] = []
        var number = 0
        /// Throws if `line`, a whole line without its `\n`, is too long.
        func check(_ line: UnsafeBufferPointer<UInt8>, number: Int) throws {
            guard line.count > maxLength else { return }
            guard line.count == maxLength + 1 && line[maxLength] == UInt8(ascii: "\r") else {
                throw TraceError.lineTooLong(path: path, line: number, limit: maxLength)
            }
        }
        try chunks(handle, path: path, size: chunkSize) { chunk in
            // The unfinished line carried over holds no newline: the scan starts after it.
            var scan = pending.count
            pending.append(contentsOf: chunk)
            var start = 0
            try pending.withUnsafeBufferPointer { bytes in
                let base = bytes.baseAddress!
                while scan < bytes.count,
                    let found = memchr(base + scan, Int32(UInt8(ascii: "\n")), bytes.count - scan)
                {
                    let newline = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
                    let line = UnsafeBufferPointer(start: base + start, count: newline - start)
                    number += 1
                    try check(line, number: number)
                    try body(line, number)
                    start = newline + 1
                    scan = start
                }
            }
            guard pending.count - start <= maxLength + 1 else {
                throw TraceError.lineTooLong(path: path, line: number + 1, limit: maxLength)
            }
            pending.removeSubrange(..<start)
        }
        if !pending.isEmpty {
            try pending.withUnsafeBufferPointer { line in
                try check(line, number: number + 1)
                try body(line, number + 1)
            }
        }
    }

    private static func readRecords(_ handle: FileHandle, path: String, limit: Int, into keys: inout [Int]) throws {
        var pending: [UInt8] = []
        var offset = 0
        try chunks(handle, path: path) { chunk in
            pending.append(contentsOf: chunk)
            let whole = pending.count / 24 * 24
            guard keys.count + whole / 24 <= limit else {
                throw TraceError.tooManyRequests(path: path, line: 0, limit: limit)
            }
            pending.withUnsafeBytes { bytes in
                var r = 0
                while r < whole {
                    keys.append(
                        Int(
                            truncatingIfNeeded: UInt64(
                                littleEndian: bytes.loadUnaligned(fromByteOffset: r + 4, as: UInt64.self)
                            )
                        )
                    )
                    r += 24
                }
            }
            offset += whole
            pending.removeSubrange(..<whole)
        }
        if !pending.isEmpty { throw TraceError.truncatedRecord(path: path, byteOffset: offset) }
    }
}

/// Turns lines of a text trace into keys, reading fields in place: a line costs no memory beyond
/// the keys it adds.
///
/// An ARC line with a `count` above 1 adds one slot holding its `start`, recorded in `deferred`;
/// ``finish(_:)`` expands the slots into their ranges once the whole file is read. Until then the
/// memory an ARC line takes is one slot and one record, whatever its count, and the requests it
/// announces are counted against `limit` as they are announced.
struct LineParser {
    let path: String
    let format: TraceFormat
    let keyColumn: String?
    /// The most requests the trace may hold (`Trace.maxRequests`).
    let limit: Int
    /// CSV: the key's column index, known once the header is read.
    var column: Int?
    /// The requests announced so far: the keys, once ``finish(_:)`` has expanded the ARC ranges.
    private(set) var announced = 0
    /// ARC lines whose range is not expanded yet: the slot in the keys holding their start, and
    /// their count (above 1), in the order of the slots.
    private(set) var deferred: [(slot: Int, count: Int)] = []

    init(path: String, format: TraceFormat, keyColumn: String?, limit: Int = Trace.maxRequests) {
        self.path = path
        self.format = format
        self.keyColumn = keyColumn
        self.limit = limit
    }

    /// The most blocks one line of an ARC trace may name: ``Trace/maxBlocksPerLine``.
    static let maxBlocksPerRequest = Trace.maxBlocksPerLine

    /// Parses one line (without its newline), numbered from 1, adding its keys to `keys`.
    mutating func parse(_ raw: UnsafeBufferPointer<UInt8>, number: Int, into keys: inout [Int]) throws {
        var lower = 0
        var upper = raw.count
        if number == 1 && upper >= 3 && raw[0] == 0xEF && raw[1] == 0xBB && raw[2] == 0xBF {
            lower = 3  // a UTF-8 byte order mark
        }
        while upper > lower, raw[upper - 1] == UInt8(ascii: "\r") || Self.isBlank(raw[upper - 1]) { upper -= 1 }
        while lower < upper, Self.isBlank(raw[lower]) { lower += 1 }
        let line = UnsafeBufferPointer(rebasing: raw[lower..<upper])
        switch format {
        case .lines:
            if line.isEmpty || (line.count == 1 && line[0] == UInt8(ascii: "*")) { return }
            guard let key = Self.key(line) else { throw malformed(line, number, expected: "one integer key") }
            try room(for: 1, line: number)
            keys.append(key)
        case .arc:
            if line.isEmpty { return }
            try parseARC(line, number: number, into: &keys)
        case .csv:
            guard let column else {
                if line.isEmpty { return }  // blank lines before the header
                column = try headerColumn(line, number: number)
                return
            }
            if line.isEmpty { return }
            try parseCSV(line, column: column, number: number, into: &keys)
        case .oracleGeneral:
            preconditionFailure("binary traces are not read by lines")
        }
    }

    /// Expands the ARC ranges parsed so far into their keys, in place and back to front: `keys`
    /// grows once, to the requests announced.
    mutating func finish(_ keys: inout [Int]) {
        guard !deferred.isEmpty else { return }
        let stored = keys.count
        keys.reserveCapacity(announced)
        keys.append(contentsOf: repeatElement(0, count: announced - stored))
        keys.withUnsafeMutableBufferPointer { keys in
            // Keys below `read` are not moved yet; positions from `write` on hold their final keys.
            var read = stored
            var write = announced
            for (slot, count) in deferred.reversed() {
                // The single keys after the slot move up as a block, highest first (the regions may
                // overlap, the destination above the source).
                let singles = read - slot - 1
                if write - singles != slot + 1 {
                    var i = singles
                    while i > 0 {
                        i -= 1
                        keys[write - singles + i] = keys[slot + 1 + i]
                    }
                }
                write -= singles
                let start = keys[slot]
                write -= count
                for i in 0..<count { keys[write + i] = start &+ i }
                read = slot
            }
        }
        deferred = []
    }

    /// An ARC line, `start count ...` separated by spaces or tabs; fields after the second are
    /// not read.
    private mutating func parseARC(_ line: UnsafeBufferPointer<UInt8>, number: Int, into keys: inout [Int]) throws {
        var position = 0
        func nextField() -> UnsafeBufferPointer<UInt8>? {
            while position < line.count && Self.isBlank(line[position]) { position += 1 }
            let start = position
            while position < line.count && !Self.isBlank(line[position]) { position += 1 }
            return start < position ? UnsafeBufferPointer(rebasing: line[start..<position]) : nil
        }
        guard let startField = nextField(), let countField = nextField(), let start = Self.key(startField),
            let count = Self.integer(countField), count >= 0
        else { throw malformed(line, number, expected: "'start count ...' with integers") }
        guard count <= Self.maxBlocksPerRequest else {
            throw malformed(line, number, expected: "a count of at most \(Self.maxBlocksPerRequest) blocks")
        }
        if count == 0 { return }
        // A start written from 2^63 is unsigned: its range ends at 2^64 - 1, the key -1. Any other
        // ends at Int.max.
        let unsigned = start < 0 && startField[0] != UInt8(ascii: "-")
        let (last, overflow) = start.addingReportingOverflow(count - 1)
        guard !overflow && (!unsigned || last < 0) else {
            throw malformed(line, number, expected: "start + count within 64-bit integers")
        }
        try room(for: count, line: number)
        if count > 1 { deferred.append((keys.count, count)) }
        keys.append(start)
    }

    /// The index of the key column in the CSV header `line`: the first field named `keyColumn`,
    /// or else the first named `obj_id`, then `key`, `id`, `lbn`. Fields are compared trimmed of
    /// whitespace, as `String`s: ASCII byte by byte, anything else decoded, so that Unicode
    /// whitespace and canonical equivalence count as `String` comparison has them.
    private func headerColumn(_ line: UnsafeBufferPointer<UInt8>, number: Int) throws -> Int {
        let names = keyColumn.map { [$0] } ?? ["obj_id", "key", "id", "lbn"]
        // Each name's bytes, when it is ASCII.
        let ascii: [[UInt8]?] = names.map { name in name.utf8.allSatisfy { $0 < 0x80 } ? Array(name.utf8) : nil }
        var best: (rank: Int, index: Int)?
        var index = 0
        var fieldStart = 0
        for position in 0...line.count where position == line.count || line[position] == UInt8(ascii: ",") {
            var lower = fieldStart
            var upper = position
            while lower < upper && Self.isBlank(line[lower]) { lower += 1 }
            while upper > lower && Self.isBlank(line[upper - 1]) { upper -= 1 }
            let field = UnsafeBufferPointer(rebasing: line[lower..<upper])
            var fieldIsASCII = true
            for byte in field where byte >= 0x80 {
                fieldIsASCII = false
                break
            }
            var decoded: String?
            for rank in 0..<(best?.rank ?? names.count) {
                let equal: Bool
                if fieldIsASCII, let bytes = ascii[rank] {
                    equal =
                        bytes.count == field.count
                        && (field.isEmpty
                            || bytes.withUnsafeBufferPointer {
                                memcmp($0.baseAddress!, field.baseAddress!, field.count) == 0
                            })
                } else {
                    if decoded == nil {
                        decoded = String(
                            decoding: UnsafeBufferPointer(rebasing: line[fieldStart..<position]),
                            as: UTF8.self
                        )
                        .trimmingCharacters(in: .whitespaces)
                    }
                    equal = decoded == names[rank]
                }
                if equal {
                    best = (rank, index)
                    break
                }
            }
            if best?.rank == 0 { break }
            index += 1
            fieldStart = position + 1
        }
        guard let best else {
            throw TraceError.missingColumn(
                path: path,
                line: number,
                column: TraceError.quote(keyColumn ?? "obj_id|key|id|lbn"),
                header: TraceError.quote(line)
            )
        }
        return best.index
    }

    /// A CSV record: the key is field `column` (0-based), trimmed of spaces and tabs.
    private mutating func parseCSV(
        _ line: UnsafeBufferPointer<UInt8>,
        column: Int,
        number: Int,
        into keys: inout [Int]
    ) throws {
        var lower = 0
        var commas = 0
        while commas < column {
            guard lower < line.count,
                let found = memchr(line.baseAddress! + lower, Int32(UInt8(ascii: ",")), line.count - lower)
            else { throw malformed(line, number, expected: "at least \(column + 1) comma-separated fields") }
            lower = line.baseAddress!.distance(to: found.assumingMemoryBound(to: UInt8.self)) + 1
            commas += 1
        }
        var upper = lower
        while upper < line.count && line[upper] != UInt8(ascii: ",") { upper += 1 }
        while lower < upper && Self.isBlank(line[lower]) { lower += 1 }
        while upper > lower && Self.isBlank(line[upper - 1]) { upper -= 1 }
        guard lower < upper else { throw malformed(line, number, expected: "a key in field \(column + 1)") }
        let field = UnsafeBufferPointer(rebasing: line[lower..<upper])
        try room(for: 1, line: number)
        keys.append(Self.key(field) ?? Self.hash(field))
    }

    /// Counts `count` more requests; throws if they take the trace past `limit`.
    private mutating func room(for count: Int, line: Int) throws {
        guard count <= limit - announced else {
            throw TraceError.tooManyRequests(path: path, line: line, limit: limit)
        }
        announced += count
    }

    private func malformed(_ line: UnsafeBufferPointer<UInt8>, _ number: Int, expected: String) -> TraceError {
        .malformedLine(path: path, line: number, text: TraceError.quote(line), expected: expected)
    }

    private static func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == 9 }

    /// A decimal integer from -2^63 to 2^64 - 1 with an optional sign, as its 64-bit pattern, or
    /// `nil`.
    static func key(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let (magnitude, negative) = magnitude(bytes) else { return nil }
        if negative {
            guard magnitude <= UInt64(Int.max) + 1 else { return nil }
            return Int(truncatingIfNeeded: 0 &- magnitude)
        }
        return Int(truncatingIfNeeded: magnitude)
    }

    /// A decimal integer from -2^63 to 2^63 - 1 with an optional sign, or `nil`.
    static func integer(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let (magnitude, negative) = magnitude(bytes) else { return nil }
        if negative {
            guard magnitude <= UInt64(Int.max) + 1 else { return nil }
            return Int(truncatingIfNeeded: 0 &- magnitude)
        }
        guard magnitude <= UInt64(Int.max) else { return nil }
        return Int(magnitude)
    }

    /// The digits of a decimal integer, an optional sign before them, as a magnitude below 2^64
    /// and whether the sign is `-`.
    private static func magnitude(_ bytes: UnsafeBufferPointer<UInt8>) -> (UInt64, negative: Bool)? {
        var position = 0
        var negative = false
        if let first = bytes.first, first == UInt8(ascii: "-") || first == UInt8(ascii: "+") {
            negative = first == UInt8(ascii: "-")
            position = 1
        }
        guard position < bytes.count else { return nil }
        var value: UInt64 = 0
        while position < bytes.count {
            let digit = bytes[position] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(UInt64(digit))
            guard !o1 && !o2 else { return nil }
            value = sum
            position += 1
        }
        return (value, negative)
    }

    /// FNV-1a of a non-numeric key: stable across runs, so results are repeatable.
    static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            h ^= UInt64(byte)
            h &*= 0x100_0000_01b3
        }
        return Int(bitPattern: UInt(h))
    }
}
