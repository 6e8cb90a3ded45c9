import CacheKit

/// A test suite over one `DiskStore` directory, whose stores read a manual clock and report
/// their problems to one log.
protocol DiskStoreSuite {
    var directory: StoreDirectory { get }
    var clock: ManualClock { get }
    var problems: ProblemLog { get }
}

extension DiskStoreSuite {
    /// Opens the suite's directory as an LRU store of `byteLimit` bytes.
    func open(byteLimit: Int = 1 << 20) async throws(CacheStoreError) -> DiskStore {
        try await DiskStore(
            directory: directory.url,
            byteLimit: byteLimit,
            clock: .manual(clock),
            problemHandler: problems.handler
        )
    }
}
