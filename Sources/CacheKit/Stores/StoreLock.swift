import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The lock that makes a store the only owner of its files: an exclusive `flock` on a lock file,
/// taken without waiting and held from open to close. `DiskStore` and `SQLiteStore` both use it.
package enum StoreLock {
    /// Opens the lock file at `path` (creating it) and locks it: the returned descriptor holds
    /// the lock until ``release(_:)``. Another holder, in this process or another, gives
    /// ``CacheStoreError/locked(path:)`` naming `owner` (the directory or database).
    package static func acquire(_ path: String, owner: String) throws(CacheStoreError) -> Int32 {
        try lock(open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644), path: path, owner: owner)
    }

    /// Locks the directory at `path` itself, as ``acquire(_:owner:)`` locks a file. A directory
    /// that holds files cannot be removed and made anew under its holder, as a lock file can: so
    /// a store that locks its directory too stays its only owner when its lock file is deleted.
    package static func acquireDirectory(_ path: String, owner: String) throws(CacheStoreError) -> Int32 {
        try lock(open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), path: path, owner: owner)
    }

    private static func lock(_ descriptor: Int32, path: String, owner: String) throws(CacheStoreError) -> Int32 {
        guard descriptor >= 0 else { throw .ioFailure(path: path, operation: "open", errno: errno) }
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let error = errno
            if error == EINTR { continue }
            close(descriptor)
            if error == EWOULDBLOCK { throw .locked(path: owner) }
            throw .ioFailure(path: path, operation: "flock", errno: error)
        }
        return descriptor
    }

    /// Unlocks and closes `descriptor`. Unlocked explicitly, not only by closing: a child process
    /// this process is starting shares the descriptor until it executes its program, and would
    /// hold the lock meanwhile.
    package static func release(_ descriptor: Int32) {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
