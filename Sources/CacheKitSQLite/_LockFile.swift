// The lock that makes one SQLiteStore the only owner of its database: an exclusive `flock` on a
// side file, held from open to close. A second store, in this process or another, fails to take
// it and reports `locked`. The side file stays on disk: removing it would let two openers lock
// two different files of the same name.

import CacheKit
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive, non-blocking `flock` on a file, released by ``release()`` or when the process ends.
final class _LockFile {
    /// The lock file's path.
    let path: String
    private var descriptor: Int32

    /// Creates `path` if needed and locks it, or throws ``CacheStoreError/locked(path:)`` when
    /// another owner holds it.
    init(path: String, owner: String) throws(CacheStoreError) {
        self.path = path
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .ioFailure(path: path, operation: "open", errno: errno) }
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let error = errno
            if error == EINTR { continue }
            close(descriptor)
            if error == EWOULDBLOCK { throw .locked(path: owner) }
            throw .ioFailure(path: path, operation: "flock", errno: error)
        }
        self.descriptor = descriptor
    }

    deinit { release() }

    /// Releases the lock; harmless when already released.
    func release() {
        guard descriptor >= 0 else { return }
        close(descriptor)  // closing the only descriptor releases the flock
        descriptor = -1
    }
}
