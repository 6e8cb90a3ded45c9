import CacheKit
import Dispatch
import Foundation
import FuzzDriver

/// Runs `body` on the concurrency pool and waits for it: libFuzzer calls the target on its own
/// thread, the store's API is asynchronous.
func blocking(_ body: @escaping @Sendable () async -> Void) {
    let done = DispatchSemaphore(value: 0)
    Task {
        await body()
        done.signal()
    }
    done.wait()
}

let root = FileManager.default.temporaryDirectory
    .appendingPathComponent("cachekit-diskstore-fuzz-\(ProcessInfo.processInfo.processIdentifier)")

/// A store of three entries, closed, in a fresh `root`.
func freshStore() async -> URL {
    try? FileManager.default.removeItem(at: root)
    guard let store = try? await DiskStore(directory: root, byteLimit: 1 << 20) else { return root }
    for key in ["a", "b", "c"] {
        try? await store.setEntry(Data(key.utf8), forKey: key, expiresAt: nil)
    }
    try? await store.close()
    return root
}

/// One input: its first byte chooses what the rest replaces in a store of three entries: the
/// journal (bit 0 clear), or the entry file of `b` (bit 0 set), with the journal kept (bit 1
/// clear) or deleted, so that the index is rebuilt from the files (bit 1 set). The store must
/// open; every read must be a miss or the value written.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let mode = data[0]
    let rest = Data(UnsafeBufferPointer(start: data + 1, count: size - 1))
    blocking {
        let directory = await freshStore()
        let journal = directory.appendingPathComponent("journal")
        if mode & 1 == 0 {
            try? rest.write(to: journal)
        } else {
            // Entry ids are given in order: `b` is the second.
            try? rest.write(to: directory.appendingPathComponent("entries/2"))
            if mode & 2 != 0 { try? FileManager.default.removeItem(at: journal) }
        }
        let store: DiskStore
        do {
            store = try await DiskStore(directory: directory, byteLimit: 1 << 20)
        } catch CacheStoreError.ioFailure {
            return
        } catch {
            fatalError("a damaged store did not open: \(error)")
        }
        for key in ["a", "b", "c"] {
            if let value = try? await store.entry(forKey: key)?.value, value != Data(key.utf8) {
                fatalError("\(key) read a value never written")
            }
        }
        try? await store.close()
    }
    return 0
}

/// Writes the seeds of a corpus into `folder`: the three-entry store's journal and `b`'s entry
/// file, each behind the mode byte of every mode that uses it.
func writeSeeds(to folder: String) {
    blocking {
        let directory = await freshStore()
        let journal = (try? Data(contentsOf: directory.appendingPathComponent("journal"))) ?? Data()
        let entry = (try? Data(contentsOf: directory.appendingPathComponent("entries/2"))) ?? Data()
        for (name, bytes) in [
            ("journal", Data([0]) + journal), ("entry", Data([1]) + entry), ("rebuild", Data([3]) + entry),
        ] {
            try? bytes.write(to: URL(fileURLWithPath: folder).appendingPathComponent(name))
        }
    }
}

/// The executable's entry point, which SwiftPM names after the module. With
/// `CACHEKIT_FUZZ_SEEDS=FOLDER` in the environment it writes seeds there instead of fuzzing.
@_cdecl("DiskStoreFuzzer_main")
func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv, writeSeeds: { writeSeeds(to: $0) }, { fuzz($0, $1) })
}
