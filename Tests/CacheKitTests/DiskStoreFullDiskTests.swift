import CacheKit
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A tmpfs of a few pages mounted on a new temporary directory: a file system that really fills.
final class SmallFileSystem: Sendable {
    let url: URL

    /// Mounts a tmpfs of `bytes` (rounded up to pages) on a new directory; `nil` with the reason
    /// when that is not possible (mounting needs root, or `CAP_SYS_ADMIN`).
    static func mount(bytes: Int) -> Result<SmallFileSystem, MountFailure> {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("DiskStoreFull-\(UUID().uuidString)")
        guard mkdir(url.path, 0o755) == 0 else {
            return .failure(MountFailure(description: "mkdir \(url.path): \(String(cString: strerror(errno)))"))
        }
        guard Glibc.mount("tmpfs", url.path, "tmpfs", 0, "size=\(bytes),mode=0755") == 0 else {
            let reason = String(cString: strerror(errno))
            rmdir(url.path)
            return .failure(MountFailure(description: "mount -t tmpfs on \(url.path): \(reason)"))
        }
        return .success(SmallFileSystem(url: url))
    }

    private init(url: URL) { self.url = url }

    /// Unmounts the file system (detaching it if a file is still open there) and removes the
    /// directory it was mounted on.
    func unmount() {
        if umount2(url.path, 0) != 0 { umount2(url.path, Int32(MNT_DETACH)) }
        rmdir(url.path)
    }

    struct MountFailure: Error, CustomStringConvertible {
        var description: String
    }

    /// Whether a tmpfs can be mounted here, or why not.
    static let probe: MountFailure? = {
        switch mount(bytes: 4096) {
        case .success(let fileSystem):
            fileSystem.unmount()
            return nil
        case .failure(let failure):
            return failure
        }
    }()
}

/// A DiskStore on a file system that fills up: the injected-ENOSPC tests in
/// ``DiskStoreDamageTests`` cover each failing write's logic; this one has the kernel refuse the
/// writes wherever they happen to land (an entry file, its temporary file, the journal).
@Suite(
    "DiskStore on a full disk",
    .enabled(
        if: SmallFileSystem.probe == nil,
        Comment(
            rawValue: "cannot mount a tmpfs (needs root or CAP_SYS_ADMIN: "
                + "\(SmallFileSystem.probe?.description ?? "")); the injected-ENOSPC tests cover the logic"
        )
    )
)
struct DiskStoreFullDiskTests {
    let clock = ManualClock()
    let problems = ProblemLog()

    /// Whether `error` is an I/O failure for a full disk, in the store's directory.
    static func isFullDisk(_ error: any Error, in directory: URL) -> Bool {
        guard case .ioFailure(let path, _, let number) = error as? CacheStoreError else { return false }
        return number == ENOSPC && path.hasPrefix(directory.standardizedFileURL.path)
            && "\(error)".contains(String(cString: strerror(ENOSPC)))
    }

    @Test("writes fail with ENOSPC once the disk is full; nothing stored is lost, and removals make room again")
    func fillsUp() async throws {
        let fileSystem = try SmallFileSystem.mount(bytes: 256 << 10).get()
        defer { fileSystem.unmount() }
        let directory = fileSystem.url.appendingPathComponent("store")
        let byteLimit = 1 << 20  // more than the file system holds: the disk fills first
        var store = try await DiskStore(
            directory: directory,
            byteLimit: byteLimit,
            clock: .manual(clock),
            problemHandler: problems.handler
        )
        var stored: [String: Data] = [:]
        func expectAllStored(_ store: DiskStore, _ context: String) async throws {
            for (key, value) in stored {
                #expect(try await store.entry(forKey: key)?.value == value, "\(context): \(key)")
            }
            let usage = try await store.usage()
            #expect(usage == CacheStoreUsage(count: stored.count, bytes: stored.values.reduce(0) { $0 + $1.count }))
            #expect(usage.bytes <= byteLimit, "\(context)")
        }

        // Values of one and two pages, until the file system refuses one.
        let sizes = [1_000, 3_000, 6_000]
        var failures = 0
        var next = 0
        while failures == 0 {
            let key = "k\(next)"
            let value = testValue(key, next, size: sizes[next % sizes.count])
            do {
                try await store.setEntry(value, forKey: key, expiresAt: nil)
                stored[key] = value
            } catch {
                #expect(Self.isFullDisk(error, in: directory), "\(error)")
                failures += 1
            }
            next += 1
            try #require(next < 1_000, "a 256 KiB file system never filled up")
        }
        #expect(stored.count >= 10, "\(stored.count) entries fit")

        // More writes, new keys and replacements alike, fail the same way and change nothing.
        for attempt in 0..<6 {
            let key = attempt.isMultiple(of: 2) ? "late\(attempt)" : "k\(attempt)"
            await #expect {
                try await store.setEntry(testValue(key, 1_000 + attempt, size: 6_000), forKey: key, expiresAt: nil)
            } throws: { error in
                Self.isFullDisk(error, in: directory)
            }
        }
        try await expectAllStored(store, "full")

        // Removing entries frees their pages: writes succeed again.
        let removed = stored.keys.sorted().prefix(stored.count / 2)
        for key in removed {
            #expect(try await store.removeEntry(forKey: key), "\(key)")
            stored[key] = nil
        }
        for i in 0..<3 {
            let key = "after\(i)"
            let value = testValue(key, i, size: 1_000)
            try await store.setEntry(value, forKey: key, expiresAt: nil)
            stored[key] = value
        }
        try await expectAllStored(store, "after removals")
        try await store.close()

        store = try await DiskStore(
            directory: directory,
            byteLimit: byteLimit,
            clock: .manual(clock),
            problemHandler: problems.handler
        )
        try await expectAllStored(store, "reopened")
        try await store.close()
        #expect(problems.all.isEmpty, "\(problems.all)")
    }
}
