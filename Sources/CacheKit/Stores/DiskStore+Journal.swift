import Foundation
import _CacheKitShims

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One change to a ``DiskStore``'s index, as the journal records it.
enum DiskRecord: Equatable {
    /// `key` now has the entry `info` (replacing any other).
    case set(key: String, info: DiskEntryInfo)
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
/// (2 bytes, 1), flags (2 bytes, 0), the next entry id (8 bytes), CRC-32C of the 12 bytes from
/// the version. Every version keeps these 24 bytes' layout, so that a reader tells a journal of a
/// newer version (its checksum holds) from a damaged one (it does not).
///
/// Record: payload length *n* (4 bytes, 1 to ``maximumPayload``), CRC-32C of the payload
/// (4 bytes), payload (*n* bytes): a type byte, then
/// - 1, set: id (8), value length (8), has deadline (1), deadline as the bits of a `Double` of
///   seconds since 2001 (`Date`'s own reference date, so it reads back exactly) (8), key length (2), key (UTF-8);
/// - 2, remove: id (8);
/// - 3, touch: count *c* (2, at most ``maximumTouches``), *c* ids (8 each);
/// - 4, closed: nothing;
/// - 5, reserve: the id below which entry files may exist (8).
struct DiskJournal {
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

    let paths: DiskPaths
    let faults: DiskFaults
    private(set) var descriptor: Int32
    /// Bytes of valid journal: the next record goes here.
    private(set) var length: Int
    /// Records in the journal, for the decision to compact.
    private(set) var records: Int
    /// An append failed and its bytes could not be cut off: the journal must be rewritten from
    /// the index before anything else is appended.
    var needsRewrite = false

    /// What replaying a journal found: its set records, and which of them are the live entries
    /// in which order. Keys stay in the journal's bytes until the index takes them.
    struct Replay {
        /// The journal's bytes, where the set records' keys lie.
        var bytes: [UInt8] = []
        /// The journal's set records, in its order.
        var sets: [DiskSetRecord] = []
        /// The live entries, least recently used first, as positions in ``sets``; `nil` when
        /// the journal holds no remove or touch record (as a compacted one does), so that the
        /// live entries are ``sets`` in order once a repeated key's earlier records are left out.
        var live: [Int]?
        var nextId: UInt64 = 1
        /// Why a torn last record was cut off, if one was.
        var tornTail: String?
        /// Whether the last record says the store was closed. A journal of no records does not
        /// (`removeAll()` writes one before it moves the entries away): opening it sweeps.
        var closedCleanly = true

        /// The key of `record`, validated as UTF-8 when the journal was read.
        func key(_ record: DiskSetRecord) -> String {
            bytes.withUnsafeBufferPointer { buffer in
                String(
                    decoding: UnsafeBufferPointer(
                        rebasing: buffer[record.keyStart..<(record.keyStart + record.keyLength)]
                    ),
                    as: UTF8.self
                )
            }
        }

        /// The live entries of ``sets`` in order when only sets were journaled: each key's
        /// last record, least recently written first.
        func lastOfEachKey() -> [Int] {
            var last: [String: Int] = [:]
            last.reserveCapacity(sets.count)
            for position in sets.indices { last[key(sets[position])] = position }
            return sets.indices.filter { last[key(sets[$0])] == $0 }
        }
    }

    // MARK: Records

    static func encode(_ record: DiskRecord, into bytes: inout [UInt8]) {
        var payload: [UInt8] = []
        switch record {
        case .set(let key, let info):
            let keyBytes = Array(key.utf8)
            payload.append(1)
            DiskBytes.append(info.id, to: &payload)
            DiskBytes.append(UInt64(info.size), to: &payload)
            payload.append(info.expiresAt == nil ? 0 : 1)
            DiskBytes.append((info.expiresAt?.timeIntervalSinceReferenceDate ?? 0).bitPattern, to: &payload)
            DiskBytes.append(UInt16(keyBytes.count), to: &payload)
            payload += keyBytes
        case .remove(let id):
            payload.append(2)
            DiskBytes.append(id, to: &payload)
        case .touch(let ids):
            payload.append(3)
            DiskBytes.append(UInt16(ids.count), to: &payload)
            for id in ids { DiskBytes.append(id, to: &payload) }
        case .closed:
            payload.append(4)
        case .reserve(let upTo):
            payload.append(5)
            DiskBytes.append(upTo, to: &payload)
        }
        var crc = CRC32C()
        crc.update(payload)
        DiskBytes.append(UInt32(payload.count), to: &bytes)
        DiskBytes.append(crc.value, to: &bytes)
        bytes += payload
    }

    /// The record in `reader`'s remaining bytes, or `nil` if they are not one.
    static func decode(_ reader: inout DiskBytes.Reader) -> DiskRecord? {
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
            return .set(key: key, info: DiskEntryInfo(id: id, size: Int(size), expiresAt: expiresAt))
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
        DiskBytes.append(version, to: &bytes)
        DiskBytes.append(UInt16(0), to: &bytes)
        DiskBytes.append(nextId, to: &bytes)
        var crc = CRC32C()
        crc.update(bytes[8...])
        DiskBytes.append(crc.value, to: &bytes)
        return bytes
    }

    // MARK: Writing

    /// Appends `records` in one write. On failure the journal is as it was (or, if the failed
    /// write's bytes cannot be cut off, ``needsRewrite`` is set).
    mutating func append(_ records: [DiskRecord]) throws(CacheStoreError) {
        guard !records.isEmpty else { return }
        var bytes: [UInt8] = []
        for record in records { Self.encode(record, into: &bytes) }
        do {
            try DiskIO.write(
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
    mutating func rewrite(_ entries: [(key: String, info: DiskEntryInfo)], nextId: UInt64) throws(CacheStoreError) {
        let bytes = try Self.write(entries, nextId: nextId, paths: paths, faults: faults)
        // The old descriptor now names a removed file: nothing more may go there.
        needsRewrite = true
        try DiskIO.syncDirectory(paths.root)
        let replacement = open(paths.journal, O_RDWR | O_CLOEXEC)
        guard replacement >= 0 else { throw .ioFailure(path: paths.journal, operation: "open", errno: errno) }
        close(descriptor)
        descriptor = replacement
        length = bytes.count
        records = entries.count
        needsRewrite = false
    }

    /// Writes a journal listing `entries` (least recently used first) in place of the one in
    /// `paths`, atomically (a new file written, flushed and renamed over it); returns its bytes.
    static func write(
        _ entries: [(key: String, info: DiskEntryInfo)],
        nextId: UInt64,
        paths: DiskPaths,
        faults: DiskFaults
    ) throws(CacheStoreError) -> [UInt8] {
        var bytes = header(nextId: nextId)
        for (key, info) in entries { encode(.set(key: key, info: info), into: &bytes) }
        try DiskIO.writeAtomically(
            bytes,
            to: paths.journal,
            temporary: paths.journalTemporary,
            target: .journal,
            faults: faults
        )
        return bytes
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
        _ paths: DiskPaths,
        faults: DiskFaults
    ) throws(CacheStoreError) -> (DiskJournal, Replay) {
        var descriptor = open(paths.journal, O_RDWR | O_CLOEXEC)
        if descriptor < 0 {
            guard errno == ENOENT else { throw .ioFailure(path: paths.journal, operation: "open", errno: errno) }
            let header = header(nextId: 1)
            try DiskIO.writeAtomically(
                header,
                to: paths.journal,
                temporary: paths.journalTemporary,
                target: .journal,
                faults: faults
            )
            try DiskIO.syncDirectory(paths.root)
            descriptor = open(paths.journal, O_RDWR | O_CLOEXEC)
            guard descriptor >= 0 else { throw .ioFailure(path: paths.journal, operation: "open", errno: errno) }
            let journal = DiskJournal(
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
            // The header first: a file that is not a journal costs no more than its first bytes.
            _ = try checkHeader(
                try DiskIO.read(paths.journal, upTo: min(Int(status.st_size), headerSize)),
                path: paths.journal
            )
            let bytes = try DiskIO.read(paths.journal, upTo: Int(status.st_size))
            var (replay, length, records) = try Self.replay(bytes, path: paths.journal)
            if replay.tornTail != nil, ftruncate(descriptor, off_t(length)) != 0 {
                throw .ioFailure(path: paths.journal, operation: "ftruncate", errno: errno)
            }
            if replay.tornTail != nil { replay.closedCleanly = false }
            let journal = DiskJournal(
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

    /// Opens and replays the journal; one found damaged is rebuilt from the entry files first
    /// (``rebuild(_:faults:byteLimit:damage:)``), its problems added to `problems`. A journal of
    /// a newer format is not damage: it throws, left as it is.
    static func openOrRebuild(
        _ paths: DiskPaths,
        faults: DiskFaults,
        byteLimit: Int,
        problems: inout [CacheStoreProblem]
    ) throws(CacheStoreError) -> (DiskJournal, Replay) {
        // A missing journal beside entry files (deleted, or lost in a crash) is damage too: a new
        // empty journal would give out ids that those files still have.
        var damage: String?
        if access(paths.journal, F_OK) != 0, errno == ENOENT, try !entryIds(paths).isEmpty {
            damage = "the journal is missing"
        } else {
            do throws(CacheStoreError) {
                return try openAndReplay(paths, faults: faults)
            } catch .corrupted(_, let reason) {
                damage = reason
            }
        }
        // A damaged journal is not the end of the store: the entry files name their keys and
        // deadlines, and carry checksums.
        let (found, nextId) = try rebuild(paths, faults: faults, byteLimit: byteLimit, damage: damage ?? "")
        problems += found
        do throws(CacheStoreError) {
            return try openAndReplay(paths, faults: faults)
        } catch .corrupted(_, let reason) {
            // The rebuilt journal lists only what its own replay accepts; should it still not
            // replay, the store starts empty rather than refuse to open (the next open sweeps
            // the files).
            _ = try write([], nextId: nextId, paths: paths, faults: faults)
            problems.append(
                CacheStoreProblem(
                    key: nil,
                    error: .corrupted(path: paths.journal, reason: "\(reason); the store starts empty")
                )
            )
            return try openAndReplay(paths, faults: faults)
        }
    }

    /// The ids of the files in `entries/` that a store names (`<id>` and `<id>.tmp`, the id
    /// written as the number is), and whether each is temporary; none when there is no such
    /// directory.
    ///
    /// - Throws: ``CacheStoreError/ioFailure(path:operation:errno:)`` when the directory exists
    ///   but cannot be listed.
    static func entryIds(_ paths: DiskPaths) throws(CacheStoreError) -> [(id: UInt64, temporary: Bool)] {
        guard let directory = opendir(paths.entries) else {
            if errno == ENOENT { return [] }
            throw .ioFailure(path: paths.entries, operation: "opendir", errno: errno)
        }
        defer { closedir(directory) }
        var ids: [(id: UInt64, temporary: Bool)] = []
        while true {
            errno = 0
            guard let entry = readdir(directory) else {
                if errno != 0 { throw .ioFailure(path: paths.entries, operation: "readdir", errno: errno) }
                return ids
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            let temporary = name.hasSuffix(".tmp")
            let idText = temporary ? String(name.dropLast(4)) : name
            // Ids stay far below 2^63: a name beyond that, or not written as its number is, is
            // not a store's.
            guard let id = UInt64(idText), String(id) == idText, id < 1 << 62 else { continue }
            ids.append((id, temporary))
        }
    }

    /// Rebuilds a journal found damaged or missing (`damage` says how) from the entry files:
    /// keeps the damaged one as `journal.damaged` (a link: the journal stays in place until the
    /// new one replaces it, so a crash meanwhile leaves it to the next open), checks every entry
    /// file whole, keeps each key's newest valid file (the highest id), and writes a journal
    /// listing them, oldest first, with a next id above every file's and the damaged header's.
    /// Files that fail their checks, or whose value exceeds `byteLimit`, are removed and
    /// reported, one problem each; a first problem reports the rebuild itself. Files that a newer
    /// one of the same key replaced are removed silently, as a clean run would have. The caller
    /// then opens the new journal as any other.
    ///
    /// - Complexity: reads every entry file once: O(total bytes of the entries).
    /// - Throws: ``CacheStoreError/ioFailure(path:operation:errno:)`` if the damaged journal
    ///   cannot be kept, the entries cannot be listed or read, or the new journal written.
    static func rebuild(
        _ paths: DiskPaths,
        faults: DiskFaults,
        byteLimit: Int,
        damage: String
    ) throws(CacheStoreError) -> (problems: [CacheStoreProblem], nextId: UInt64) {
        if unlink(paths.journalDamaged) != 0 && errno != ENOENT {
            throw .ioFailure(path: paths.journalDamaged, operation: "unlink", errno: errno)
        }
        if link(paths.journal, paths.journalDamaged) != 0 && errno != ENOENT {
            throw .ioFailure(path: paths.journal, operation: "link", errno: errno)
        }
        // The damaged header's next id, where its checksum holds: ids below it may have been
        // given to files since removed.
        let headerNextId = (try? checkHeader(DiskIO.read(paths.journalDamaged, upTo: headerSize), path: "")) ?? 1
        var problems: [CacheStoreProblem] = []
        var newest: [String: (id: UInt64, info: DiskEntryInfo)] = [:]
        var highestId: UInt64 = 0
        var unusable: [UInt64] = []
        for (id, temporary) in try entryIds(paths) {
            highestId = max(highestId, id)
            guard !temporary else { continue }
            let path = paths.entry(id)
            switch try DiskEntryFile.recover(path, byteLimit: byteLimit) {
            case .failure(let damage):
                unusable.append(id)
                problems.append(CacheStoreProblem(key: nil, error: .corrupted(path: path, reason: damage.reason)))
            case .success(let entry):
                let info = DiskEntryInfo(id: id, size: entry.size, expiresAt: entry.expiresAt)
                if let kept = newest[entry.key], kept.id > id {
                    unusable.append(id)
                } else {
                    if let replaced = newest[entry.key] { unusable.append(replaced.id) }
                    newest[entry.key] = (id, info)
                }
            }
        }
        for id in unusable { unlink(paths.entry(id)) }
        let entries = newest.map { (key: $0.key, info: $0.value.info) }.sorted { $0.info.id < $1.info.id }
        let nextId = max(highestId + 1, min(headerNextId, 1 << 62))
        _ = try write(entries, nextId: nextId, paths: paths, faults: faults)
        try DiskIO.syncDirectory(paths.root)
        let summary =
            "\(damage); the index was rebuilt from the entry files: \(entries.count) kept, "
            + "\(problems.count) damaged removed; the damaged journal is \(paths.journalDamaged)"
        problems.insert(CacheStoreProblem(key: nil, error: .corrupted(path: paths.journal, reason: summary)), at: 0)
        return (problems, nextId)
    }

    /// Checks the header at the start of `bytes` (a journal, or at least its first
    /// ``headerSize`` bytes) and returns the next entry id it records.
    static func checkHeader(_ bytes: [UInt8], path: String) throws(CacheStoreError) -> UInt64 {
        guard bytes.count >= headerSize else {
            throw .corrupted(path: path, reason: "\(bytes.count) bytes, shorter than a journal's header")
        }
        guard bytes.starts(with: magic) else { throw .corrupted(path: path, reason: "not a DiskStore journal") }
        var reader = DiskBytes.Reader(bytes, from: magic.count)
        let version = reader.read(UInt16.self)!
        let flags = reader.read(UInt16.self)!
        let headerNextId = reader.read(UInt64.self)!
        let headerCRC = reader.read(UInt32.self)!
        var check = CRC32C()
        check.update(bytes[8..<20])
        guard check.value == headerCRC else { throw .corrupted(path: path, reason: "its header is damaged") }
        if version > Self.version { throw .newerFormat(path: path, found: Int(version), supported: Int(Self.version)) }
        guard version == Self.version, flags == 0 else { throw .corrupted(path: path, reason: "its header is damaged") }
        return headerNextId
    }

    /// Replays a journal's `bytes`: the live entries, the length of the valid records and how
    /// many there are. Reads every record once, checking it; only a journal holding remove or
    /// touch records has its live entries worked out here (``liveEntries(_:others:)``).
    static func replay(_ bytes: [UInt8], path: String) throws(CacheStoreError) -> (Replay, Int, Int) {
        let headerNextId = try checkHeader(bytes, path: path)
        var replay = Replay()
        replay.nextId = max(headerNextId, 1)
        // A set record takes at least 40 bytes.
        replay.sets.reserveCapacity(bytes.count / 40)
        // The remove and touch records, each with how many set records came before it.
        var others: [(record: DiskRecord, setsBefore: Int)] = []
        var offset = headerSize
        var records = 0
        // `withUnsafeBytes` rethrows untyped errors: the failure is returned instead.
        let failure = bytes.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) -> CacheStoreError? in
            while offset < buffer.count {
                let remaining = buffer.count - offset
                guard remaining >= 8 else {
                    replay.tornTail = "an incomplete record at offset \(offset) was cut off"
                    break
                }
                let length = Int(UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
                let crc = UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self))
                guard (1...maximumPayload).contains(length) else {
                    if buffer[offset...].allSatisfy({ $0 == 0 }) {
                        replay.tornTail = "zeros from offset \(offset) were cut off"
                        break
                    }
                    return .corrupted(path: path, reason: "the record at offset \(offset) has an impossible length")
                }
                guard 8 + length <= remaining else {
                    // A torn append leaves a prefix of one record. A whole record after this one
                    // means its length was damaged instead: cutting there would drop the rest.
                    if let next = wholeRecord(in: buffer, after: offset) {
                        return .corrupted(
                            path: path,
                            reason: "the record at offset \(offset) has a length past the end, "
                                + "and a whole record follows at offset \(next)"
                        )
                    }
                    replay.tornTail = "the record at offset \(offset) was cut short; it was cut off"
                    break
                }
                let payload = UnsafeRawBufferPointer(rebasing: buffer[(offset + 8)..<(offset + 8 + length)])
                guard _cachekit_crc32c(0, payload.baseAddress, payload.count) == crc else {
                    // The last record, unless a damaged length made it end at the file's end.
                    if offset + 8 + length == buffer.count, wholeRecord(in: buffer, after: offset) == nil {
                        replay.tornTail = "the last record, at offset \(offset), failed its checksum; it was cut off"
                        break
                    }
                    return .corrupted(path: path, reason: "the record at offset \(offset) failed its checksum")
                }
                if payload[0] == 1 {
                    guard let set = setRecord(payload, at: offset + 8) else {
                        return .corrupted(path: path, reason: "the record at offset \(offset) is not understood")
                    }
                    replay.sets.append(set)
                    replay.nextId = max(replay.nextId, set.info.id &+ 1)
                    replay.closedCleanly = false
                } else {
                    var payloadReader = DiskBytes.Reader(bytes, from: offset + 8, to: offset + 8 + length)
                    guard let record = decode(&payloadReader) else {
                        return .corrupted(path: path, reason: "the record at offset \(offset) is not understood")
                    }
                    replay.closedCleanly = false
                    switch record {
                    case .remove, .touch: others.append((record, replay.sets.count))
                    case .closed: replay.closedCleanly = true
                    case .reserve(let upTo): replay.nextId = max(replay.nextId, upTo)
                    case .set: break
                    }
                }
                offset += 8 + length
                records += 1
            }
            return nil
        }
        if let failure { throw failure }
        if records == 0 { replay.closedCleanly = false }
        replay.bytes = bytes
        if !others.isEmpty { replay.live = liveEntries(replay, others: others) }
        return (replay, offset, records)
    }

    /// The offset of a whole record (a possible length, its payload inside the journal, and its
    /// checksum right) that starts where the record at `offset` could end, if there is one: within
    /// the largest record after `offset`'s header. O(`maximumPayload`) checks, each O(its length).
    static func wholeRecord(in buffer: UnsafeRawBufferPointer, after offset: Int) -> Int? {
        let first = offset + 8 + 1
        let last = min(offset + 8 + maximumPayload, buffer.count - 8)
        guard first <= last else { return nil }
        for start in first...last {
            let length = Int(UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: start, as: UInt32.self)))
            guard (1...maximumPayload).contains(length), start + 8 + length <= buffer.count else { continue }
            let crc = UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: start + 4, as: UInt32.self))
            if _cachekit_crc32c(0, buffer.baseAddress! + start + 8, length) == crc { return start }
        }
        return nil
    }

    /// The set record whose payload is `payload`, which starts at `start` in the journal, or
    /// `nil` if it is not a valid one.
    private static func setRecord(_ payload: UnsafeRawBufferPointer, at start: Int) -> DiskSetRecord? {
        // Type (1), id (8), value length (8), has deadline (1), deadline (8), key length (2).
        let fixed = 28
        guard payload.count > fixed else { return nil }
        let id = UInt64(littleEndian: payload.loadUnaligned(fromByteOffset: 1, as: UInt64.self))
        let size = UInt64(littleEndian: payload.loadUnaligned(fromByteOffset: 9, as: UInt64.self))
        let hasDeadline = payload[17]
        let seconds = Double(
            bitPattern: UInt64(littleEndian: payload.loadUnaligned(fromByteOffset: 18, as: UInt64.self))
        )
        let keyLength = Int(UInt16(littleEndian: payload.loadUnaligned(fromByteOffset: 26, as: UInt16.self)))
        guard size <= maximumValueLength, hasDeadline <= 1, seconds.isFinite,
            (1...DiskStore.maximumKeyBytes).contains(keyLength), payload.count == fixed + keyLength
        else { return nil }
        let key = UnsafeRawBufferPointer(rebasing: payload[fixed...])
        guard isUTF8(key) else { return nil }
        return DiskSetRecord(
            keyStart: start + fixed,
            keyLength: keyLength,
            info: DiskEntryInfo(
                id: id,
                size: Int(size),
                expiresAt: hasDeadline == 1 ? Date(timeIntervalSinceReferenceDate: seconds) : nil
            )
        )
    }

    /// Whether `bytes` are valid UTF-8: ASCII at once, anything else by the standard library.
    private static func isUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if bytes.allSatisfy({ $0 < 0x80 }) { return true }
        return String(validating: bytes, as: UTF8.self) != nil
    }

    /// The live entries of a journal holding remove or touch records (`others`), least recently
    /// used first, as positions in `replay.sets`: a set makes its key's entry live (its earlier
    /// one dead), a remove kills the entry with its id, a touch makes its entry the most recent.
    static func liveEntries(_ replay: Replay, others: [(record: DiskRecord, setsBefore: Int)]) -> [Int] {
        let sets = replay.sets
        // The stamp of each set record's entry, larger for more recent use; -1 once dead.
        var stamps = [Int](repeating: -1, count: sets.count)
        var current: [String: Int] = [:]
        var byId: [UInt64: Int] = [:]
        current.reserveCapacity(sets.count)
        byId.reserveCapacity(sets.count)
        var stamp = 0
        var next = 0
        func applySets(upTo end: Int) {
            while next < end {
                if let old = current.updateValue(next, forKey: replay.key(sets[next])), stamps[old] >= 0 {
                    stamps[old] = -1
                    byId[sets[old].info.id] = nil
                }
                stamps[next] = stamp
                byId[sets[next].info.id] = next
                stamp += 1
                next += 1
            }
        }
        for (record, setsBefore) in others {
            applySets(upTo: setsBefore)
            switch record {
            case .remove(let id):
                if let position = byId.removeValue(forKey: id) { stamps[position] = -1 }
            case .touch(let ids):
                for id in ids {
                    guard let position = byId[id] else { continue }
                    stamps[position] = stamp
                    stamp += 1
                }
            default:
                break
            }
        }
        applySets(upTo: sets.count)
        // Stamps are distinct and below `stamp`: placing each live entry at its stamp orders them.
        var byStamp = [Int](repeating: -1, count: stamp)
        for (position, last) in stamps.enumerated() where last >= 0 { byStamp[last] = position }
        return byStamp.filter { $0 >= 0 }
    }
}

/// A set record of a replayed journal: where its key lies in the journal's bytes, and its entry.
struct DiskSetRecord {
    var keyStart: Int
    var keyLength: Int
    var info: DiskEntryInfo
}
