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
    private var descriptor: Int32

    /// Creates `path` if needed and locks it, or throws ``CacheStoreError/locked(path:)`` when
    /// another owner holds it.
    init(path: String, owner: String) throws(CacheStoreError) {
        self.path = path
        descriptor = try StoreLock.acquire(path, owner: owner)
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
