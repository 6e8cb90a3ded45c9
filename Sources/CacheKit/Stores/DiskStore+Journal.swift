import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One change to a ``DiskStore``'s index, as the journal records it.
enum _DiskRecord: Equatable {
    /// `key` now has the entry `info` (replacing any other).
    case set(key: String, info: _DiskEntryInfo)
    /// The entry with this id is gone.
    case remove(id: UInt64)
    /// These entries were read, least recent first (the eviction order across restarts).
    case touch(ids: [UInt64])
    /// The store was closed: nothing was left half done.
    case closed
    /// Ids below `upTo` may be given to entry files from now on (so, after a crash, any file
    /// with a lower id that no entry has is a leftover).
    case reserve(upTo: UInt64)
}

/// A ``DiskStore``'s index on disk: an append-only journal of checksummed records, replayed
/// when the store opens and rewritten (compacted) from the index when it holds more than about
/// twice the live entries' records. Integers are little-endian.
///
/// Header (24 bytes): magic `89 43 4B 4A 0D 0A 1A 0A` (`\x89CKJ\r\n\x1A\n`), format version
/// (2 bytes, 1), flags (2 bytes, 0), the next entry id (8 bytes), CRC-32C of the 20 bytes before.
///
/// Record: payload length *n* (4 bytes, 1 to ``maximumPayload``), CRC-32C of the payload
/// (4 bytes), payload (*n* bytes): a type byte, then
/// - 1, set: id (8), value length (8), has deadline (1), deadline as the bits of a `Double` of
///   seconds since 2001 (`Date`'s own reference date, so it reads back exactly) (8), key length (2), key (UTF-8);
/// - 2, remove: id (8);
/// - 3, touch: count *c* (2, at most ``maximumTouches``), *c* ids (8 each);
/// - 4, closed: nothing;
/// - 5, reserve: the id below which entry files may exist (8).
struct _DiskJournal {
    static let magic: [UInt8] = [0x89, 0x43, 0x4B, 0x4A, 0x0D, 0x0A, 0x1A, 0x0A]
    static let version: UInt16 = 1
    static let headerSize = 24
    static let maximumPayload = 8_192
    static let maximumTouches = 256
    /// The largest value length a record may give: far above any real limit, far below overflow.
    static let maximumValueLength: UInt64 = 1 << 48
    /// The largest journal read (1 GiB, some millions of entries at twice their records): a
    /// larger one is taken for damage rather than read into memory.
    static let maximumLength = 1 << 30

    let paths: _DiskPaths
    let faults: _DiskFaults
    private(set) var descriptor: Int32
    /// Bytes of valid journal: the next record goes here.
    private(set) var length: Int
    /// Records in the journal, for the decision to compact.
    private(set) var records: Int
    /// An append failed and its bytes could not be cut off: the journal must be rewritten from
    /// the index before anything else is appended.
    var needsRewrite = false

    /// What replaying a journal found.
    struct Replay {
        /// The live entries, least recently used first.
        var entries: [(key: String, info: _DiskEntryInfo)] = []
        var nextId: UInt64 = 1
        /// Why a torn last record was cut off, if one was.
        var tornTail: String?
        /// Whether the last record says the store was closed.
        var closedCleanly = true
    }

    // MARK: Records

    static func encode(_ record: _DiskRecord, into bytes: inout [UInt8]) {
        var payload: [UInt8] = []
        switch record {
        case .set(let key, let info):
            let keyBytes = Array(key.utf8)
            payload.append(1)
            _DiskBytes.append(info.id, to: &payload)
            _DiskBytes.append(UInt64(info.size), to: &payload)
            payload.append(info.expiresAt == nil ? 0 : 1)
            _DiskBytes.append((info.expiresAt?.timeIntervalSinceReferenceDate ?? 0).bitPattern, to: &payload)
            _DiskBytes.append(UInt16(keyBytes.count), to: &payload)
            payload += keyBytes
        case .remove(let id):
            payload.append(2)
            _DiskBytes.append(id, to: &payload)
        case .touch(let ids):
            payload.append(3)
            _DiskBytes.append(UInt16(ids.count), to: &payload)
            for id in ids { _DiskBytes.append(id, to: &payload) }
        case .closed:
            payload.append(4)
        case .reserve(let upTo):
            payload.append(5)
            _DiskBytes.append(upTo, to: &payload)
        }
        var crc = _CRC32C()
        crc.update(payload)
        _DiskBytes.append(UInt32(payload.count), to: &bytes)
        _DiskBytes.append(crc.value, to: &bytes)
        bytes += payload
    }

    /// The record in `reader`'s remaining bytes, or `nil` if they are not one.
    static func decode(_ reader: inout _DiskBytes.Reader) -> _DiskRecord? {
        switch reader.read(UInt8.self) {
        case 1:
            guard let id = reader.read(UInt64.self), let size = reader.read(UInt64.self), size <= maximumValueLength,
                let hasDeadline = reader.read(UInt8.self), hasDeadline <= 1,
                let deadline = reader.read(UInt64.self), let keyLength = reader.read(UInt16.self),
                (1...DiskStore.maximumKeyBytes).contains(Int(keyLength)), reader.remaining == Int(keyLength),
                let keyBytes = reader.read(count: Int(keyLength)),
                let key = String(validating: keyBytes, as: UTF8.self)
            else { return nil }
            let seconds = Double(bitPattern: deadline)
            guard seconds.isFinite else { return nil }
            let expiresAt = hasDeadline == 1 ? Date(timeIntervalSinceReferenceDate: seconds) : nil
            return .set(key: key, info: _DiskEntryInfo(id: id, size: Int(size), expiresAt: expiresAt))
        case 2:
            guard let id = reader.read(UInt64.self), reader.remaining == 0 else { return nil }
            return .remove(id: id)
        case 3:
            guard let count = reader.read(UInt16.self), Int(count) <= maximumTouches,
                reader.remaining == 8 * Int(count)
            else { return nil }
            return .touch(ids: (0..<Int(count)).map { _ in reader.read(UInt64.self)! })
        case 4:
            return reader.remaining == 0 ? .closed : nil
        case 5:
            guard let upTo = reader.read(UInt64.self), reader.remaining == 0 else { return nil }
            return .reserve(upTo: upTo)
        default:
            return nil
        }
    }

    static func header(nextId: UInt64) -> [UInt8] {
        var bytes = magic
        _DiskBytes.append(version, to: &bytes)
        _DiskBytes.append(UInt16(0), to: &bytes)
        _DiskBytes.append(nextId, to: &bytes)
        var crc = _CRC32C()
        crc.update(bytes[8...])
        _DiskBytes.append(crc.value, to: &bytes)
        return bytes
    }

    // MARK: Writing

    /// Appends `records` in one write. On failure the journal is as it was (or, if the failed
    /// write's bytes cannot be cut off, ``needsRewrite`` is set).
    mutating func append(_ records: [_DiskRecord]) throws(CacheStoreError) {
        guard !records.isEmpty else { return }
        var bytes: [UInt8] = []
        for record in records { Self.encode(record, into: &bytes) }
        do {
            try _DiskIO.write(
                bytes,
                to: descriptor,
                at: length,
                path: paths.journal,
                target: .journal,
                faults: faults
            )
        } catch {
            if ftruncate(descriptor, off_t(length)) != 0 { needsRewrite = true }
            throw error
        }
        length += bytes.count
        self.records += records.count
    }

    /// Replaces the journal with one listing `entries` (least recently used first), atomically
    /// and durably: a new file written, flushed, renamed over the old one, and the directory
    /// flushed. On failure the old journal stays in use.
    mutating func rewrite(_ entries: [(key: String, info: _DiskEntryInfo)], nextId: UInt64) throws(CacheStoreError) {
        var bytes = Self.header(nextId: nextId)
        for (key, info) in entries { Self.encode(.set(key: key, info: info), into: &bytes) }
        try _DiskIO.writeAtomically(
            bytes,
            to: paths.journal,
            temporary: paths.journalTemporary,
            target: .journal,
            faults: faults
        )
        // The old descriptor now names a removed file: nothing more may go there.
        needsRewrite = true
        try _DiskIO.syncDirectory(paths.root)
        let replacement = open(paths.journal, O_RDWR | O_CLOEXEC)
        guard replacement >= 0 else { throw .ioFailure(path: paths.journal, operation: "open", errno: errno) }
        close(descriptor)
        descriptor = replacement
        length = bytes.count
        records = entries.count
        needsRewrite = false
    }

    /// Flushes the journal to the disk.
    func sync() { _ = fsync(descriptor) }

    /// Closes the journal's file.
    mutating func closeFile() {
        guard descriptor >= 0 else { return }
        close(descriptor)
        descriptor = -1
    }

    // MARK: Opening

    /// Opens the journal in `paths`, creating an empty one if there is none, and replays it.
    /// A torn last record is cut off (and said so in the replay); anything else that is not a
    /// journal of this format throws, leaving the file as it is.
    static func openAndReplay(
        _ paths: _DiskPaths,
        faults: _DiskFaults
    ) throws(CacheStoreError) -> (_DiskJournal, Replay) {
        var descriptor = open(paths.journal, O_RDWR | O_CLOEXEC)
        if descriptor < 0 {
            guard errno == ENOENT else { throw .ioFailure(path: paths.journal, operation: "open", errno: errno) }
            let header = header(nextId: 1)
            try _DiskIO.writeAtomically(
                header,
                to: paths.journal,
                temporary: paths.journalTemporary,
                target: .journal,
                faults: faults
            )
            try _DiskIO.syncDirectory(paths.root)
            descriptor = open(paths.journal, O_RDWR | O_CLOEXEC)
            guard descriptor >= 0 else { throw .ioFailure(path: paths.journal, operation: "open", errno: errno) }
            let journal = _DiskJournal(
                paths: paths,
                faults: faults,
                descriptor: descriptor,
                length: header.count,
                records: 0
            )
            return (journal, Replay())
        }
        do throws(CacheStoreError) {
            var status = stat()
            guard fstat(descriptor, &status) == 0 else {
                throw .ioFailure(path: paths.journal, operation: "fstat", errno: errno)
            }
            guard Int(status.st_size) <= maximumLength else {
                throw .corrupted(path: paths.journal, reason: "\(status.st_size) bytes, more than an index can hold")
            }
            let bytes = try _DiskIO.read(paths.journal, upTo: Int(status.st_size))
            var (replay, length, records) = try Self.replay(bytes, path: paths.journal)
            if replay.tornTail != nil, ftruncate(descriptor, off_t(length)) != 0 {
                throw .ioFailure(path: paths.journal, operation: "ftruncate", errno: errno)
            }
            if replay.tornTail != nil { replay.closedCleanly = false }
            let journal = _DiskJournal(
                paths: paths,
                faults: faults,
                descriptor: descriptor,
                length: length,
                records: records
            )
            return (journal, replay)
        } catch {
            close(descriptor)
            throw error
        }
    }

    /// Replays a journal's `bytes`: the live entries, the length of the valid records and how
    /// many there are.
    static func replay(_ bytes: [UInt8], path: String) throws(CacheStoreError) -> (Replay, Int, Int) {
        guard bytes.count >= headerSize else {
            throw .corrupted(path: path, reason: "\(bytes.count) bytes, shorter than a journal's header")
        }
        guard bytes.starts(with: magic) else { throw .corrupted(path: path, reason: "not a DiskStore journal") }
        var reader = _DiskBytes.Reader(bytes, from: magic.count)
        let version = reader.read(UInt16.self)!
        let flags = reader.read(UInt16.self)!
        let headerNextId = reader.read(UInt64.self)!
        let headerCRC = reader.read(UInt32.self)!
        if version > Self.version { throw .newerFormat(path: path, found: Int(version), supported: Int(Self.version)) }
        var check = _CRC32C()
        check.update(bytes[8..<20])
        guard version == Self.version, flags == 0, check.value == headerCRC else {
            throw .corrupted(path: path, reason: "its header is damaged")
        }

        var replay = Replay()
        replay.nextId = max(headerNextId, 1)
        var live: [String: (info: _DiskEntryInfo, stamp: Int)] = [:]
        var keys: [UInt64: String] = [:]
        var stamp = 0
        var offset = headerSize
        var records = 0
        while offset < bytes.count {
            let remaining = bytes.count - offset
            var reader = _DiskBytes.Reader(bytes, from: offset)
            guard remaining >= 8, let length = reader.read(UInt32.self).map(Int.init),
                let crc = reader.read(UInt32.self)
            else {
                replay.tornTail = "an incomplete record at offset \(offset) was cut off"
                break
            }
            guard (1...maximumPayload).contains(length) else {
                if bytes[offset...].allSatisfy({ $0 == 0 }) {
                    replay.tornTail = "zeros from offset \(offset) were cut off"
                    break
                }
                throw .corrupted(path: path, reason: "the record at offset \(offset) has an impossible length")
            }
            guard 8 + length <= remaining else {
                replay.tornTail = "the record at offset \(offset) was cut short; it was cut off"
                break
            }
            var check = _CRC32C()
            check.update(bytes[(offset + 8)..<(offset + 8 + length)])
            guard check.value == crc else {
                if offset + 8 + length == bytes.count {
                    replay.tornTail = "the last record, at offset \(offset), failed its checksum; it was cut off"
                    break
                }
                throw .corrupted(path: path, reason: "the record at offset \(offset) failed its checksum")
            }
            var payload = _DiskBytes.Reader(bytes, from: offset + 8, to: offset + 8 + length)
            guard let record = decode(&payload) else {
                throw .corrupted(path: path, reason: "the record at offset \(offset) is not understood")
            }
            replay.closedCleanly = false
            switch record {
            case .set(let key, let info):
                if let old = live[key] { keys[old.info.id] = nil }
                live[key] = (info, stamp)
                keys[info.id] = key
                stamp += 1
                replay.nextId = max(replay.nextId, info.id &+ 1)
            case .remove(let id):
                if let key = keys.removeValue(forKey: id) { live[key] = nil }
            case .touch(let ids):
                for id in ids {
                    guard let key = keys[id] else { continue }
                    live[key]!.stamp = stamp
                    stamp += 1
                }
            case .closed:
                replay.closedCleanly = true
            case .reserve(let upTo):
                replay.nextId = max(replay.nextId, upTo)
            }
            offset += 8 + length
            records += 1
        }
        replay.entries = live.sorted { $0.value.stamp < $1.value.stamp }.map { ($0.key, $0.value.info) }
        return (replay, offset, records)
    }
}
