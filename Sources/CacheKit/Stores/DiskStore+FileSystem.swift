import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Where a ``DiskStore`` keeps its files, all inside the directory it owns:
/// `lock` (held with `flock` while the store is open), `journal` (the index),
/// `entries/<id>` (one file per entry), `removing-<n>` (entries of a `removeAll()` being
/// deleted in the background) and `journal.damaged` (the last journal found damaged).
struct DiskPaths: Sendable {
    let root: String
    let lock: String
    let journal: String
    let journalTemporary: String
    /// Where a damaged journal is moved when the index is rebuilt from the entry files (the
    /// last one only).
    let journalDamaged: String
    let entries: String

    init(directory: URL) {
        root = directory.standardizedFileURL.path
        lock = root + "/lock"
        journal = root + "/journal"
        journalTemporary = root + "/journal.tmp"
        journalDamaged = root + "/journal.damaged"
        entries = root + "/entries"
    }

    func entry(_ id: UInt64) -> String { "\(entries)/\(id)" }
    func entryTemporary(_ id: UInt64) -> String { "\(entries)/\(id).tmp" }

    static let removingPrefix = "removing-"
}

/// Which file a write goes to, for the fault seam in the package's tests.
package enum DiskWriteTarget: Int, Sendable, CaseIterable {
    /// An entry file.
    case entryFile
    /// The journal.
    case journal
}

/// Makes the writes to one kind of file fail with an error number, standing in for a full disk
/// or a failing device in the package's tests. Not API.
package final class DiskFaults: Sendable {
    private let errnos = _Mutex<[Int32?]>([nil, nil])
    private let flushes = _Mutex<[Int]>([0, 0])

    init() {}

    /// Makes every later write to `target` fail with `error` (`nil`: succeed again).
    package func failWrites(to target: DiskWriteTarget, with error: Int32?) {
        errnos.withLock { $0[target.rawValue] = error }
    }

    func failure(for target: DiskWriteTarget) -> Int32? {
        errnos.withLock { $0[target.rawValue] }
    }

    /// How many files written to `target` were flushed (`fsync`) before their rename.
    package func flushCount(of target: DiskWriteTarget) -> Int {
        flushes.withLock { $0[target.rawValue] }
    }

    func noteFlush(of target: DiskWriteTarget) {
        flushes.withLock { $0[target.rawValue] += 1 }
    }
}

/// The system calls a ``DiskStore`` makes, each failure turned into a ``CacheStoreError``.
enum DiskIO {
    /// Writes all of `bytes` to `descriptor` at `offset`, retrying short writes.
    static func write(
        _ bytes: [UInt8],
        to descriptor: Int32,
        at offset: Int,
        path: String,
        target: DiskWriteTarget,
        faults: DiskFaults
    ) throws(CacheStoreError) {
        if let error = faults.failure(for: target) { throw .ioFailure(path: path, operation: "write", errno: error) }
        var written = 0
        while written < bytes.count {
            let result = bytes.withUnsafeBytes { buffer in
                pwrite(descriptor, buffer.baseAddress! + written, buffer.count - written, off_t(offset + written))
            }
            if result < 0 {
                if errno == EINTR { continue }
                throw .ioFailure(path: path, operation: "write", errno: errno)
            }
            written += result
        }
    }

    /// Creates `path` as a new file holding `bytes`, atomically: a temporary file written and,
    /// when `flush` is set, flushed (`fsync`), then renamed to `path`. Nothing is left at
    /// `temporary` on failure.
    static func writeAtomically(
        _ bytes: [UInt8],
        to path: String,
        temporary: String,
        target: DiskWriteTarget,
        faults: DiskFaults,
        flush: Bool = true
    ) throws(CacheStoreError) {
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .ioFailure(path: temporary, operation: "open", errno: errno) }
        do throws(CacheStoreError) {
            try write(bytes, to: descriptor, at: 0, path: temporary, target: target, faults: faults)
            if flush {
                faults.noteFlush(of: target)
                guard fsync(descriptor) == 0 else {
                    throw .ioFailure(path: temporary, operation: "fsync", errno: errno)
                }
            }
            guard rename(temporary, path) == 0 else {
                throw .ioFailure(path: path, operation: "rename", errno: errno)
            }
            close(descriptor)
        } catch {
            close(descriptor)
            unlink(temporary)
            throw error
        }
    }

    /// Flushes the directory at `path`, so that renames in it survive a power loss.
    static func syncDirectory(_ path: String) throws(CacheStoreError) {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .ioFailure(path: path, operation: "open", errno: errno) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw .ioFailure(path: path, operation: "fsync", errno: errno) }
    }

    /// Creates the directory at `path` and any missing parents; an existing one is fine.
    static func makeDirectory(_ path: String) throws(CacheStoreError) {
        if mkdir(path, 0o755) == 0 { return }
        let error = errno
        if error == EEXIST {
            var status = stat()
            guard stat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR else {
                throw .ioFailure(path: path, operation: "mkdir", errno: ENOTDIR)
            }
            return
        }
        let parent = (path as NSString).deletingLastPathComponent
        guard error == ENOENT, !parent.isEmpty, parent != path else {
            throw .ioFailure(path: path, operation: "mkdir", errno: error)
        }
        try makeDirectory(parent)
        guard mkdir(path, 0o755) == 0 || errno == EEXIST else {
            throw .ioFailure(path: path, operation: "mkdir", errno: errno)
        }
    }

    /// Reads up to `count` bytes of the file at `path` from its start: fewer only at its end.
    /// Opens without blocking, and refuses anything but a regular file (`EINVAL` from `open`):
    /// opening a FIFO for reading would wait for a writer.
    static func read(_ path: String, upTo count: Int) throws(CacheStoreError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { throw .ioFailure(path: path, operation: "open", errno: errno) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw .ioFailure(path: path, operation: "fstat", errno: errno) }
        guard status.st_mode & S_IFMT == S_IFREG else { throw .ioFailure(path: path, operation: "open", errno: EINVAL) }
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let result = bytes.withUnsafeMutableBytes { buffer in
                pread(descriptor, buffer.baseAddress! + filled, count - filled, off_t(filled))
            }
            if result < 0 {
                if errno == EINTR { continue }
                throw .ioFailure(path: path, operation: "read", errno: errno)
            }
            if result == 0 { break }
            filled += result
        }
        bytes.removeLast(count - filled)
        return bytes
    }

    /// Reads from `descriptor` at `offset` until `buffer` is full or the file ends: the bytes
    /// read, or minus the error number.
    static func readFully(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Int {
        var filled = 0
        while filled < buffer.count {
            let result = pread(descriptor, buffer.baseAddress! + filled, buffer.count - filled, off_t(offset + filled))
            if result < 0 {
                if errno == EINTR { continue }
                return -Int(errno)
            }
            if result == 0 { break }
            filled += result
        }
        return filled
    }

    /// Removes the directory at `path` and everything in it.
    static func removeTree(_ path: String) throws(CacheStoreError) {
        do {
            try FileManager.default.removeItem(atPath: path)
        } catch {
            let posix = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError
            let code = posix?.domain == NSPOSIXErrorDomain ? Int32(posix!.code) : EIO
            throw .ioFailure(path: path, operation: "remove", errno: code)
        }
    }

    /// Closes `descriptor`.
    static func closeDescriptor(_ descriptor: Int32) { close(descriptor) }

    /// The names in the directory at `path` (none if it cannot be read).
    static func names(in path: String) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
    }
}
