import Foundation
import Testing

@testable import CacheKit

/// Cache files written on purpose to break the loader: each loads as a typed
/// `CachePersistenceError`, never a crash, and never makes `load()` read or allocate much more
/// than the payload it decodes.
@Suite("Hostile cache files")
struct HostileCacheFileTests {
    /// A value that nests as deep as its file says: the kind of type a deep payload attacks.
    struct Tree: Codable, Equatable, Sendable {
        var children: [Tree]

        /// A chain of `levels` trees, each the only child of the one above.
        static func chain(_ levels: Int) -> Tree {
            var tree = Tree(children: [])
            for _ in 1..<levels { tree = Tree(children: [tree]) }
            return tree
        }
    }

    /// A temporary directory, removed with its files when the value is released.
    final class Directory {
        let url: URL
        init() throws {
            url = FileManager.default.temporaryDirectory.appendingPathComponent("hostile-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        }
        deinit { try? FileManager.default.removeItem(at: url) }
        func file(_ name: String = "cache.bin") -> URL { url.appendingPathComponent(name) }
    }

    /// Writes `payload` as a cache file of `identifier`, with a valid checksum.
    func writeFile(_ payload: [UInt8], identifier: String, in directory: Directory) throws -> URL {
        let url = directory.file()
        try Data(CacheFile.wrap(Data(payload), identifier: identifier)).write(to: url)
        return url
    }

    /// Runs `body` on a thread with a 512 KiB stack (a secondary thread's on Apple platforms)
    /// and returns what it returned.
    func onSmallStack<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            let thread = Thread { continuation.resume(returning: body()) }
            thread.stackSize = 512 * 1024
            thread.start()
        }
    }

    /// Loads `url` into a `Cache<String, Tree>` with `serializer` on a small stack: the error,
    /// or `nil` and the value of key "k".
    func load(
        _ url: URL,
        _ serializer: CacheSerializer<String, Tree>
    ) async -> (error: CachePersistenceError?, value: Tree?) {
        await onSmallStack {
            let cache = Cache<String, Tree>()
            do throws(CachePersistenceError) {
                try CachePersistence(cache: cache, fileURL: url, serializer: serializer).load()
                return (nil, cache["k"])
            } catch {
                return (error, nil)
            }
        }
    }

    // MARK: Property lists

    @Test("an XML property list whose integer starts with a byte 0xF8–0xFF is refused before any parser sees it")
    func xmlIntegerWithInvalidLeadByte() async throws {
        let directory = try Directory()
        let payload =
            Array("<array><dict><key>key</key><string/><key>value</key><integer>".utf8) + [0xFF]
            + Array("aaaaaaa</integer></dict></array>".utf8)
        let url = try writeFile(payload, identifier: "plist", in: directory)
        #expect(try Data(contentsOf: url).count == 122)
        let result = await load(url, .propertyList)
        guard case .undecodable(_, _, let reason) = result.error else {
            Issue.record("expected .undecodable, got \(String(describing: result.error))")
            return
        }
        #expect(reason.contains("XML property list"), "\(reason)")
    }

    @Test("9,500 nested XML arrays are refused before any parser sees them")
    func deeplyNestedXML() async throws {
        let directory = try Directory()
        let payload = Array(
            (String(repeating: "<array>", count: 9_500) + String(repeating: "</array>", count: 9_500)).utf8
        )
        let url = try writeFile(payload, identifier: "plist", in: directory)
        let result = await load(url, .propertyList)
        guard case .undecodable = result.error else {
            Issue.record("expected .undecodable, got \(String(describing: result.error))")
            return
        }
    }

    @Test("an OpenStep property list is refused too")
    func openStepPropertyList() async throws {
        let directory = try Directory()
        let url = try writeFile(
            Array("({key = k; value = {children = ();}; cost = 0;})".utf8),
            identifier: "plist",
            in: directory
        )
        let result = await load(url, .propertyList)
        guard case .undecodable(_, _, let reason) = result.error else {
            Issue.record("expected .undecodable, got \(String(describing: result.error))")
            return
        }
        #expect(reason.contains("not a binary property list"), "\(reason)")
    }

    /// A payload nesting exactly `depth` levels: the entries array, one entry, and a chain of
    /// trees (a dictionary and an array per level).
    static func treeLevels(forDepth depth: Int) -> Int { (depth - 2) / 2 }

    @Test(
        "a payload at the nesting limit loads on a 512 KiB stack; one level more is refused",
        arguments: ["json", "plist"]
    )
    func payloadAtTheLimit(serializerName: String) async throws {
        let serializer: CacheSerializer<String, Tree> = serializerName == "json" ? .json : .propertyList
        let directory = try Directory()
        let limit = PayloadCheck.maximumDepth
        for (levels, loads) in [
            (Self.treeLevels(forDepth: limit), true), (Self.treeLevels(forDepth: limit) + 1, false),
        ] {
            let cache = Cache<String, Tree>()
            cache["k"] = Tree.chain(levels)
            let url = directory.file("tree-\(levels).\(serializerName)")
            try CachePersistence(cache: cache, fileURL: url, serializer: serializer).save()
            let result = await load(url, serializer)
            if loads {
                #expect(result.error == nil)
                #expect(result.value == Tree.chain(levels))
            } else {
                guard case .undecodable(_, _, let reason) = result.error else {
                    Issue.record("expected .undecodable, got \(String(describing: result.error))")
                    continue
                }
                #expect(reason.contains("nests deeper than \(limit) levels"), "\(reason)")
            }
        }
    }

    @Test("the JSON depth count skips brackets inside strings and escapes")
    func jsonDepthSkipsStrings() throws {
        let limit = PayloadCheck.maximumDepth
        let atLimit = String(repeating: "[", count: limit) + String(repeating: "]", count: limit)
        #expect(throws: Never.self) { try PayloadCheck.checkJSON(Data(atLimit.utf8)) }
        #expect(throws: PayloadRefused.self) { try PayloadCheck.checkJSON(Data(("[" + atLimit + "]").utf8)) }
        let quoted = "[\"" + String(repeating: "[{\\\"", count: 1_000) + "\"]"
        #expect(throws: Never.self) { try PayloadCheck.checkJSON(Data(quoted.utf8)) }
    }

    /// A binary property list of `objects` (each a marker byte and its reference bytes, one
    /// byte per reference), with object `top` at the top.
    static func binaryPropertyList(_ objects: [[UInt8]], top: Int = 0, referenceSize: UInt8 = 1) -> [UInt8] {
        var bytes = Array("bplist00".utf8)
        var offsets: [Int] = []
        for object in objects {
            offsets.append(bytes.count)
            bytes += object
        }
        let table = bytes.count
        for offset in offsets { bytes += withUnsafeBytes(of: UInt32(offset).bigEndian, Array.init) }
        bytes += [0, 0, 0, 0, 0, 0, 4, referenceSize]
        for value in [objects.count, top, table] { bytes += withUnsafeBytes(of: UInt64(value).bigEndian, Array.init) }
        return bytes
    }

    @Test(
        "a binary property list whose structure is unsound is refused before Foundation parses it",
        arguments: [
            ("a cycle", binaryPropertyList([[0xA1, 0x01], [0xA1, 0x00]]), "contains itself"),
            ("a reference past the objects", binaryPropertyList([[0xA1, 0x07]]), "a reference to object 7 of 1"),
            ("too many references", binaryPropertyList([[0xAF, 0x10, 0x20]]), "references run past the objects"),
            ("a short file", Array("bplist00".utf8) + [0, 0], "shorter than a header and a trailer"),
            (
                "a trailer past the end",
                Array(binaryPropertyList([[0xA0]]).dropLast(1)) + [0xFF], "does not fit it"
            ),
        ]
    )
    func unsoundBinaryPropertyList(_ name: String, payload: [UInt8], reason: String) throws {
        let error = #expect(throws: PayloadRefused.self) {
            try PayloadCheck.checkBinaryPropertyList(Data(payload))
        }
        #expect(error?.reason.contains(reason) == true, "\(name): \(String(describing: error))")
    }

    @Test("shared objects nested deep are walked once each, and 10,000 levels are refused without recursion")
    func sharedAndDeepObjects() throws {
        // Object i is an array holding object i + 1 twice: 2^40 paths, 41 objects to walk.
        var shared: [[UInt8]] = []
        for i in 0..<40 { shared.append([0xA2, UInt8(i + 1), UInt8(i + 1)]) }
        shared.append([0xA0])
        #expect(throws: Never.self) { try PayloadCheck.checkBinaryPropertyList(Data(Self.binaryPropertyList(shared))) }
        // 10,000 arrays, each holding the next (two-byte references).
        var deep: [[UInt8]] = []
        for i in 0..<9_999 { deep.append([0xA1, UInt8((i + 1) >> 8), UInt8((i + 1) & 0xFF)]) }
        deep.append([0xA0])
        let error = #expect(throws: PayloadRefused.self) {
            try PayloadCheck.checkBinaryPropertyList(Data(Self.binaryPropertyList(deep, referenceSize: 2)))
        }
        #expect(error?.reason.contains("nests deeper than") == true)
    }

    // MARK: Header

    /// A valid JSON cache file of one entry, as bytes.
    func validFile(in directory: Directory) throws -> (url: URL, bytes: [UInt8]) {
        let url = directory.file()
        let cache = Cache<String, Tree>()
        cache["k"] = Tree.chain(2)
        try CachePersistence(cache: cache, fileURL: url).save()
        return (url, try [UInt8](Data(contentsOf: url)))
    }

    /// Writes a valid file with `damage` done to its bytes and expects its load to report a
    /// corrupted field at `offset` whose reason contains `reason`.
    func expectCorruptedField(at offset: Int, saying reason: String, after damage: (inout [UInt8]) -> Void) throws {
        let directory = try Directory()
        var (url, bytes) = try validFile(in: directory)
        damage(&bytes)
        try Data(bytes).write(to: url)
        do {
            try CachePersistence(cache: Cache<String, Tree>(), fileURL: url).load()
            Issue.record("the load succeeded")
        } catch {
            guard case .corrupted(_, offset, let said) = error else {
                Issue.record("expected .corrupted at offset \(offset), got \(error)")
                return
            }
            #expect(said.contains(reason), "\(said)")
        }
    }

    @Test("a flipped bit in the identifier length is reported as that field, not as a truncation")
    func flippedIdentifierLength() throws {
        try expectCorruptedField(at: 10, saying: "serializer identifier length field is 68") { $0[10] ^= 0x40 }
    }

    @Test("a payload length no file can hold is reported as a corrupted length field")
    func impossiblePayloadLength() throws {
        // The payload length's seventh byte: about 2^54.
        try expectCorruptedField(at: 15, saying: "payload length field") { $0[11 + 4 + 6] = 0x65 }
    }

    @Test("200 MB after a valid payload are reported from the file's size, without reading them")
    func hugeTrailingBytes() throws {
        let directory = try Directory()
        let (url, bytes) = try validFile(in: directory)
        let handle = try FileHandle(forWritingTo: url)
        try handle.truncate(atOffset: UInt64(bytes.count + 200_000_000))  // sparse: nothing written
        try handle.close()
        var bytesRead = 0
        #expect(
            throws: CachePersistenceError.corrupted(
                path: url.path,
                offset: bytes.count,
                reason: "200000000 bytes after the \(bytes.count - 27)-byte payload"
            )
        ) {
            try CacheFile.readPayload(path: url.path, identifier: "json", bytesRead: &bytesRead)
        }
        #expect(bytesRead <= 23 + 255)
    }

    @Test("a payload is read once: the bytes read are the file's size and the header's buffer")
    func payloadReadOnce() throws {
        let directory = try Directory()
        let url = directory.file()
        let cache = Cache<String, String>()
        for i in 0..<3_000 { cache["key \(i)"] = String(repeating: "v", count: 1_000) }
        try CachePersistence(cache: cache, fileURL: url).save()
        var bytesRead = 0
        let payload = try #require(
            try CacheFile.readPayload(path: url.path, identifier: "json", bytesRead: &bytesRead)
        )
        let size = try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int)
        #expect(payload.count == size - 27)
        #expect(bytesRead >= size && bytesRead <= size + 23 + 255)
        #expect(size > 2 * CacheFile.chunkSize, "the payload spans several chunks")
    }

    @Test("a FIFO where the file should be is refused without waiting for a writer")
    func fifoInsteadOfFile() throws {
        let directory = try Directory()
        let url = directory.file()
        #expect(mkfifo(url.path, 0o600) == 0)
        #expect(
            throws: CachePersistenceError.ioFailure(
                path: url.path,
                operation: "read (not a regular file)",
                errno: EINVAL
            )
        ) {
            try CachePersistence(cache: Cache<String, Int>(), fileURL: url).load()
        }
    }
}
