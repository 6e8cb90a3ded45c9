import Foundation

/// A trace: the sequence of keys a cache was asked for, each request one key of size 1.
public struct Trace: Sendable {
    /// Where the trace came from: a file path or a synthetic workload's description.
    public var name: String
    /// The requested keys, in order. Non-numeric keys (CSV) are hashed to integers.
    public var keys: [Int]

    /// The most requests a trace file may hold: 2^30, 8 GiB of keys in memory. A file with more
    /// (or an ARC trace whose lines name more blocks) is refused with
    /// ``TraceError/tooManyRequests(path:line:limit:)`` before it exhausts memory.
    public static let maxRequests = 1 << 30

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
public enum TraceError: Error, Equatable, CustomStringConvertible {
    /// The file could not be opened or read.
    case unreadable(path: String, reason: String)
    /// No format was given and the extension implies none.
    case unknownFormat(path: String)
    /// A line (1-based) that does not parse as the format requires.
    case malformedLine(path: String, line: Int, text: String, expected: String)
    /// The CSV header, on `line`, lacks the key column.
    case missingColumn(path: String, line: Int, column: String, header: String)
    /// A binary trace ends inside a record.
    case truncatedRecord(path: String, byteOffset: Int)
    /// The file holds no requests.
    case empty(path: String)
    /// The file holds more requests than ``Trace/maxRequests``; `line` is where the count passed it
    /// (0 for a binary trace).
    case tooManyRequests(path: String, line: Int, limit: Int)

    public var description: String {
        switch self {
        case .unreadable(let path, let reason):
            "\(path): cannot read: \(reason)"
        case .unknownFormat(let path):
            "\(path): unknown trace format; name it with --format (\(TraceFormat.allCases.map(\.rawValue).joined(separator: ", ")))"
        case .malformedLine(let path, let line, let text, let expected):
            "\(path):\(line): malformed line '\(text)': expected \(expected)"
        case .missingColumn(let path, let line, let column, let header):
            "\(path):\(line): no column '\(column)' in the header '\(header)'"
        case .truncatedRecord(let path, let offset):
            "\(path): truncated 24-byte record at byte \(offset)"
        case .empty(let path):
            "\(path): the trace holds no requests"
        case .tooManyRequests(let path, let line, let limit):
            "\(path)\(line > 0 ? ":\(line)" : ""): the trace holds more than \(limit) requests, the most one replay keeps in memory"
        }
    }
}

extension Trace {
    /// Reads a trace file, streaming it in 1 MiB chunks so that only the keys stay in memory
    /// (8 bytes a request).
    ///
    /// - Parameters:
    ///   - path: The file.
    ///   - format: Its format; `nil` picks one by the extension.
    ///   - keyColumn: For CSV, the column that holds the key; `nil` tries `obj_id`, `key`, `id`,
    ///     `lbn`, in that order.
    /// - Throws: `TraceError`, naming the file and line.
    public static func read(path: String, format: TraceFormat? = nil, keyColumn: String? = nil) throws -> Trace {
        try read(path: path, format: format, keyColumn: keyColumn, limit: maxRequests)
    }

    /// `read(path:format:keyColumn:)` with a limit of its own on the requests (tests use a small one).
    static func read(path: String, format: TraceFormat?, keyColumn: String?, limit: Int) throws -> Trace {
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
            try readRecords(handle, path: path, limit: limit, into: &keys)
        case .lines, .arc, .csv:
            var parser = LineParser(path: path, format: format, keyColumn: keyColumn, limit: limit)
            try forEachLine(handle, path: path) { line, number in try parser.parse(line, number: number, into: &keys) }
        }
        guard !keys.isEmpty else { throw TraceError.empty(path: path) }
        return Trace(name: path, keys: keys)
    }

    private static func chunks(_ handle: FileHandle, path: String, _ body: (Data) throws -> Void) throws {
        while true {
            let chunk: Data?
            do {
                chunk = try handle.read(upToCount: 1 << 20)
            } catch {
                throw TraceError.unreadable(path: path, reason: "\(error.localizedDescription)")
            }
            guard let chunk, !chunk.isEmpty else { return }
            try body(chunk)
        }
    }

    /// Calls `body` with each line (without its newline) and its 1-based number.
    private static func forEachLine(
        _ handle: FileHandle,
        path: String,
        _ body: (ArraySlice<UInt8>, Int) throws -> Void
    ) throws {
        var pending: [UInt8] = []
        var number = 0
        try chunks(handle, path: path) { chunk in
            pending.append(contentsOf: chunk)
            var start = pending.startIndex
            while let newline = pending[start...].firstIndex(of: UInt8(ascii: "\n")) {
                number += 1
                try body(pending[start..<newline], number)
                start = newline + 1
            }
            pending.removeSubrange(..<start)
        }
        if !pending.isEmpty { try body(pending[...], number + 1) }
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

/// Turns lines of a text trace into keys.
struct LineParser {
    let path: String
    let format: TraceFormat
    let keyColumn: String?
    /// The most keys the trace may hold (`Trace.maxRequests`).
    let limit: Int
    /// CSV: the key's column index, known once the header is read.
    var column: Int?

    init(path: String, format: TraceFormat, keyColumn: String?, limit: Int = Trace.maxRequests) {
        self.path = path
        self.format = format
        self.keyColumn = keyColumn
        self.limit = limit
    }

    mutating func parse(_ raw: ArraySlice<UInt8>, number: Int, into keys: inout [Int]) throws {
        var line = raw
        if number == 1 && line.starts(with: [0xEF, 0xBB, 0xBF]) { line.removeFirst(3) }  // a UTF-8 byte order mark
        while let last = line.last, last == UInt8(ascii: "\r") || last == UInt8(ascii: " ") || last == 9 {
            line.removeLast()
        }
        while let first = line.first, first == UInt8(ascii: " ") || first == 9 { line.removeFirst() }
        switch format {
        case .lines:
            if line.isEmpty || line.elementsEqual("*".utf8) { return }
            guard let key = Self.integer(line) else { throw malformed(line, number, expected: "one integer key") }
            try room(for: 1, in: keys, line: number)
            keys.append(key)
        case .arc:
            if line.isEmpty { return }
            let fields = line.split(whereSeparator: { $0 == UInt8(ascii: " ") || $0 == 9 })
            guard fields.count >= 2, let start = Self.integer(fields[0]), let count = Self.integer(fields[1]),
                count >= 0
            else { throw malformed(line, number, expected: "'start count ...' with integers") }
            guard count <= Self.maxBlocksPerRequest else {
                throw malformed(line, number, expected: "a count of at most \(Self.maxBlocksPerRequest) blocks")
            }
            let (end, overflow) = start.addingReportingOverflow(count)
            guard !overflow else { throw malformed(line, number, expected: "start + count within 64-bit integers") }
            try room(for: count, in: keys, line: number)
            keys.append(contentsOf: start..<end)
        case .csv:
            let fields = line.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false)
            guard let column else {
                if line.isEmpty { return }  // blank lines before the header
                let names = fields.map { String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespaces) }
                let wanted = keyColumn.map { [$0] } ?? ["obj_id", "key", "id", "lbn"]
                guard let found = wanted.lazy.compactMap({ names.firstIndex(of: $0) }).first else {
                    throw TraceError.missingColumn(
                        path: path,
                        line: number,
                        column: keyColumn ?? "obj_id|key|id|lbn",
                        header: String(decoding: line, as: UTF8.self)
                    )
                }
                column = found
                return
            }
            if line.isEmpty { return }
            guard column < fields.count else {
                throw malformed(line, number, expected: "at least \(column + 1) comma-separated fields")
            }
            var field = fields[column]
            while let first = field.first, first == UInt8(ascii: " ") || first == 9 { field.removeFirst() }
            while let last = field.last, last == UInt8(ascii: " ") || last == 9 { field.removeLast() }
            guard !field.isEmpty else { throw malformed(line, number, expected: "a key in field \(column + 1)") }
            try room(for: 1, in: keys, line: number)
            keys.append(Self.integer(field) ?? Self.hash(field))
        case .oracleGeneral:
            preconditionFailure("binary traces are not read by lines")
        }
    }

    /// The most blocks one line of an ARC trace may name: 2^20, half a GiB of 512-byte blocks,
    /// far above any real request, and a bound on what one line can make the reader allocate.
    static let maxBlocksPerRequest = 1 << 20

    /// Throws if `count` more keys would take the trace past `limit`.
    private func room(for count: Int, in keys: [Int], line: Int) throws {
        guard keys.count + count <= limit else {
            throw TraceError.tooManyRequests(path: path, line: line, limit: limit)
        }
    }

    private func malformed(_ line: ArraySlice<UInt8>, _ number: Int, expected: String) -> TraceError {
        .malformedLine(
            path: path,
            line: number,
            text: String(decoding: line.prefix(80), as: UTF8.self),
            expected: expected
        )
    }

    /// A decimal integer with an optional sign, or `nil`.
    static func integer(_ bytes: ArraySlice<UInt8>) -> Int? {
        var value = 0
        var negative = false
        var digits = bytes[...]
        if let first = digits.first, first == UInt8(ascii: "-") || first == UInt8(ascii: "+") {
            negative = first == UInt8(ascii: "-")
            digits.removeFirst()
        }
        guard !digits.isEmpty else { return nil }
        // Accumulated negatively, which reaches Int.min (its magnitude is one more than Int.max's).
        for byte in digits {
            guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else { return nil }
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.subtractingReportingOverflow(Int(byte - UInt8(ascii: "0")))
            guard !o1 && !o2 else { return nil }
            value = sum
        }
        if negative { return value }
        return value == .min ? nil : -value
    }

    /// FNV-1a of a non-numeric key: stable across runs, so results are repeatable.
    static func hash(_ bytes: ArraySlice<UInt8>) -> Int {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            h ^= UInt64(byte)
            h &*= 0x100_0000_01b3
        }
        return Int(bitPattern: UInt(h))
    }
}
