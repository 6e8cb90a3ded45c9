import Foundation

/// The shared trace folder, `../shared/traces/` beside the package, if this checkout has one.
enum Traces {
    static let directory: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // Support
        .deletingLastPathComponent()  // CacheKitTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()  // package root
        .deletingLastPathComponent()
        .appendingPathComponent("shared/traces")

    static func url(_ name: String) -> URL { directory.appendingPathComponent(name) }

    static func isPresent(_ name: String) -> Bool { FileManager.default.fileExists(atPath: url(name).path) }

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
}
