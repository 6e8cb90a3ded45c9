import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The cache file format and the system calls that read and atomically replace it.
///
/// Layout (integers little-endian):
///
/// | offset    | size | field                                                      |
/// |-----------|------|------------------------------------------------------------|
/// | 0         | 8    | magic `89 43 4B 43 0D 0A 1A 0A` (`\x89CKC\r\n\x1A\n`)      |
/// | 8         | 2    | format version (1)                                         |
/// | 10        | 1    | serializer identifier length *n* (1–255)                   |
/// | 11        | *n*  | serializer identifier, UTF-8                               |
/// | 11 + *n*  | 8    | payload length *p*                                         |
/// | 19 + *n*  | 4    | CRC32 (IEEE) of bytes 8 ..< 19 + *n* followed by the payload |
/// | 23 + *n*  | *p*  | payload, as the serializer wrote it                        |
enum CacheFile {
    static let magic: [UInt8] = [0x89, 0x43, 0x4B, 0x43, 0x0D, 0x0A, 0x1A, 0x0A]
    static let version: UInt16 = 1

    // MARK: Format

    /// The file's bytes for `payload` written by the serializer named `identifier`.
    static func wrap(_ payload: Data, identifier: String) -> [UInt8] {
        let id = Array(identifier.utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(23 + id.count + payload.count)
        bytes += magic
        append(version, to: &bytes)
        bytes.append(UInt8(id.count))
        bytes += id
        append(UInt64(payload.count), to: &bytes)
        var crc = CRC32()
        crc.update(bytes[8...])
        payload.withUnsafeBytes { crc.update($0) }
        append(crc.value, to: &bytes)
        bytes += payload
        return bytes
    }

    private static func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
    }

    // MARK: System calls

    /// A temporary file written and flushed, still open, and locked (`flock`) until
    /// ``replace(_:with:)`` or ``discard(_:)`` closes it: the lock tells cleaners in any process,
    /// in any PID namespace, that the save is in flight (see ``removeStaleTemporaries(beside:)``).
    struct Temporary: Sendable {
        let path: String
        let descriptor: Int32
    }

    /// Writes `bytes` to a new temporary file beside `path`, with mode `permissions`, and flushes
    /// it to the disk. The file is locked from the moment it is created until it is renamed or
    /// removed.
    static func writeTemporary(
        _ bytes: [UInt8],
        beside path: String,
        permissions: Int
    ) throws(CachePersistenceError) -> Temporary {
        let mode = mode_t(permissions)
        var temporary: String
        var fd: Int32
        var attempts = 0
        while true {
            temporary = temporaryPath(beside: path)
            fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
            guard fd >= 0 else { throw .ioFailure(path: temporary, operation: "open", errno: errno) }
            // At once, before any write. (A file system without `flock` refuses it: cleaners
            // there go by the process id.)
            while flock(fd, LOCK_EX) != 0 && errno == EINTR {}
            // A cleaner may have locked the new file between open and flock (another process
            // cleaning in a loop does so within milliseconds); it unlinks the file before it
            // unlocks it, so once the lock is ours a link count of 0 says so,
            // and the save starts again under a new name.
            var status = stat()
            guard fstat(fd, &status) == 0, status.st_nlink == 0 else { break }
            close(fd)
            attempts += 1
            if attempts == 100 { throw .ioFailure(path: temporary, operation: "open", errno: ENOENT) }
        }
        var failure: CachePersistenceError?
        if fchmod(fd, mode) != 0 {  // the umask may have cleared bits of `mode` in open
            failure = .ioFailure(path: temporary, operation: "fchmod", errno: errno)
        }
        var written = 0
        while failure == nil, written < bytes.count {
            let result = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if result < 0 {
                if errno == EINTR { continue }
                failure = .ioFailure(path: temporary, operation: "write", errno: errno)
            } else {
                written += result
            }
        }
        if failure == nil, flush(fd, .fileSync, beside: path) != 0 {
            failure = .ioFailure(path: temporary, operation: "fsync", errno: errno)
        }
        let file = Temporary(path: temporary, descriptor: fd)
        if let failure {
            discard(file)
            throw failure
        }
        return file
    }

    /// Renames `temporary` over `path` (atomic: a reader sees the old file or the new one), then
    /// closes it, which releases its lock. On failure it leaves `temporary` as it was, for the
    /// caller to ``discard(_:)``.
    static func replace(_ path: String, with temporary: Temporary) throws(CachePersistenceError) {
        guard rename(temporary.path, path) == 0 else {
            throw .ioFailure(path: path, operation: "rename", errno: errno)
        }
        DurabilitySteps.note(.rename, beside: path)
        // The data was flushed before the rename; a failing close loses nothing that was written.
        release(temporary)
    }

    /// Removes `temporary`, then unlocks and closes it: no cleaner ever finds it named and
    /// unlocked.
    static func discard(_ temporary: Temporary) {
        unlink(temporary.path)
        release(temporary)
    }

    /// Unlocks, then closes. Unlocked explicitly, not only by closing: a child process that
    /// another thread is starting shares the descriptor until it executes its program, and would
    /// hold the lock meanwhile.
    private static func release(_ temporary: Temporary) {
        flock(temporary.descriptor, LOCK_UN)
        close(temporary.descriptor)
    }

    /// Flushes the directory holding `path`, so that a rename in it survives a power loss.
    static func syncDirectory(of path: String) throws(CachePersistenceError) {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw .ioFailure(path: directory, operation: "open", errno: errno) }
        defer { close(fd) }
        guard flush(fd, .directorySync, beside: path) == 0 else {
            throw .ioFailure(path: directory, operation: "fsync", errno: errno)
        }
    }

    /// `fsync(2)` of `descriptor`, noted as `step` of a save to `path` (see ``DurabilitySteps``).
    private static func flush(_ descriptor: Int32, _ step: DurabilitySteps.Step, beside path: String) -> Int32 {
        DurabilitySteps.note(step, beside: path)
        return fsync(descriptor)
    }

    /// The steps that make a save durable, in the order a save takes them, noted for tests that
    /// watch a directory: that a save flushes its temporary file before the rename and the
    /// directory after it leaves no trace in the file system. Nothing is noted while no one
    /// watches, which is one relaxed atomic load per step.
    enum DurabilitySteps {
        enum Step: Equatable, Sendable {
            /// `fsync` of the temporary file, once written.
            case fileSync
            /// The temporary file renamed over the file.
            case rename
            /// `fsync` of the directory holding the file.
            case directorySync
        }

        private static let watchers = Atomic<Int>(0)
        private static let noted = _Mutex<[String: [Step]]>([:])

        /// Notes `step` of a save to `path`, if a test watches `path`'s directory.
        static func note(_ step: Step, beside path: String) {
            guard watchers.load(ordering: .relaxed) > 0 else { return }
            let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
            noted.withLock { noted in noted[directory]?.append(step) }
        }

        /// Runs `body`, and returns the steps that saves to files in `path`'s directory took
        /// meanwhile, in order.
        static func watching<E: Error>(
            beside path: String,
            _ body: () throws(E) -> Void
        ) throws(E) -> [Step] {
            let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
            noted.withLock { noted in noted[directory] = [] }
            watchers.wrappingAdd(1, ordering: .relaxed)
            defer {
                watchers.wrappingSubtract(1, ordering: .relaxed)
                noted.withLock { noted in _ = noted.removeValue(forKey: directory) }
            }
            try body()
            return noted.withLock { noted in noted[directory] ?? [] }
        }
    }

    /// Whether something exists at `path`.
    static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// This process's mark in temporary names, random per process: a process that got the pid
    /// of one killed while saving (in a container, every first process is pid 1) can tell that
    /// process's leftovers from its own saves in flight.
    static let processToken = String(UInt64.random(in: 1...UInt64.max), radix: 16)

    /// Numbers this process's temporary files, across all its `CachePersistence` objects (two
    /// may save beside the same file).
    static let temporaryCounter = Atomic<UInt64>(0)

    /// A new temporary file's name beside `path`: hidden, tagged with the process and a number
    /// no other save of this process uses, `.<name>.<pid>-<process token>-<number>.tmp`.
    static func temporaryPath(beside path: String) -> String {
        let url = URL(fileURLWithPath: path)
        let number = temporaryCounter.wrappingAdd(1, ordering: .relaxed).newValue
        return url.deletingLastPathComponent().appendingPathComponent(
            "\(temporaryPrefix(for: url.lastPathComponent))\(getpid())-\(processToken)-\(number).tmp"
        )
        .path
    }

    /// The start of the temporary names beside a file named `name`: `.<name>.`, with a long name
    /// cut short, so that the whole temporary name stays within the 255 bytes a file name may
    /// take (the tag after it takes up to 52): a name of more than 190 bytes of UTF-8 keeps its
    /// first characters up to 170 bytes, then `~` and a 64-bit FNV-1a hash of the whole name in
    /// hex (the same in every process, as `removeStaleTemporaries` needs).
    static func temporaryPrefix(for name: String) -> String {
        guard name.utf8.count > 190 else { return ".\(name)." }
        var kept = ""
        var bytes = 0
        for character in name {
            let size = character.utf8.count
            guard bytes + size <= 170 else { break }
            kept.append(character)
            bytes += size
        }
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in name.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
        return ".\(kept)~\(String(hash, radix: 16))."
    }

    /// Removes the temporary files beside `path` that no save is writing any more (left by a
    /// process killed while saving), never this process's own.
    ///
    /// A save holds a lock (`flock`) on its temporary file from its creation to its rename, and
    /// the kernel releases the lock when the process ends, however it ends. So a temporary file
    /// that can be locked here is a leftover, whichever process, container or PID namespace
    /// wrote it; one that cannot is a save in flight and stays. So does anything this process
    /// may not open (another user's save: its process id may mean nothing here) and anything
    /// that is not a regular file (a symbolic link or a FIFO with such a name is not followed or
    /// opened for waiting). On a file system without `flock` the process id in the name decides:
    /// a leftover if no process has that id, or if it is this process's id under an earlier
    /// process's token. (The process id alone cannot decide where `flock` works: a cleaner in
    /// another PID namespace would take a running save's file for a dead process's.) Names
    /// without a process token, `<pid>-<number>`, which unlocking saves wrote, go by the process
    /// id.
    static func removeStaleTemporaries(beside path: String) {
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent()
        let prefix = temporaryPrefix(for: url.lastPathComponent)
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return }
        for name in names where name.hasPrefix(prefix) && name.hasSuffix(".tmp") {
            let parts = name.dropFirst(prefix.count).dropLast(4).split(separator: "-", omittingEmptySubsequences: false)
            guard (2...3).contains(parts.count), let pid = pid_t(parts[0]), pid > 0, UInt64(parts.last!) != nil
            else { continue }
            let ours = pid == getpid() && parts.count == 3 && parts[1] == processToken
            if ours { continue }  // this process's saves in flight
            let file = directory.appendingPathComponent(name).path
            // By the process id: an earlier process that had this id, or one that is gone.
            func writerIsGone() -> Bool { pid == getpid() || (kill(pid, 0) != 0 && errno == ESRCH) }
            if parts.count == 2 {  // a version that never locked: the process id decides
                if writerIsGone() { unlink(file) }
                continue
            }
            switch lockState(of: file) {
            case .locked, .gone:
                continue
            case .unlocked(let descriptor):
                // Removed while holding the lock, then unlocked.
                unlink(file)
                flock(descriptor, LOCK_UN)
                close(descriptor)
            case .unknown:
                if writerIsGone() { unlink(file) }
            }
        }
    }

    private enum LockState {
        /// A save holds it, or it is not for this process to judge (not a regular file, not
        /// openable by this process): left alone.
        case locked
        /// No one holds it; this descriptor holds it now (shared: a save's exclusive lock
        /// conflicts with it, and on NFS, where `flock` is a byte-range lock, a shared one
        /// needs no write access).
        case unlocked(Int32)
        /// Gone meanwhile.
        case gone
        /// The file system has no `flock`: the process id decides.
        case unknown
    }

    /// Tries to take `file`'s lock without waiting. Opens it without following a symbolic
    /// link and without blocking (a FIFO named like a temporary file would block an open), and
    /// judges regular files only.
    private static func lockState(of file: String) -> LockState {
        let fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else { return errno == ENOENT ? .gone : .locked }
        var status = stat()
        guard fstat(fd, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            return .locked
        }
        while true {
            if flock(fd, LOCK_SH | LOCK_NB) == 0 { return .unlocked(fd) }
            let error = errno
            if error == EINTR { continue }
            close(fd)
            return error == EWOULDBLOCK ? .locked : .unknown
        }
    }
}

/// CRC-32 (IEEE 802.3, the polynomial zlib and PNG use), one table lookup per byte.
struct CRC32 {
    private static let table: [UInt32] = (0..<256).map { index in
        var crc = UInt32(index)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        return crc
    }

    private var state: UInt32 = 0xFFFF_FFFF

    /// The checksum of everything passed to `update` so far.
    var value: UInt32 { ~state }

    mutating func update<S: Sequence>(_ bytes: S) where S.Element == UInt8 {
        Self.table.withUnsafeBufferPointer { table in
            for byte in bytes { state = table[Int(UInt8(truncatingIfNeeded: state) ^ byte)] ^ (state >> 8) }
        }
    }
}
