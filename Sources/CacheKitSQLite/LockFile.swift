// The lock that makes one SQLiteStore the only owner of its database: an exclusive `flock` on a
// side file, held from open to close. A second store, in this process or another, fails to take
// it and reports `locked`. The side file stays on disk: removing it would let two openers lock
// two different files of the same name.
#if SQLite

import CacheKit
import Foundation

/// An exclusive, non-blocking `flock` on a file, released by ``release()`` or when the process ends.
final class LockFile {
    /// The lock file's path.
    let path: String
    /// What the lock guards (the database's path), named by ``CacheStoreError/locked(path:)``.
    let owner: String
    private var descriptor: Int32

    /// Creates `path` if needed and locks it, or throws ``CacheStoreError/locked(path:)`` when
    /// another owner holds it.
    init(path: String, owner: String) throws(CacheStoreError) {
        self.path = path
        self.owner = owner
        descriptor = try StoreLock.acquire(path, owner: owner)
    }

    /// Checks that the file at ``path`` is still the one locked (two system calls). When it was
    /// deleted or replaced, locks the file now there (creating it): the lock is this store's
    /// again, unless a second store took the new file first, which throws
    /// ``CacheStoreError/locked(path:)``.
    func reassert() throws(CacheStoreError) {
        guard descriptor >= 0 else { throw .closed(path: owner) }
        var held = stat()
        var named = stat()
        if fstat(descriptor, &held) == 0, stat(path, &named) == 0, held.st_dev == named.st_dev,
            held.st_ino == named.st_ino
        {
            return
        }
        let fresh = try StoreLock.acquire(path, owner: owner)
        StoreLock.release(descriptor)
        descriptor = fresh
    }

    deinit { release() }

    /// Releases the lock; harmless when already released.
    func release() {
        guard descriptor >= 0 else { return }
        StoreLock.release(descriptor)
        descriptor = -1
    }
}
#endif
