// Saves a cache in a loop until it is killed: `PersistenceTests` kills it with SIGKILL at random
// moments and checks that the file always holds one complete snapshot.
//
// Usage: CacheKitTestHelper persistence-crash FILE COUNT
//
// Snapshot i holds the keys 0..<COUNT, written in that order into an LRU cache (so key 0 is the
// next victim), key k with value i * 1_000_003 + k and cost k % 5. The helper first loads FILE
// and continues with the snapshot after the one it finds. It prints "ready" after its first save.
import CacheKit
import Foundation

/// `persistence-crash FILE COUNT` (`arguments[0]` is the subcommand).
func persistenceCrash(_ arguments: [String]) -> Never {
    guard arguments.count == 3, let count = Int(arguments[2]), count > 0 else {
        FileHandle.standardError.write(Data("usage: CacheKitTestHelper persistence-crash FILE COUNT\n".utf8))
        exit(2)
    }

    let cache = Cache<Int, Int>(policy: .lru)
    let persistence = CachePersistence(cache: cache, fileURL: URL(fileURLWithPath: arguments[1]))
    var snapshot = 0
    do {
        try persistence.load()
        if let first = cache.peekValue(forKey: 0) { snapshot = first / 1_000_003 + 1 }
        var announced = false
        while true {
            for key in 0..<count { cache.setValue(snapshot * 1_000_003 + key, forKey: key, cost: key % 5) }
            try persistence.save()
            if !announced {
                FileHandle.standardOutput.write(Data("ready\n".utf8))
                announced = true
            }
            snapshot += 1
        }
    } catch {
        FileHandle.standardError.write(Data("CacheKitTestHelper: \(error)\n".utf8))
        exit(1)
    }
}
