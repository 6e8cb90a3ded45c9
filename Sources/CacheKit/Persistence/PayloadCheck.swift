import Foundation

/// Why a built-in serializer refused a payload before handing it to Foundation's decoder.
struct PayloadRefused: Error, CustomStringConvertible {
    var reason: String
    var description: String { reason }
}

/// What the built-in serializers check in a payload before Foundation's decoders see it.
///
/// A cache file can come from anywhere, and its checksum protects against accidents, not against
/// a file written on purpose. Foundation's XML property-list parser stops the process on some
/// malformed integers and overflows the stack on deep nesting, and a decoder of a recursive
/// `Codable` type recurses once per level of the payload. So:
///
/// - ``CacheSerializer/propertyList`` accepts only the binary format it writes (`bplist00`):
///   an XML or OpenStep payload is refused before any parser sees it. The binary payload's
///   structure is walked first, without recursion: its trailer, offset table and object
///   references must lie inside the payload, and containers (arrays, sets and dictionaries) may
///   nest at most ``maximumDepth`` levels, with no cycles.
/// - ``CacheSerializer/json`` refuses a payload whose arrays and objects nest more than
///   ``maximumDepth`` levels, counted by one pass over its bytes (Foundation's own parser stops
///   at 512).
///
/// A file of entries nests three levels (the array of entries, an entry, and a key or value that
/// is an array or object), so the limit only matters for values that are trees.
enum PayloadCheck {
    /// The deepest nesting of arrays, sets, dictionaries and objects a built-in serializer
    /// accepts, the top-level array included. Foundation's binary property-list decoder takes
    /// about 1 KiB of stack per level of a recursive value and overflows a 512 KiB stack (a
    /// secondary thread's on Apple platforms) near 450 levels; at 256, decoding fits there
    /// with room for the caller's frames.
    static let maximumDepth = 256

    /// Checks a JSON payload's nesting, strings and escapes skipped. O(*n*) in its bytes.
    static func checkJSON(_ payload: Data) throws(PayloadRefused) {
        var depth = 0
        var inString = false
        var escaped = false
        for byte in payload {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                guard depth <= maximumDepth else {
                    throw PayloadRefused(reason: "JSON nests deeper than \(maximumDepth) levels")
                }
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                depth -= 1
            default:
                break
            }
        }
    }

    /// The magic bytes of a binary property list.
    static let binaryPropertyListMagic = Array("bplist00".utf8)

    /// Checks that `payload` is a binary property list whose structure is sound and nests at
    /// most ``maximumDepth`` levels. O(*n*) in its objects and references.
    static func checkBinaryPropertyList(_ payload: Data) throws(PayloadRefused) {
        let bytes = [UInt8](payload)
        guard bytes.starts(with: binaryPropertyListMagic) else {
            let first = bytes.first { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }
            let format = first == UInt8(ascii: "<") ? "an XML property list" : "not a binary property list"
            throw PayloadRefused(
                reason: "the payload is \(format); the property-list serializer reads only the binary format it writes"
            )
        }
        try BinaryPropertyList(bytes).checkDepth()
    }

    /// The parts of a binary property list that its structure depends on: the trailer, the
    /// offset table and each container's references.
    struct BinaryPropertyList {
        let bytes: [UInt8]
        let offsetSize: Int
        let referenceSize: Int
        let objectCount: Int
        let topObject: Int
        let offsetTable: Int

        init(_ bytes: [UInt8]) throws(PayloadRefused) {
            self.bytes = bytes
            guard bytes.count >= 8 + 1 + 32 else { throw Self.refused("it is shorter than a header and a trailer") }
            let trailer = bytes.count - 32
            offsetSize = Int(bytes[trailer + 6])
            referenceSize = Int(bytes[trailer + 7])
            guard (1...8).contains(offsetSize), (1...8).contains(referenceSize) else {
                throw Self.refused(
                    "its trailer gives offsets of \(offsetSize) and references of \(referenceSize) bytes"
                )
            }
            let count = Self.bigEndian(bytes, at: trailer + 8, size: 8)
            let top = Self.bigEndian(bytes, at: trailer + 16, size: 8)
            let table = Self.bigEndian(bytes, at: trailer + 24, size: 8)
            // Each object takes a byte at least, and the offset table lies between them and the
            // trailer: bounds that also keep the products below from overflowing.
            guard count >= 1, count <= UInt64(bytes.count), top < count, table >= 9, table <= UInt64(trailer),
                count * UInt64(offsetSize) <= UInt64(trailer) - table
            else {
                throw Self.refused(
                    "its trailer (\(count) objects, top \(top), offset table at \(table)) does not fit it"
                )
            }
            objectCount = Int(count)
            topObject = Int(top)
            offsetTable = Int(table)
        }

        static func refused(_ why: String) -> PayloadRefused {
            PayloadRefused(reason: "the binary property list is malformed: \(why)")
        }

        static func bigEndian(_ bytes: [UInt8], at offset: Int, size: Int) -> UInt64 {
            var value: UInt64 = 0
            for index in offset..<(offset + size) { value = value << 8 | UInt64(bytes[index]) }
            return value
        }

        /// Where object `index` starts.
        func offset(of index: Int) throws(PayloadRefused) -> Int {
            let offset = Self.bigEndian(bytes, at: offsetTable + index * offsetSize, size: offsetSize)
            guard offset >= 8, offset < UInt64(offsetTable) else {
                throw Self.refused("object \(index) starts at \(offset), outside the objects")
            }
            return Int(offset)
        }

        /// The position and number of object `index`'s references, if it is a container.
        func references(of index: Int) throws(PayloadRefused) -> (start: Int, count: Int)? {
            let start = try offset(of: index)
            let marker = bytes[start]
            let kind = marker >> 4
            // 0xA array, 0xB ordered set, 0xC set, 0xD dictionary (keys, then values).
            guard (0xA...0xD).contains(kind) else { return nil }
            var count = Int(marker & 0x0F)
            var position = start + 1
            if count == 0x0F {
                guard position < offsetTable, bytes[position] >> 4 == 0x1, bytes[position] & 0x0F <= 3 else {
                    throw Self.refused("object \(index)'s count is not an integer")
                }
                let size = 1 << Int(bytes[position] & 0x0F)
                guard position + 1 + size <= offsetTable else {
                    throw Self.refused("object \(index) runs past the objects")
                }
                let value = Self.bigEndian(bytes, at: position + 1, size: size)
                guard value <= UInt64(bytes.count) else {
                    throw Self.refused("object \(index) claims \(value) elements")
                }
                count = Int(value)
                position += 1 + size
            }
            let references = kind == 0xD ? 2 * count : count
            guard references <= (offsetTable - position) / referenceSize else {
                throw Self.refused("object \(index)'s \(references) references run past the objects")
            }
            return (position, references)
        }

        /// The object reference at `position`, checked.
        func reference(at position: Int) throws(PayloadRefused) -> Int {
            let value = Self.bigEndian(bytes, at: position, size: referenceSize)
            guard value < UInt64(objectCount) else {
                throw Self.refused("a reference to object \(value) of \(objectCount)")
            }
            return Int(value)
        }

        /// Walks the containers from the top object, iteratively, refusing nesting deeper
        /// than `PayloadCheck.maximumDepth` and cycles. Each object is walked once.
        func checkDepth() throws(PayloadRefused) {
            // Per object: -2 not seen, -1 being walked (on the path), else its height.
            var height = [Int32](repeating: -2, count: objectCount)
            struct Frame {
                var object: Int
                var next: Int
                var end: Int
                var tallest: Int32
            }
            var path: [Frame] = []
            let limit = PayloadCheck.maximumDepth

            /// Starts walking `object`; returns its height at once if it holds no references.
            func enter(_ object: Int) throws(PayloadRefused) -> Int32? {
                guard let (start, count) = try references(of: object) else {
                    height[object] = 0
                    return 0
                }
                guard path.count < limit else {
                    throw PayloadRefused(reason: "the property list nests deeper than \(limit) levels")
                }
                height[object] = -1
                path.append(Frame(object: object, next: start, end: start + count * referenceSize, tallest: 0))
                return nil
            }

            _ = try enter(topObject)
            while var frame = path.popLast() {
                if frame.next < frame.end {
                    let child = try reference(at: frame.next)
                    frame.next += referenceSize
                    path.append(frame)
                    switch height[child] {
                    case -1:
                        throw Self.refused("object \(child) contains itself")
                    case -2:
                        if let done = try enter(child) { path[path.count - 1].tallest = max(frame.tallest, done) }
                    case let done:
                        path[path.count - 1].tallest = max(frame.tallest, done)
                    }
                    continue
                }
                let own = frame.tallest + 1
                height[frame.object] = own
                if !path.isEmpty { path[path.count - 1].tallest = max(path[path.count - 1].tallest, own) }
            }
        }
    }
}
