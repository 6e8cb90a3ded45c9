import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What the index holds for one entry: its file's id, its value's size and its deadline.
struct DiskEntryInfo: Sendable, Hashable {
    /// Names the entry file (`entries/<id>`); never given to another entry.
    var id: UInt64
    /// Bytes of value.
    var size: Int
    /// When the entry expires; `nil` for never.
    var expiresAt: Date?
}

/// The entry file format. Integers are little-endian.
///
/// | offset   | size | field                                                          |
/// |----------|------|----------------------------------------------------------------|
/// | 0        | 8    | magic `89 43 4B 45 0D 0A 1A 0A` (`\x89CKE\r\n\x1A\n`)          |
/// | 8        | 2    | format version (2)                                             |
/// | 10       | 2    | key length *k*                                                 |
/// | 12       | 8    | value length *v*                                               |
/// | 20       | 8    | deadline: seconds since 2001 as a `Double`'s bits; all ones for none |
/// | 28       | 4    | checksum of the value (CRC-32C in four lanes)                  |
/// | 32       | 4    | CRC-32C of bytes 0 ..< 32 followed by the key                  |
/// | 36       | *k*  | key, UTF-8                                                     |
/// | 36 + *k* | *v*  | value                                                          |
///
/// A file names its key and deadline, so that a store whose journal is damaged can rebuild its
/// index from the files alone. Version 1 files (read, never written) lack the deadline field:
/// their header is 28 bytes, the checksums at 20 and 24.
enum DiskEntryFile {
    static let magic: [UInt8] = [0x89, 0x43, 0x4B, 0x45, 0x0D, 0x0A, 0x1A, 0x0A]
    static let version: UInt16 = 2
    static let headerSize = 36
    /// The header of version 1, without a deadline.
    static let headerSizeV1 = 28
    /// The deadline field of an entry without one.
    static let noDeadline = UInt64.max

    /// The file's bytes for `value` stored under `key` until `expiresAt`.
    static func encode(_ value: Data, key: String, expiresAt: Date?) -> [UInt8] {
        let keyBytes = Array(key.utf8)
        var bytes = magic
        bytes.reserveCapacity(headerSize + keyBytes.count + value.count)
        DiskBytes.append(version, to: &bytes)
        DiskBytes.append(UInt16(keyBytes.count), to: &bytes)
        DiskBytes.append(UInt64(value.count), to: &bytes)
        // Seconds since `Date`'s own reference date, as the journal keeps them: they read back exactly.
        DiskBytes.append(expiresAt.map { $0.timeIntervalSinceReferenceDate.bitPattern } ?? noDeadline, to: &bytes)
        DiskBytes.append(CRC32C.lanes(of: value), to: &bytes)
        var headerCRC = CRC32C()
        headerCRC.update(bytes)
        headerCRC.update(keyBytes)
        DiskBytes.append(headerCRC.value, to: &bytes)
        bytes += keyBytes
        bytes += value
        return bytes
    }

    /// Opens the entry file at `path` for reading, without blocking and without following a
    /// link (a FIFO or a device put in an entry's place must not stall a read, and is not an
    /// entry), runs `body` with its descriptor and size, and closes it; or returns the damage.
    ///
    /// - Throws: ``CacheStoreError/ioFailure(path:operation:errno:)`` if it cannot be opened
    ///   (`open` with `ENOENT` when it is missing) or examined, and what `body` throws.
    private static func withFile<T>(
        _ path: String,
        _ body: (_ descriptor: Int32, _ size: Int) throws(CacheStoreError) -> Result<T, DiskEntryDamage>
    ) throws(CacheStoreError) -> Result<T, DiskEntryDamage> {
        switch try openFile(path) {
        case .failure(let damage):
            return .failure(damage)
        case .success(let (descriptor, size)):
            defer { close(descriptor) }
            return try body(descriptor, size)
        }
    }

    private static func openFile(_ path: String) throws(CacheStoreError) -> Result<(Int32, Int), DiskEntryDamage> {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW)
        guard descriptor >= 0 else {
            if errno == ELOOP { return .failure(DiskEntryDamage(reason: "a symbolic link, not an entry file")) }
            throw .ioFailure(path: path, operation: "open", errno: errno)
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let error = errno
            close(descriptor)
            throw .ioFailure(path: path, operation: "fstat", errno: error)
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            close(descriptor)
            return .failure(DiskEntryDamage(reason: "not a regular file"))
        }
        return .success((descriptor, Int(status.st_size)))
    }

    /// The header fields of an entry file, checked against its own checksum.
    struct Header {
        var version: UInt16
        var key: [UInt8]
        var valueLength: UInt64
        var expiresAt: Date?
        var valueCRC: UInt32
        /// Bytes before the value: the header and the key.
        var size: Int
    }

    /// Reads and checks the header and key of the file open at `descriptor`, `fileSize` bytes
    /// long, whose version is the one whose header size `headerSize` is.
    private static func header(
        _ descriptor: Int32,
        path: String,
        fileSize: Int,
        keyLength: Int,
        headerSize: Int
    ) throws(CacheStoreError) -> Result<Header, DiskEntryDamage> {
        let headerAndKey = headerSize + keyLength
        guard fileSize >= headerAndKey else {
            return .failure(DiskEntryDamage(reason: "truncated: \(fileSize) bytes, shorter than its header"))
        }
        var bytes = [UInt8](repeating: 0, count: headerAndKey)
        let read = bytes.withUnsafeMutableBytes { DiskIO.readFully(descriptor, into: $0, at: 0) }
        if read < 0 { throw .ioFailure(path: path, operation: "read", errno: -Int32(read)) }
        guard read == headerAndKey else { return .failure(DiskEntryDamage(reason: "cut short while it was read")) }
        guard bytes.starts(with: magic) else {
            return .failure(DiskEntryDamage(reason: "not an entry file (wrong magic)"))
        }
        var reader = DiskBytes.Reader(bytes, from: magic.count)
        let version = reader.read(UInt16.self)!
        let storedKeyLength = reader.read(UInt16.self)!
        let valueLength = reader.read(UInt64.self)!
        let deadline = headerSize == self.headerSize ? reader.read(UInt64.self)! : noDeadline
        let valueCRC = reader.read(UInt32.self)!
        let headerCRC = reader.read(UInt32.self)!
        guard version == (headerSize == self.headerSize ? self.version : 1), Int(storedKeyLength) == keyLength else {
            return .failure(DiskEntryDamage(reason: "its header does not match the entry"))
        }
        var check = CRC32C()
        check.update(bytes[0..<(headerSize - 4)])
        check.update(bytes[headerSize...])
        guard check.value == headerCRC else {
            return .failure(DiskEntryDamage(reason: "its header checksum does not match"))
        }
        let expiresAt =
            deadline == noDeadline ? nil : Date(timeIntervalSinceReferenceDate: Double(bitPattern: deadline))
        return .success(
            Header(
                version: version,
                key: Array(bytes[headerSize...]),
                valueLength: valueLength,
                expiresAt: expiresAt,
                valueCRC: valueCRC,
                size: headerAndKey
            )
        )
    }

    /// Reads `length` bytes of value after the header and checks them against `crc`.
    private static func value(
        _ descriptor: Int32,
        path: String,
        at offset: Int,
        length: Int,
        crc: UInt32
    ) throws(CacheStoreError) -> Result<Data, DiskEntryDamage> {
        // The read fills memory left uninitialized: zero-filling it first (`Data(count:)`) would
        // write every byte once more before the read writes it.
        var value = Data()
        if length > 0 {
            guard let memory = malloc(length) else { throw .ioFailure(path: path, operation: "malloc", errno: ENOMEM) }
            let read = DiskIO.readFully(
                descriptor,
                into: UnsafeMutableRawBufferPointer(start: memory, count: length),
                at: offset
            )
            guard read == length else {
                free(memory)
                if read < 0 { throw .ioFailure(path: path, operation: "read", errno: -Int32(read)) }
                return .failure(DiskEntryDamage(reason: "cut short while it was read"))
            }
            value = Data(bytesNoCopy: memory, count: length, deallocator: .free)
        }
        guard CRC32C.lanes(of: value) == crc else {
            return .failure(DiskEntryDamage(reason: "its value checksum does not match"))
        }
        return .success(value)
    }

    /// The value in the entry file at `path`, expected to hold `size` bytes for `key`, or how
    /// the file is damaged. Reads the header, then the value straight into its `Data`. A file of
    /// either version is read; which one, its size tells.
    ///
    /// A FIFO, device, directory or symbolic link in the entry's place is damage, found without
    /// blocking.
    ///
    /// - Throws: ``CacheStoreError/ioFailure(path:operation:errno:)`` if the file cannot be
    ///   opened or read (`open` with `ENOENT` when it is missing).
    static func read(_ path: String, key: String, size: Int) throws(CacheStoreError) -> Result<Data, DiskEntryDamage> {
        let keyBytes = Array(key.utf8)
        return try withFile(path) { descriptor, fileSize throws(CacheStoreError) in
            let expected = headerSize + keyBytes.count + size
            let fileHeaderSize: Int
            switch fileSize {
            case expected: fileHeaderSize = headerSize
            case expected - (headerSize - headerSizeV1): fileHeaderSize = headerSizeV1
            case ..<expected: return .failure(DiskEntryDamage(reason: "truncated: \(fileSize) of \(expected) bytes"))
            default: return .failure(DiskEntryDamage(reason: "longer than the \(expected) bytes its entry has"))
            }
            let header: Header
            switch try self.header(
                descriptor,
                path: path,
                fileSize: fileSize,
                keyLength: keyBytes.count,
                headerSize: fileHeaderSize
            ) {
            case .failure(let damage): return .failure(damage)
            case .success(let found): header = found
            }
            guard header.valueLength == UInt64(size) else {
                return .failure(DiskEntryDamage(reason: "its header does not match the entry"))
            }
            guard header.key == keyBytes else { return .failure(DiskEntryDamage(reason: "it holds another key")) }
            return try value(descriptor, path: path, at: header.size, length: size, crc: header.valueCRC)
        }
    }

    /// What an entry file found without an index says of itself, once checked whole.
    struct Recovered {
        var key: String
        var size: Int
        var expiresAt: Date?
    }

    /// The key, size and deadline of the entry file at `path`, read with nothing known of it
    /// beforehand and checked whole (header and value checksums), or how it is damaged. A file
    /// whose value is larger than `byteLimit` is damage without its value being read, and so is
    /// a version 1 file, which does not record its deadline.
    ///
    /// - Throws: ``CacheStoreError/ioFailure(path:operation:errno:)`` if the file cannot be
    ///   opened or read.
    static func recover(_ path: String, byteLimit: Int) throws(CacheStoreError) -> Result<Recovered, DiskEntryDamage> {
        try withFile(path) { descriptor, fileSize throws(CacheStoreError) in
            var start = [UInt8](repeating: 0, count: 12)
            let read = start.withUnsafeMutableBytes { DiskIO.readFully(descriptor, into: $0, at: 0) }
            if read < 0 { throw .ioFailure(path: path, operation: "read", errno: -Int32(read)) }
            guard read == 12, start.starts(with: magic) else {
                return .failure(DiskEntryDamage(reason: "not an entry file (wrong magic or too short)"))
            }
            var reader = DiskBytes.Reader(start, from: magic.count)
            guard reader.read(UInt16.self)! == version else {
                return .failure(DiskEntryDamage(reason: "its format records no deadline, or is not understood"))
            }
            let keyLength = Int(reader.read(UInt16.self)!)
            let header: Header
            switch try self.header(
                descriptor,
                path: path,
                fileSize: fileSize,
                keyLength: keyLength,
                headerSize: headerSize
            ) {
            case .failure(let damage): return .failure(damage)
            case .success(let found): header = found
            }
            guard header.valueLength <= UInt64(byteLimit), Int(header.valueLength) == fileSize - header.size else {
                return .failure(
                    DiskEntryDamage(reason: "its length does not match the file, or exceeds the byte limit")
                )
            }
            // What the journal would refuse is damage here too: a rebuilt journal must replay.
            guard let key = String(validating: header.key, as: UTF8.self),
                (1...DiskStore.maximumKeyBytes).contains(header.key.count)
            else {
                return .failure(DiskEntryDamage(reason: "its key is not 1 to 4,096 bytes of UTF-8"))
            }
            if let deadline = header.expiresAt, !deadline.timeIntervalSinceReferenceDate.isFinite {
                return .failure(DiskEntryDamage(reason: "its deadline is not a finite date"))
            }
            let size = Int(header.valueLength)
            switch try value(descriptor, path: path, at: header.size, length: size, crc: header.valueCRC) {
            case .failure(let damage): return .failure(damage)
            case .success: return .success(Recovered(key: key, size: size, expiresAt: header.expiresAt))
            }
        }
    }
}

/// How an entry file is damaged.
struct DiskEntryDamage: Error {
    var reason: String
}

/// Little-endian integers in byte arrays, and a bounds-checked reader of them.
enum DiskBytes {
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
