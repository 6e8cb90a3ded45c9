import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The entries a ``DiskStore``'s index removed during one call (replaced, evicted), as its
/// removal handler hears them.
final class DiskRemovals {
    var removed: [CacheRemoval<String, DiskEntryInfo>] = []

    func take() -> [CacheRemoval<String, DiskEntryInfo>] {
        defer { removed = [] }
        return removed
    }
}

/// What a ``DiskStore`` does once its lock is released: entry files to remove, problems to
/// report, work to start.
struct DiskAftermath {
    var unlink: [UInt64] = []
    var problems: [CacheStoreProblem] = []
}

/// A ``DiskStore``'s state, changed only under its lock. Its methods change the index and the
/// journal together, journal first, and return what must happen after unlocking in a
/// ``DiskAftermath``: no file is removed and no problem reported while the lock is held.
struct DiskStoreState {
    /// Reads between two touch records in the journal.
    static let touchBatch = 64
    /// Ids reserved in the journal at a time.
    static let reservation: UInt64 = 1_024

    let index: SerialCache<String, DiskEntryInfo>
    let removals = DiskRemovals()
    var journal: DiskJournal
    var nextId: UInt64
    /// The journal allows ids below this one: ``allocateId()`` journals a new reserve before
    /// giving out an id at or above it.
    var reservedUpTo: UInt64
    /// Counts `removeAll()` calls: a write that began before one is removed by it.
    var generation: UInt64 = 0
    /// Entries read since the last touch record.
    var touches: [UInt64] = []
    var isClosed = false
    /// Hold the lock file's and the directory's locks until closed (empty once released).
    var lockDescriptors: [Int32]
    /// Deletions in the background that are still running, which `close()` awaits, by number.
    var background: [Int: Task<Void, Never>] = [:]
    var backgroundStarted = 0
    /// The first `close()`'s work, which later calls await too.
    var closing: Task<Void, Never>?

    init(
        journal: DiskJournal,
        nextId: UInt64,
        locks: [Int32],
        countLimit: Int,
        byteLimit: Int,
        policy: EvictionPolicy
    ) {
        index = SerialCache(countLimit: countLimit, totalCostLimit: byteLimit, policy: policy)
        self.journal = journal
        self.nextId = nextId
        reservedUpTo = nextId
        lockDescriptors = locks
        index.removalHandler = { [removals] removal in removals.removed.append(removal) }
    }

    var path: String { journal.paths.root }

    func checkOpen() throws(CacheStoreError) {
        if isClosed { throw .closed(path: path) }
    }

    // MARK: Opening

    /// Fills the index from a replayed journal, least recently used first, dropping what has
    /// expired and what no longer fits the limits; rewrites the journal if anything was dropped
    /// or it is more than twice as long as needed.
    ///
    /// A journal of set records only (a compacted one, and what was appended to it before any
    /// remove or read was journaled) goes straight into the index in its order. Should a key
    /// turn out to repeat, the index is emptied and filled again with each key's last record.
    mutating func load(_ replay: DiskJournal.Replay, now: Date, into after: inout DiskAftermath) {
        var dropped = false
        // Fills the index with the records at `positions`; returns `false` at once, in a journal
        // of set records only (`direct`), at a key already in the index.
        func fill(_ positions: some Sequence<Int>, direct: Bool) -> Bool {
            for position in positions {
                let record = replay.sets[position]
                let info = record.info
                if let deadline = info.expiresAt, deadline <= now {
                    // An expired record that replaces an entry ends that one too.
                    if direct && index.peekValue(forKey: replay.key(record)) != nil { return false }
                    after.unlink.append(info.id)
                    dropped = true
                    continue
                }
                let removedBefore = removals.removed.count
                // Refused when larger than the byte limit (lowered since the entry was written).
                if !index.setValue(info, forKey: replay.key(record), cost: info.size).isStored {
                    after.unlink.append(info.id)
                    dropped = true
                }
                if direct && removals.removed[removedBefore...].contains(where: { $0.reason == .replaced }) {
                    return false
                }
            }
            return true
        }
        let unlinkedBefore = after.unlink.count
        index._reserveCapacity(replay.live?.count ?? replay.sets.count)
        if let live = replay.live {
            _ = fill(live, direct: false)
        } else if !fill(replay.sets.indices, direct: true) {
            index.removeAll()
            _ = removals.take()
            after.unlink.removeSubrange(unlinkedBefore...)
            dropped = false
            _ = fill(replay.lastOfEachKey(), direct: false)
        }
        for removal in removals.take() {
            after.unlink.append(removal.value.id)
            dropped = true
        }
        if dropped || replay.tornTail != nil || isJournalLong {
            do { try compact() } catch { after.problems.append(CacheStoreProblem(key: nil, error: error)) }
        }
    }

    // MARK: Journal

    /// Whether the journal holds more than about twice the records the index needs.
    var isJournalLong: Bool { journal.records > 2 * index.count + 256 }

    /// Appends `records` to the journal, first rewriting it if an earlier failure left it
    /// behind the index.
    mutating func log(_ records: [DiskRecord]) throws(CacheStoreError) {
        if journal.needsRewrite { try compact() }
        try journal.append(records)
    }

    /// Rewrites the journal from the index: its entries in eviction order (next victim first),
    /// so a replay rebuilds the same order.
    mutating func compact() throws(CacheStoreError) {
        let entries = index.entries.map { (key: $0.key, info: $0.value) }
        try journal.rewrite(entries, nextId: max(nextId, reservedUpTo))
        touches.removeAll()
    }

    /// The id for a new entry file. Ids are reserved in the journal in blocks, before they are
    /// given out, so that no run gives out an id an earlier run may have used.
    mutating func allocateId() throws(CacheStoreError) -> UInt64 {
        if nextId >= reservedUpTo {
            try log([.reserve(upTo: nextId + Self.reservation)])
            reservedUpTo = nextId + Self.reservation
        }
        defer { nextId += 1 }
        return nextId
    }

    /// Compacts the journal if it is long; a failure is reported, the journal stays as it is.
    mutating func compactIfLong(into after: inout DiskAftermath) {
        guard isJournalLong else { return }
        do { try compact() } catch { after.problems.append(CacheStoreProblem(key: nil, error: error)) }
    }

    /// Notes a read of entry `id`; every ``touchBatch`` reads go to the journal as one record.
    mutating func touch(_ id: UInt64) {
        touches.append(id)
        guard touches.count >= Self.touchBatch else { return }
        flushTouches()
        // Reads alone grow the journal too. A failed compaction is retried at the next batch
        // or write, which reports it.
        if isJournalLong { try? compact() }
    }

    /// Journals the reads not yet journaled. Best effort: a lost batch costs only eviction order
    /// after a restart.
    mutating func flushTouches() {
        guard !touches.isEmpty else { return }
        let batch = touches
        touches.removeAll()
        try? log([.touch(ids: batch)])
    }

    // MARK: Changes

    /// Journals what the index removed during this call (evictions; a replaced entry needs no
    /// record, the new one's says it) and has their files removed. A failed record leaves the
    /// journal to be rewritten from the index before the next append.
    mutating func journalRemovals(into after: inout DiskAftermath) {
        let removed = removals.take()
        guard !removed.isEmpty else { return }
        after.unlink += removed.map(\.value.id)
        let records = removed.filter { $0.reason != .replaced }.map { DiskRecord.remove(id: $0.value.id) }
        do {
            try log(records)
        } catch {
            journal.needsRewrite = true
            after.problems.append(CacheStoreProblem(key: nil, error: error))
        }
    }

    /// Removes the entry for `key` if it is still entry `id` (or any entry, for `nil`): its
    /// removal journaled first, then the index changed. Returns the entry removed.
    mutating func drop(
        _ key: String,
        id: UInt64? = nil,
        into after: inout DiskAftermath
    ) throws(CacheStoreError)
        -> DiskEntryInfo?
    {
        guard let info = index.peekValue(forKey: key), id == nil || info.id == id else { return nil }
        try log([.remove(id: info.id)])
        index.removeValue(forKey: key)
        _ = removals.take()
        after.unlink.append(info.id)
        compactIfLong(into: &after)
        return info
    }

    /// Makes `info`, whose file is written (or failed to be, `failure`), the entry for `key`:
    /// journals it, puts it in the index, evicts to the limits. A write that a `removeAll()`
    /// overtook (`generation` is old) counts as done and removed.
    mutating func commit(
        _ key: String,
        _ info: DiskEntryInfo,
        generation: UInt64,
        failure: CacheStoreError?,
        into after: inout DiskAftermath
    ) -> Result<Void, CacheStoreError> {
        if isClosed {
            after.unlink.append(info.id)
            return .failure(.closed(path: path))
        }
        if generation != self.generation {
            after.unlink.append(info.id)
            return .success(())
        }
        if let failure { return .failure(failure) }
        do {
            try log([.set(key: key, info: info)])
        } catch {
            after.unlink.append(info.id)
            return .failure(error)
        }
        index.setValue(info, forKey: key, cost: info.size)
        journalRemovals(into: &after)
        compactIfLong(into: &after)
        return .success(())
    }

    // MARK: Closing

    /// Journals the pending reads and a clean close, flushes the journal and releases the
    /// files and the lock. Harmless when done already.
    mutating func shutDown() {
        isClosed = true
        guard !lockDescriptors.isEmpty else { return }
        flushTouches()
        try? log([.closed])
        journal.sync()
        journal.closeFile()
        for lock in lockDescriptors { StoreLock.release(lock) }
        lockDescriptors = []
    }
}
