import CacheKitTestSupport
import Foundation

/// The shared trace folder, `../shared/traces/` beside the package, if this checkout has one
/// (`CACHEKIT_TRACE_DIRECTORY` names another folder instead).
enum Traces {
    static let directory: URL =
        ProcessInfo.processInfo.environment["CACHEKIT_TRACE_DIRECTORY"].map { URL(fileURLWithPath: $0) }
        ?? URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // Support
        .deletingLastPathComponent()  // CacheKitTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()  // package root
        .deletingLastPathComponent()
        .appendingPathComponent("shared/traces")

    static func url(_ name: String) -> URL { directory.appendingPathComponent(name) }

    static func isPresent(_ name: String) -> Bool { FileManager.default.fileExists(atPath: url(name).path) }

    /// A trace a suite needs is absent under CI.
    typealias Missing = MissingTraces

    /// The condition of a trace suite's `.enabled` trait: whether the suite runs. It runs when
    /// trace `name` is in `folder`. When it is absent the suite skips, except under CI (`CI=true`
    /// in `environment`), where this throws ``Missing`` and the suite fails: a CI run without the
    /// traces must not pass by skipping the only tests of the policies against real workloads.
    static func required(
        _ name: String,
        in folder: URL = directory,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> Bool {
        let path = folder.appendingPathComponent(name).path
        if FileManager.default.fileExists(atPath: path) { return true }
        if environment["CI"] == "true" { throw Missing(path: path) }
        return false
    }

    /// The keys of an ARC `.lis` trace: each line `start count x y` stands for start..<start+count.
    static func arcKeys(_ name: String) throws -> [Int] {
        let data = try Data(contentsOf: url(name))
        var keys: [Int] = []
        keys.reserveCapacity(1_000_000)
        var fields: [Int] = []
        var number = 0
        var inNumber = false
        func endLine() {
            if fields.count >= 2 { keys.append(contentsOf: fields[0]..<(fields[0] + fields[1])) }
            fields.removeAll(keepingCapacity: true)
        }
        for byte in data {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                number = number * 10 + Int(byte - UInt8(ascii: "0"))
                inNumber = true
            default:
                if inNumber { fields.append(number) }
                number = 0
                inNumber = false
                if byte == UInt8(ascii: "\n") { endLine() }
            }
        }
        if inNumber { fields.append(number) }
        endLine()
        return keys
    }

    /// The keys of a trace with one integer per line; a line `*` is a marker and is skipped.
    static func lineKeys(_ name: String) throws -> [Int] {
        try String(contentsOf: url(name), encoding: .utf8)
            .split(whereSeparator: \.isNewline)
            .filter { $0 != "*" }
            .map { line in
                guard let key = Int(line.trimmingCharacters(in: .whitespaces)) else {
                    throw CocoaError(.fileReadCorruptFile, userInfo: [NSFilePathErrorKey: name])
                }
                return key
            }
    }

    /// The `column` of a CSV trace with a header line.
    static func csvKeys(_ name: String, column: String) throws -> [Int] {
        let lines = try String(contentsOf: url(name), encoding: .utf8).split(whereSeparator: \.isNewline)
        guard let header = lines.first, let c = header.split(separator: ",").firstIndex(where: { $0 == column }) else {
            throw CocoaError(.fileReadCorruptFile, userInfo: [NSFilePathErrorKey: name])
        }
        return lines.dropFirst().map { line in Int(line.split(separator: ",")[c])! }
    }

    /// The object ids of a libCacheSim oracleGeneral trace: 24-byte little-endian records
    /// {u32 time, u64 id, u32 size, i64 next access}.
    static func oracleGeneralKeys(_ name: String) throws -> [Int] {
        let data = try Data(contentsOf: url(name))
        return stride(from: 0, to: data.count - 23, by: 24).map { offset in
            var id: UInt64 = 0
            for i in 0..<8 { id |= UInt64(data[data.startIndex + offset + 4 + i]) << (8 * i) }
            return Int(bitPattern: UInt(id))
        }
    }

    /// The keys of any trace in the folder, read by its extension.
    static func keys(_ name: String) throws -> [Int] {
        if name.hasSuffix(".lis") { return try arcKeys(name) }
        if name.hasSuffix(".csv") { return try csvKeys(name, column: "lbn") }
        if name.hasSuffix(".bin") { return try oracleGeneralKeys(name) }
        return try lineKeys(name)
    }
}
