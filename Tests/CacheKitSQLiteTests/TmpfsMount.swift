#if SQLite
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A tmpfs of a fixed size mounted on a fresh temporary directory: a real file system that
/// fills up. Mounting needs Linux and root (`CAP_SYS_ADMIN`).
final class TmpfsMount {
    /// The mounted directory.
    let url: URL
    private var mounted = true

    /// Mounts a tmpfs of `bytes` on a new temporary directory; `nil` when the mount is refused.
    init?(bytes: Int) {
        #if os(Linux)
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("CacheKitSQLite-tmpfs-\(UUID())")
        guard (try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)) != nil else {
            return nil
        }
        guard mount("tmpfs", url.path, "tmpfs", 0, "size=\(bytes),mode=0700") == 0 else {
            rmdir(url.path)
            return nil
        }
        self.url = url
        #else
        return nil
        #endif
    }

    deinit { unmount() }

    /// Whether this process can mount a tmpfs: it mounts and unmounts a small one once.
    static let isAvailable: Bool = TmpfsMount(bytes: 64 << 10) != nil

    /// Detaches the file system (even while files on it are open) and removes the directory.
    /// Harmless when already unmounted.
    func unmount() {
        guard mounted else { return }
        mounted = false
        #if os(Linux)
        umount2(url.path, Int32(MNT_DETACH))
        rmdir(url.path)
        #endif
    }

    /// The bytes free for files on the file system.
    var freeBytes: Int {
        var info = statvfs()
        guard statvfs(url.path, &info) == 0 else { return 0 }
        return Int(info.f_bavail) * Int(info.f_frsize)
    }
}
#endif
