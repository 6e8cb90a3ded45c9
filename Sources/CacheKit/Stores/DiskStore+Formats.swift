import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

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
/// | 20       | 4    | checksum of the value (CRC-32C in four lanes)   |
/// | 24       | 4    | CRC-32C of bytes 0 ..< 24 followed by the key   |
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
        _DiskBytes.append(_CRC32C.lanes(of: value), to: &bytes)
        var headerCRC = _CRC32C()
        headerCRC.update(bytes)
        headerCRC.update(keyBytes)
        _DiskBytes.append(headerCRC.value, to: &bytes)
        bytes += keyBytes
        bytes += value
        return bytes
    }

    /// The value in the entry file at `path`, expected to hold `size` bytes for `key`, or how
    /// the file is damaged. Reads the header, then the value straight into its `Data`.
    ///
    /// A FIFO, device, directory or symbolic link in the entry's place is damage, found without
    /// blocking.
    ///
    /// - Throws: ``CacheStoreError/ioFailure(path:operation:errno:)`` if the file cannot be
    ///   opened or read (`open` with `ENOENT` when it is missing).
    static func read(_ path: String, key: String, size: Int) throws(CacheStoreError) -> Result<Data, _DiskEntryDamage> {
        let keyBytes = Array(key.utf8)
        let headerAndKey = headerSize + keyBytes.count
        // Without blocking and without following a link: a FIFO or a device put in the entry's
        // place must not stall the read (opening a FIFO waits for a writer), and is not an entry.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW)
        guard descriptor >= 0 else {
            if errno == ELOOP { return .failure(_DiskEntryDamage(reason: "a symbolic link, not an entry file")) }
            throw .ioFailure(path: path, operation: "open", errno: errno)
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw .ioFailure(path: path, operation: "fstat", errno: errno) }
        guard status.st_mode & S_IFMT == S_IFREG else {
            return .failure(_DiskEntryDamage(reason: "not a regular file"))
        }
        let expected = headerAndKey + size
        if Int(status.st_size) < expected {
            return .failure(_DiskEntryDamage(reason: "truncated: \(status.st_size) of \(expected) bytes"))
        }
        if Int(status.st_size) > expected {
            return .failure(_DiskEntryDamage(reason: "longer than the \(expected) bytes its entry has"))
        }
        var header = [UInt8](repeating: 0, count: headerAndKey)
        let headerRead = header.withUnsafeMutableBytes { _DiskIO.readFully(descriptor, into: $0, at: 0) }
        var value = Data(count: size)
        let valueRead = value.withUnsafeMutableBytes { _DiskIO.readFully(descriptor, into: $0, at: headerAndKey) }
        if headerRead < 0 || valueRead < 0 {
            throw .ioFailure(path: path, operation: "read", errno: -Int32(min(headerRead, valueRead)))
        }
        guard headerRead == headerAndKey, valueRead == size else {
            return .failure(_DiskEntryDamage(reason: "cut short while it was read"))
        }
        guard header.starts(with: magic) else {
            return .failure(_DiskEntryDamage(reason: "not an entry file (wrong magic)"))
        }
        var reader = _DiskBytes.Reader(header, from: magic.count)
        guard let version = reader.read(UInt16.self), version == self.version,
            let keyLength = reader.read(UInt16.self), Int(keyLength) == keyBytes.count,
            let valueLength = reader.read(UInt64.self), valueLength == UInt64(size),
            let valueCRC = reader.read(UInt32.self), let headerCRC = reader.read(UInt32.self)
        else { return .failure(_DiskEntryDamage(reason: "its header does not match the entry")) }
        var check = _CRC32C()
        check.update(header[0..<24])
        check.update(header[headerSize...])
        guard check.value == headerCRC else {
            return .failure(_DiskEntryDamage(reason: "its header checksum does not match"))
        }
        guard header[headerSize...].elementsEqual(keyBytes) else {
            return .failure(_DiskEntryDamage(reason: "it holds another key"))
        }
        guard _CRC32C.lanes(of: value) == valueCRC else {
            return .failure(_DiskEntryDamage(reason: "its value checksum does not match"))
        }
        return .success(value)
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
