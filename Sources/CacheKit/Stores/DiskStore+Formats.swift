import Foundation

/// What the index holds for one entry: its file's id, its value's size and its deadline.
struct _DiskEntryInfo: Sendable, Hashable {
    /// Names the entry file (`entries/<id>`); never given to another entry.
    var id: UInt64
    /// Bytes of value.
    var size: Int
    /// When the entry expires; `nil` for never.
    var expiresAt: Date?
}

/// The entry file format. Integers are little-endian.
///
/// | offset   | size | field                                           |
/// |----------|------|-------------------------------------------------|
/// | 0        | 8    | magic `89 43 4B 45 0D 0A 1A 0A` (`\x89CKE\r\n\x1A\n`) |
/// | 8        | 2    | format version (1)                              |
/// | 10       | 2    | key length *k*                                  |
/// | 12       | 8    | value length *v*                                |
/// | 20       | 4    | CRC32 of the value                              |
/// | 24       | 4    | CRC32 of bytes 0 ..< 24 followed by the key     |
/// | 28       | *k*  | key, UTF-8                                      |
/// | 28 + *k* | *v*  | value                                           |
enum _DiskEntryFile {
    static let magic: [UInt8] = [0x89, 0x43, 0x4B, 0x45, 0x0D, 0x0A, 0x1A, 0x0A]
    static let version: UInt16 = 1
    static let headerSize = 28

    /// The file's bytes for `value` stored under `key`.
    static func encode(_ value: Data, key: String) -> [UInt8] {
        let keyBytes = Array(key.utf8)
        var bytes = magic
        bytes.reserveCapacity(headerSize + keyBytes.count + value.count)
        _DiskBytes.append(version, to: &bytes)
        _DiskBytes.append(UInt16(keyBytes.count), to: &bytes)
        _DiskBytes.append(UInt64(value.count), to: &bytes)
        var valueCRC = _CRC32()
        value.withUnsafeBytes { valueCRC.update($0) }
        _DiskBytes.append(valueCRC.value, to: &bytes)
        var headerCRC = _CRC32()
        headerCRC.update(bytes)
        headerCRC.update(keyBytes)
        _DiskBytes.append(headerCRC.value, to: &bytes)
        bytes += keyBytes
        bytes += value
        return bytes
    }

    /// The size of the file for a value of `size` bytes under `key`.
    static func fileSize(key: String, size: Int) -> Int { headerSize + key.utf8.count + size }

    /// The value in `bytes`, a whole entry file expected to hold `size` bytes for `key`, or why
    /// it is damaged.
    static func decode(_ bytes: [UInt8], key: String, size: Int) -> Result<Data, _DiskEntryDamage> {
        let keyBytes = Array(key.utf8)
        let expected = headerSize + keyBytes.count + size
        if bytes.count < expected {
            return .failure(_DiskEntryDamage(reason: "truncated: \(bytes.count) of \(expected) bytes"))
        }
        if bytes.count > expected {
            return .failure(_DiskEntryDamage(reason: "longer than the \(expected) bytes its entry has"))
        }
        guard bytes.starts(with: magic) else {
            return .failure(_DiskEntryDamage(reason: "not an entry file (wrong magic)"))
        }
        var reader = _DiskBytes.Reader(bytes, from: magic.count)
        guard let version = reader.read(UInt16.self), version == self.version,
            let keyLength = reader.read(UInt16.self), Int(keyLength) == keyBytes.count,
            let valueLength = reader.read(UInt64.self), valueLength == UInt64(size),
            let valueCRC = reader.read(UInt32.self), let headerCRC = reader.read(UInt32.self)
        else { return .failure(_DiskEntryDamage(reason: "its header does not match the entry")) }
        var check = _CRC32()
        check.update(bytes[0..<24])
        check.update(bytes[headerSize..<(headerSize + keyBytes.count)])
        guard check.value == headerCRC else {
            return .failure(_DiskEntryDamage(reason: "its header checksum does not match"))
        }
        guard bytes[headerSize..<(headerSize + keyBytes.count)].elementsEqual(keyBytes) else {
            return .failure(_DiskEntryDamage(reason: "it holds another key"))
        }
        let value = bytes[(headerSize + keyBytes.count)...]
        var crc = _CRC32()
        crc.update(value)
        guard crc.value == valueCRC else {
            return .failure(_DiskEntryDamage(reason: "its value checksum does not match"))
        }
        return .success(Data(value))
    }
}

/// How an entry file is damaged.
struct _DiskEntryDamage: Error {
    var reason: String
}

/// Little-endian integers in byte arrays, and a bounds-checked reader of them.
enum _DiskBytes {
    static func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
    }

    /// Reads integers and byte runs from `bytes`, returning `nil` rather than reading past its end.
    struct Reader {
        let bytes: [UInt8]
        var offset: Int
        let end: Int

        init(_ bytes: [UInt8], from offset: Int, to end: Int? = nil) {
            self.bytes = bytes
            self.offset = offset
            self.end = end ?? bytes.count
        }

        var remaining: Int { end - offset }

        mutating func read<T: FixedWidthInteger>(_: T.Type) -> T? {
            let size = MemoryLayout<T>.size
            guard remaining >= size else { return nil }
            var value: T = 0
            for index in 0..<size { value |= T(bytes[offset + index]) << (8 * index) }
            offset += size
            return value
        }

        mutating func read(count: Int) -> ArraySlice<UInt8>? {
            guard count >= 0, remaining >= count else { return nil }
            defer { offset += count }
            return bytes[offset..<(offset + count)]
        }
    }
}
