import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Reading a cache file: the header is checked against the file's real size before any length
/// in it is trusted, and the payload is read in bounded chunks into one buffer of the size the
/// header announces and the file holds. However large a file claims to be or is, `load()`
/// allocates at most the header (278 bytes) and that payload, which it then decodes.
extension CacheFile {
    /// The largest payload length a header may announce: 2^48 bytes (256 TiB), more than any
    /// file a cache saves. A larger value is a damaged length field, not a truncated file.
    static let largestPlausiblePayload: UInt64 = 1 << 48

    /// How many bytes one `read` takes at most.
    static let chunkSize = 1 << 20

    /// The header fields, once checked against each other and against the file's size.
    struct Header {
        /// The serializer identifier's length (byte 10).
        var identifierCount: Int
        /// Bytes before the payload: 23 + `identifierCount`.
        var size: Int { 23 + identifierCount }
        /// The payload length the header announces.
        var payloadLength: Int
        /// The stored CRC32.
        var checksum: UInt32
    }

    /// The payload of the cache file at `path`, or `nil` if there is none: magic, version and
    /// lengths checked against the file's size, then the payload read, then its checksum and
    /// the serializer identifier checked, in that order. `bytesRead` counts what was read.
    static func readPayload(
        path: String,
        identifier: String,
        bytesRead: inout Int
    ) throws(CachePersistenceError) -> Data? {
        // Non-blocking: a FIFO put where the file should be must not hang the load.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw .ioFailure(path: path, operation: "open", errno: errno)
        }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw .ioFailure(path: path, operation: "fstat", errno: errno) }
        guard status.st_mode & S_IFMT == S_IFREG else {
            let isDirectory = status.st_mode & S_IFMT == S_IFDIR
            throw .ioFailure(path: path, operation: "read (not a regular file)", errno: isDirectory ? EISDIR : EINVAL)
        }
        let fileSize = Int(status.st_size)
        var headerBytes = [UInt8](repeating: 0, count: min(fileSize, 23 + 255))
        let headerRead = headerBytes.withUnsafeMutableBytes { readFully(fd, into: $0, at: 0) }
        let got = try headerRead.get(path: path)
        bytesRead += got
        let header = try checkHeader(
            headerBytes[..<got],
            fileSize: got < headerBytes.count ? got : fileSize,
            identifier: identifier,
            path: path
        )

        var payload = Data(count: header.payloadLength)
        var crc = CRC32()
        crc.update(headerBytes[8..<(19 + header.identifierCount)])
        var done = 0
        while done < header.payloadLength {
            let end = min(header.payloadLength, done + chunkSize)
            let chunkRead = payload.withUnsafeMutableBytes { buffer in
                let chunk = UnsafeMutableRawBufferPointer(rebasing: buffer[done..<end])
                let result = readFully(fd, into: chunk, at: header.size + done)
                if case .success(let read) = result { crc.update(UnsafeRawBufferPointer(rebasing: chunk[..<read])) }
                return result
            }
            let read = try chunkRead.get(path: path)
            bytesRead += read
            done += read
            // The file shrank while it was read.
            guard done == end else {
                throw .truncated(
                    path: path,
                    expectedBytes: header.size + header.payloadLength,
                    actualBytes: header.size + done
                )
            }
        }
        // The file grew while it was read.
        var extra: UInt8 = 0
        let afterRead = withUnsafeMutableBytes(of: &extra) { readFully(fd, into: $0, at: header.size + done) }
        guard try afterRead.get(path: path) == 0 else {
            throw .corrupted(
                path: path,
                offset: header.size + done,
                reason: "bytes after the \(header.payloadLength)-byte payload"
            )
        }
        guard crc.value == header.checksum else {
            throw .checksumMismatch(path: path, stored: header.checksum, computed: crc.value)
        }
        let idBytes = headerBytes[11..<(11 + header.identifierCount)]
        guard let found = String(validating: idBytes, as: UTF8.self) else {
            throw .corrupted(path: path, offset: 11, reason: "serializer identifier is not UTF-8")
        }
        guard found == identifier else { throw .serializerMismatch(path: path, found: found, expected: identifier) }
        return payload
    }

    /// Checks the header's fields against each other and against `fileSize`, naming the field
    /// that is wrong: magic, version, identifier length, payload length.
    static func checkHeader(
        _ bytes: ArraySlice<UInt8>,
        fileSize: Int,
        identifier: String,
        path: String
    ) throws(CachePersistenceError) -> Header {
        let bytes = Array(bytes)
        let magicBytes = min(bytes.count, magic.count)
        guard bytes[..<magicBytes].elementsEqual(magic[..<magicBytes]) else { throw .foreignFile(path: path) }
        guard bytes.count >= 11 else { throw .truncated(path: path, expectedBytes: 11, actualBytes: fileSize) }
        let version = integer(UInt16.self, in: bytes, at: 8)
        guard version <= Self.version else {
            throw .newerVersion(path: path, found: version, supported: Self.version)
        }
        guard version >= 1 else { throw .corrupted(path: path, offset: 8, reason: "format version 0") }
        let idCount = Int(bytes[10])
        guard idCount > 0 else { throw .corrupted(path: path, offset: 10, reason: "empty serializer identifier") }

        // The layout the identifier length implies, if the file holds its header.
        func layout(_ count: Int) -> (header: Int, payload: UInt64)? {
            guard bytes.count >= 23 + count else { return nil }
            return (23 + count, integer(UInt64.self, in: bytes, at: 11 + count))
        }
        func fits(_ layout: (header: Int, payload: UInt64)?) -> Bool {
            guard let layout else { return false }
            return layout.payload <= UInt64(fileSize) && Int(layout.payload) == fileSize - layout.header
        }
        let implied = layout(idCount)
        if !fits(implied) {
            // A damaged length byte in front of the expected identifier: the rest of the header
            // fits the file exactly when read with the identifier's true length.
            let expected = Array(identifier.utf8)
            if idCount != expected.count, bytes.count >= 11 + expected.count,
                bytes[11..<(11 + expected.count)].elementsEqual(expected), fits(layout(expected.count))
            {
                throw .corrupted(
                    path: path,
                    offset: 10,
                    reason: "serializer identifier length field is \(idCount), but the identifier "
                        + "\"\(identifier)\" (\(expected.count) bytes) follows, and the header fits the file "
                        + "only with that length"
                )
            }
        }
        guard let (headerSize, announced) = implied else {
            throw .truncated(path: path, expectedBytes: 23 + idCount, actualBytes: fileSize)
        }
        guard announced <= largestPlausiblePayload else {
            throw .corrupted(
                path: path,
                offset: 11 + idCount,
                reason: "payload length field holds \(announced), more than any cache file holds "
                    + "(the file has \(fileSize) bytes)"
            )
        }
        let expectedSize = headerSize + Int(announced)
        guard fileSize >= expectedSize else {
            throw .truncated(path: path, expectedBytes: expectedSize, actualBytes: fileSize)
        }
        guard fileSize == expectedSize else {
            throw .corrupted(
                path: path,
                offset: expectedSize,
                reason: "\(fileSize - expectedSize) bytes after the \(announced)-byte payload"
            )
        }
        return Header(
            identifierCount: idCount,
            payloadLength: Int(announced),
            checksum: integer(UInt32.self, in: bytes, at: 19 + idCount)
        )
    }

    /// The little-endian integer at `offset` of `bytes`.
    static func integer<T: FixedWidthInteger>(_: T.Type, in bytes: [UInt8], at offset: Int) -> T {
        var value: T = 0
        for index in 0..<MemoryLayout<T>.size { value |= T(bytes[offset + index]) << (8 * index) }
        return value
    }

    /// Fills `buffer` from `offset` of the file, stopping early only at its end: the bytes
    /// read, or the `errno` of a failed `pread`.
    static func readFully(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> ReadResult {
        var done = 0
        while done < buffer.count {
            let got = pread(fd, buffer.baseAddress.unsafelyUnwrapped + done, buffer.count - done, off_t(offset + done))
            if got < 0 {
                if errno == EINTR { continue }
                return .failure(errno)
            }
            if got == 0 { break }
            done += got
        }
        return .success(done)
    }

    /// What `readFully` did.
    enum ReadResult {
        case success(Int)
        case failure(Int32)

        /// The bytes read, or the failure as a ``CachePersistenceError``.
        func get(path: String) throws(CachePersistenceError) -> Int {
            switch self {
            case .success(let count): return count
            case .failure(let code): throw .ioFailure(path: path, operation: "read", errno: code)
            }
        }
    }
}
