import Foundation
import Testing

@testable import CacheKitSimulator

/// Hostile trace files, each built here in a temporary folder: keys at the ends of 64 bits, lines
/// at and past the length limit, files with no newline, headers and lines too long to quote, and
/// ARC files that announce more requests than the cap.
@Suite("Trace reader limits")
struct TraceReaderLimitsTests {
    /// A new temporary folder; each test removes its own when it ends.
    struct Folder {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ck-\(UUID().uuidString.prefix(8))")

        init() throws { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false) }

        func remove() { try? FileManager.default.removeItem(at: url) }

        /// Writes `bytes` to the file `name` in the folder and returns its path.
        func write(_ bytes: some Sequence<UInt8>, _ name: String) throws -> String {
            let file = url.appendingPathComponent(name)
            try Data(bytes).write(to: file)
            return file.path
        }

        func write(_ text: String, _ name: String) throws -> String { try write(Array(text.utf8), name) }
    }

    static let limit = Trace.maxLineLength

    @Test("keys from 2^63 to UInt64.max, and negative keys, read in every text format as their 64-bit pattern")
    func unsignedAndNegativeKeys() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let big = 11_518_129_014_535_343_692 as UInt64
        let lines = try folder.write(
            "9223372036854775808\n18446744073709551615\n\(big)\n+18446744073709551614\n-1\n-9223372036854775808\n0\n",
            "k.trace"
        )
        #expect(
            try Trace.read(path: lines).keys == [.min, -1, Int(truncatingIfNeeded: big), -2, -1, .min, 0]
        )
        #expect(Int(truncatingIfNeeded: big) == -6_928_615_059_174_207_924)
        let arc = try folder.write(
            "18446744073709551615 1 0 0\n9223372036854775808 3 0 0\n-2 3 0 0\n9223372036854775807 1 0 0\n",
            "k.lis"
        )
        #expect(try Trace.read(path: arc).keys == [-1, .min, .min + 1, .min + 2, -2, -1, 0, .max])
        let csv = try folder.write(
            "time,obj_id\n1,18446744073709551615\n2, 9223372036854775808 \n3,-7\n4,\(big)\n",
            "k.csv"
        )
        #expect(try Trace.read(path: csv).keys == [-1, .min, -7, Int(truncatingIfNeeded: big)])
    }

    @Test("keys beyond 64 bits are refused, or hashed in a CSV, and an ARC range stays within its start's type")
    func keysBeyond64Bits() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let lines = try folder.write("1\n18446744073709551616\n", "o.trace")
        #expect(
            throws: TraceError.malformedLine(
                path: lines,
                line: 2,
                text: "18446744073709551616",
                expected: "one integer key"
            )
        ) { try Trace.read(path: lines) }
        let csv = try folder.write("key\n18446744073709551616\n18446744073709551616\n", "o.csv")
        let hashed = try Trace.read(path: csv).keys
        #expect(hashed.count == 2 && hashed[0] == hashed[1] && hashed[0] != 0)
        // An unsigned start's range ends at UInt64.max: it does not wrap to 0.
        let wrapping = try folder.write("18446744073709551615 2 0 0\n", "w.lis")
        #expect(
            throws: TraceError.malformedLine(
                path: wrapping,
                line: 1,
                text: "18446744073709551615 2 0 0",
                expected: "start + count within 64-bit integers"
            )
        ) { try Trace.read(path: wrapping) }
        // A count is a signed count, however its start is written.
        let count = try folder.write("0 18446744073709551615 0 0\n", "c.lis")
        #expect(
            throws: TraceError.malformedLine(
                path: count,
                line: 1,
                text: "0 18446744073709551615 0 0",
                expected: "'start count ...' with integers"
            )
        ) { try Trace.read(path: count) }
    }

    @Test("a line one byte past the maximum is refused naming its line, in every text format")
    func lineTooLong() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let long = [UInt8](repeating: UInt8(ascii: " "), count: Self.limit) + Array("2".utf8)
        for (name, head, tail) in [
            ("l.trace", "1\n", "\n3\n"), ("l.lis", "1 1\n", " 1\n3 1\n"), ("l.csv", "key\n1\n", "\n3\n"),
        ] {
            let path = try folder.write(Array(head.utf8) + long + Array(tail.utf8), name)
            let line = name.hasSuffix(".csv") ? 3 : 2
            #expect(throws: TraceError.lineTooLong(path: path, line: line, limit: Self.limit)) {
                try Trace.read(path: path)
            }
        }
        // The last line, with no newline after it.
        let last = try folder.write(Array("1\n".utf8) + long, "last.trace")
        #expect(throws: TraceError.lineTooLong(path: last, line: 2, limit: Self.limit)) {
            try Trace.read(path: last)
        }
        #expect(
            "\(TraceError.lineTooLong(path: "t.trace", line: 2, limit: 8))"
                == "t.trace:2: the line is longer than 8 bytes, the most a trace line may hold"
        )
    }

    @Test("a line just at the maximum reads, with either line ending and as the last line")
    func lineAtTheMaximum() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let longest = [UInt8](repeating: UInt8(ascii: " "), count: Self.limit - 1) + Array("2".utf8)
        let lf = try folder.write(Array("1\n".utf8) + longest + Array("\n3\n".utf8), "lf.trace")
        #expect(try Trace.read(path: lf).keys == [1, 2, 3])
        let crlf = try folder.write(Array("1\r\n".utf8) + longest + Array("\r\n3\r\n".utf8), "crlf.trace")
        #expect(try Trace.read(path: crlf).keys == [1, 2, 3])
        let last = try folder.write(Array("1\n".utf8) + longest, "last.trace")
        #expect(try Trace.read(path: last).keys == [1, 2])
        let arcLine = [UInt8](repeating: UInt8(ascii: " "), count: Self.limit - 5) + Array("2 1 0".utf8)
        let arc = try folder.write(Array("1 1\n".utf8) + arcLine + Array("\n3 1\n".utf8), "a.lis")
        #expect(try Trace.read(path: arc).keys == [1, 2, 3])
        // A CSV record of the maximum length whose key is not the long field.
        let filler = [UInt8](repeating: UInt8(ascii: "x"), count: Self.limit - 4)
        let csv = try folder.write(Array("key,x\n9,y\n10,".utf8) + filler + Array("\n".utf8), "a.csv")
        #expect(try Trace.read(path: csv).keys == [9, 10])
    }

    @Test("a 100 MB file of one line without a newline is refused after its first MiB, in every text format")
    func hundredMegabytesWithoutNewline() throws {
        let folder = try Folder()
        defer { folder.remove() }
        // A reader that scanned the unfinished line again for each 1 MiB chunk would scan 5 GB for
        // this line, and one that kept it whole would hold 100 MB; the file is written a MiB at a
        // time, and linked under each text format's extension.
        let path = try folder.write([UInt8](), "n.trace")
        let handle = try #require(FileHandle(forWritingAtPath: path))
        let mebibyte = Data(repeating: UInt8(ascii: "7"), count: 1 << 20)
        for _ in 0..<100 { handle.write(mebibyte) }
        try handle.close()
        for name in ["n.lis", "n.csv", "n.txt"] {
            let link = folder.url.appendingPathComponent(name).path
            try FileManager.default.linkItem(atPath: path, toPath: link)
            #expect(throws: TraceError.lineTooLong(path: link, line: 1, limit: Self.limit)) {
                try Trace.read(path: link)
            }
        }
        #expect(throws: TraceError.lineTooLong(path: path, line: 1, limit: Self.limit)) { try Trace.read(path: path) }
        // Many lines, then a 20 MB one, unfinished: the lines before it read once.
        let digits = [UInt8](repeating: UInt8(ascii: "7"), count: 20_000_000)
        let many = try folder.write(Array(String(repeating: "1\n", count: 2_000_000).utf8) + digits, "m.trace")
        #expect(throws: TraceError.lineTooLong(path: many, line: 2_000_001, limit: Self.limit)) {
            try Trace.read(path: many)
        }
        let csv = try folder.write(Array("key\n1\n".utf8) + digits, "m.csv")
        #expect(throws: TraceError.lineTooLong(path: csv, line: 3, limit: Self.limit)) { try Trace.read(path: csv) }
    }

    @Test("lines split the same across any chunk size, and the first line past the maximum is refused")
    func linesAcrossChunks() throws {
        let folder = try Folder()
        defer { folder.remove() }
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("ab\r\n\n".utf8)
        for round in 0..<300 {
            let bytes = (0..<Int.random(in: 0...60, using: &generator)).map { _ in
                alphabet.randomElement(using: &generator)!
            }
            let maxLength = Int.random(in: 0...8, using: &generator)
            let chunkSize = Int.random(in: 1...12, using: &generator)
            // The model: split at each newline, a final empty piece is no line; a line is too
            // long past `maxLength` bytes, one `\r` at its end not counted.
            var expected = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map(Array.init)
            if expected.last?.isEmpty == true { expected.removeLast() }
            let tooLong = expected.firstIndex {
                $0.count > maxLength && !($0.count == maxLength + 1 && $0.last == UInt8(ascii: "\r"))
            }
            let path = try folder.write(bytes, "r\(round).trace")
            let handle = try #require(FileHandle(forReadingAtPath: path))
            defer { try? handle.close() }
            var lines: [[UInt8]] = []
            var numbers: [Int] = []
            var thrown: TraceError?
            do {
                try Trace.forEachLine(handle, path: path, maxLength: maxLength, chunkSize: chunkSize) { line, number in
                    lines.append(Array(line))
                    numbers.append(number)
                }
            } catch let error as TraceError {
                thrown = error
            }
            let context = "\(bytes) max \(maxLength) chunk \(chunkSize)"
            if let tooLong {
                #expect(thrown == .lineTooLong(path: path, line: tooLong + 1, limit: maxLength), "\(context)")
                #expect(lines == Array(expected[..<tooLong]), "\(context)")
            } else {
                #expect(thrown == nil, "\(context)")
                #expect(lines == expected, "\(context)")
            }
            #expect(numbers == Array(1..<lines.count + 1), "\(context)")
        }
    }

    @Test("a CSV header without the key column, 1 MB long, is quoted in 80 characters")
    func longHeaderQuoted() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let header = (0..<250_000).map { "c\($0 % 10)\($0 % 7)" }.joined(separator: ",")
        #expect(header.utf8.count == 999_999)
        let path = try folder.write(header + "\n1,2\n", "h.csv")
        let quoted = String(header.prefix(80)) + "…"
        #expect(
            throws: TraceError.missingColumn(path: path, line: 1, column: "obj_id|key|id|lbn", header: quoted)
        ) { try Trace.read(path: path) }
        do {
            _ = try Trace.read(path: path)
        } catch {
            let message = "\(error)"
            #expect(message.count - path.count <= 150, "\(message)")
            #expect(message.hasSuffix("in the header '\(quoted)'"))
        }
        // A column name given at length is quoted the same way.
        let column = String(repeating: "k", count: 1000)
        #expect(
            throws: TraceError.missingColumn(
                path: path,
                line: 1,
                column: String(repeating: "k", count: 80) + "…",
                header: quoted
            )
        ) { try Trace.read(path: path, keyColumn: column) }
    }

    @Test("CSV header names compare as strings: Unicode whitespace trimmed, canonical equivalents equal")
    func headerNamesCompareAsStrings() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let spaced = try folder.write("a,\u{00A0}obj_id\u{2003},b\n1,5,2\n2,6,3\n", "s.csv")
        #expect(try Trace.read(path: spaced).keys == [5, 6])
        // U+212A KELVIN SIGN is canonically equivalent to "K".
        let kelvin = try folder.write("a,\u{212A}ey,b\n1,5,2\n2,6,3\n", "k.csv")
        #expect(try Trace.read(path: kelvin, keyColumn: "Key").keys == [5, 6])
        let empty = try folder.write("a, ,b\n1,5,2\n2,6,3\n", "e.csv")
        #expect(try Trace.read(path: empty, keyColumn: "").keys == [5, 6])
        // The first field with the most preferred name, whatever comes before it.
        let preferred = try folder.write("lbn,id , key,obj_id,obj_id\n1,2,3,4,5\n", "p.csv")
        #expect(try Trace.read(path: preferred).keys == [4])
        let second = try folder.write("lbn,id , key,x\n1,2,3,4\n", "q.csv")
        #expect(try Trace.read(path: second).keys == [3])
    }

    @Test("a malformed line is quoted in 80 characters, whole characters, with an ellipsis when cut")
    func malformedLineQuoted() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let text = String(repeating: "é", count: 200_000)
        let path = try folder.write("1\n\(text)\n", "m.trace")
        let quoted = String(repeating: "é", count: 80) + "…"
        #expect(
            throws: TraceError.malformedLine(path: path, line: 2, text: quoted, expected: "one integer key")
        ) { try Trace.read(path: path) }
        // Exactly 80 characters are quoted whole.
        let eighty = String(repeating: "x", count: 80)
        let fields = try folder.write("a,key\n1,2\n\(eighty)\n", "f.csv")
        #expect(
            throws: TraceError.malformedLine(
                path: fields,
                line: 3,
                text: eighty,
                expected: "at least 2 comma-separated fields"
            )
        ) { try Trace.read(path: fields) }
        // The description cuts text given at length, and leaves quoted text as it is.
        let long = String(repeating: "y", count: 500)
        let error = TraceError.malformedLine(path: "f", line: 1, text: long, expected: "z")
        #expect("\(error)" == "f:1: malformed line '\(String(repeating: "y", count: 80))…': expected z")
        #expect(TraceError.quote(quoted) == quoted)
        #expect(TraceError.quote("short") == "short")
        // Bytes that are not UTF-8 are quoted as replacement characters, one each.
        let invalid = [UInt8](repeating: 0xFF, count: 1000)
        let binary = try folder.write(invalid + Array("\n".utf8), "b.trace")
        #expect(
            throws: TraceError.malformedLine(
                path: binary,
                line: 1,
                text: String(repeating: "\u{FFFD}", count: 80) + "…",
                expected: "one integer key"
            )
        ) { try Trace.read(path: binary) }
    }

    @Test("an ARC file whose counts sum past the cap is refused on the line that passes it")
    func arcCap() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let path = try folder.write("0 5 0 0\n10 5 0 0\n20 5 0 0\n", "cap.lis")
        #expect(throws: TraceError.tooManyRequests(path: path, line: 3, limit: 12)) {
            try Trace.read(path: path, maxRequests: 12)
        }
        #expect(try Trace.read(path: path, maxRequests: 15).keys.count == 15)
        let lines = try folder.write("1\n2\n3\n", "cap.trace")
        #expect(throws: TraceError.tooManyRequests(path: lines, line: 3, limit: 2)) {
            try Trace.read(path: lines, maxRequests: 2)
        }
    }

    @Test("ARC lines take one slot each until the file is read: the cap refuses them before their ranges exist")
    func arcRefusedBeforeAllocating() throws {
        let line = Array("0 1048576 0 0".utf8)
        var parser = LineParser(path: "p.lis", format: .arc, keyColumn: nil, limit: 2 << 20)
        var keys: [Int] = []
        try line.withUnsafeBufferPointer { line in
            try parser.parse(line, number: 1, into: &keys)
            try parser.parse(line, number: 2, into: &keys)
            #expect(throws: TraceError.tooManyRequests(path: "p.lis", line: 3, limit: 2 << 20)) {
                try parser.parse(line, number: 3, into: &keys)
            }
        }
        // Two million requests announced, two keys' worth of memory taken.
        #expect(parser.announced == 2 << 20)
        #expect(keys.count == 2 && keys.capacity < 1000)
        parser.finish(&keys)
        #expect(keys.count == 2 << 20)
        #expect(keys[0] == 0 && keys[(1 << 20) - 1] == (1 << 20) - 1 && keys[1 << 20] == 0)
    }

    @Test("ARC ranges expand in file order, mixed with single blocks and empty counts")
    func arcExpansion() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let path = try folder.write("5 3\n1 1\n100 2\n7 1\n8 1\n0 0\n-3 4\n9 1\n", "mix.lis")
        #expect(try Trace.read(path: path).keys == [5, 6, 7, 1, 100, 101, 7, 8, -3, -2, -1, 0, 9])
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            let lines = (0..<Int.random(in: 1...60, using: &generator)).map { _ in
                (Int.random(in: -1000...1000, using: &generator), Int.random(in: 0...4, using: &generator))
            }
            let expected = lines.flatMap { $0.0..<($0.0 + $0.1) }
            let file = try folder.write(lines.map { "\($0.0) \($0.1) 0 0\n" }.joined(), "r.lis")
            if expected.isEmpty {
                #expect(throws: TraceError.empty(path: file)) { try Trace.read(path: file) }
            } else {
                #expect(try Trace.read(path: file).keys == expected, "\(lines)")
            }
        }
    }

    @Test("a very long CSV record is refused naming its line; one under the limit reads its key")
    func longCSVRecord() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let field = [UInt8](repeating: UInt8(ascii: "v"), count: 5_000_000)
        let refused = try folder.write(Array("time,obj_id\n1,2\n3,".utf8) + field + Array(",9\n".utf8), "r.csv")
        #expect(throws: TraceError.lineTooLong(path: refused, line: 3, limit: Self.limit)) {
            try Trace.read(path: refused)
        }
        // Many fields before the key, under the limit.
        let fields = String(repeating: "a,", count: 300_000)
        let header = String(repeating: "h,", count: 300_000) + "key"
        let wide = try folder.write("\(header)\n\(fields)42\n\(fields)43\n", "w.csv")
        #expect(try Trace.read(path: wide).keys == [42, 43])
    }
}
