import CacheKit
import CacheKitTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("DiskStore crashes")
struct DiskStoreCrashTests {
    /// The store crash helper, built next to the test bundle (the test target depends on it).
    static let helper = testHelper

    /// Whether `value` is one the helper writes for `key`, and its version if so (see the
    /// helper's `main.swift` for the format).
    static func version(of value: Data, key: String) -> UInt64? {
        let bytes = Array(value)
        guard bytes.count >= 8 else { return nil }
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in bytes.dropLast(8) { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
        let stored = bytes.suffix(8).enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * $1.offset) }
        guard stored == hash else { return nil }
        // Split as bytes: the random tail may begin with a combining mark, which joins a `|`
        // into another character.
        let fields = bytes.dropLast(8).split(
            separator: UInt8(ascii: "|"),
            maxSplits: 2,
            omittingEmptySubsequences: false
        )
        guard fields.count == 3, fields[0].elementsEqual(key.utf8) else { return nil }
        return UInt64(String(decoding: fields[1], as: UTF8.self))
    }

    @Test(
        "after a SIGKILL at any moment every entry reads back as written or is reported and dropped, within the limits",
        .enabled(if: helper != nil, Comment(rawValue: testHelperMissing))
    )
    func killedAtRandomMoments() async throws {
        let helper = try #require(Self.helper)
        let directory = StoreDirectory()
        var generator = SystemRandomNumberGenerator()
        for cycle in 0..<100 {
            let process = Process()
            process.executableURL = helper
            process.arguments = ["disk-store-crash", directory.url.path]
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            // Lets the helper finish a random number of calls (none, for a kill during opening),
            // then kills it: the kill lands at any point of the next call.
            let calls = Int.random(in: 0...12, using: &generator)
            var acknowledged: [String: UInt64] = [:]  // the last write each key saw return
            var pending = ""
            var seen = -1  // "ready" is not a call
            let reader = output.fileHandleForReading
            while seen < calls {
                let data = reader.availableData
                if data.isEmpty { break }
                pending += String(decoding: data, as: UTF8.self)
                while let newline = pending.firstIndex(of: "\n") {
                    let line = pending[..<newline].split(separator: " ")
                    pending.removeSubrange(...newline)
                    seen += 1
                    if line.count == 3, line[0] == "s" { acknowledged[String(line[1])] = UInt64(line[2]) }
                    if line.count == 2, line[0] == "r" { acknowledged[String(line[1])] = nil }
                }
            }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            #expect(process.terminationReason == .uncaughtSignal, "cycle \(cycle): the helper failed")

            let problems = ProblemLog()
            let store = try await DiskStore(
                directory: directory.url,
                countLimit: 30,
                byteLimit: 4_000,
                problemHandler: problems.handler
            )
            let usage = try await store.usage()
            #expect(usage.count <= 30 && usage.bytes <= 4_000, "cycle \(cycle)")
            var found = 0
            for key in (0..<40).map({ "k\($0)" }) {
                guard let entry = try await store.entry(forKey: key) else { continue }
                found += 1
                let version = Self.version(of: entry.value, key: key)
                #expect(version != nil, "cycle \(cycle): \(key) holds a value the helper never wrote")
                if let version, let written = acknowledged[key] {
                    #expect(version >= written, "cycle \(cycle): \(key) went back to an older value")
                }
            }
            let dropped = problems.all.filter { $0.key != nil }.count
            #expect(found + dropped == usage.count, "cycle \(cycle): \(problems.all)")
            #expect(dropped == 0, "cycle \(cycle): a crash alone damages no entry: \(problems.all)")
            try await store.close()
            let files = directory.entryFiles().count
            let leftovers =
                (try? FileManager.default.contentsOfDirectory(atPath: directory.entries.path))?
                .filter { $0.hasSuffix(".tmp") } ?? []
            #expect(files == found && leftovers.isEmpty, "cycle \(cycle): files no entry lists are removed")
        }
    }
}
