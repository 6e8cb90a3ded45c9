import CacheKit
import CacheKitTestSupport
import Foundation

/// Both caches behind one interface, so every behaviour test runs against each.
protocol CacheUnderTest<Key, Value>: AnyObject {
    associatedtype Key: Hashable
    associatedtype Value
    subscript(key: Key) -> Value? { get set }
    func value(forKey key: Key) -> Value?
    func peekValue(forKey key: Key) -> Value?
    func contains(_ key: Key) -> Bool
    @discardableResult func setValue(_ value: Value, forKey key: Key, cost: Int, expiresAfter: Duration?) -> WriteResult
    @discardableResult func removeValue(forKey key: Key) -> Value?
    func removeValues<S: Sequence>(forKeys keys: S) where S.Element == Key
    func removeAll()
    var count: Int { get }
    var totalCost: Int { get }
    var countLimit: Int { get set }
    var totalCostLimit: Int { get set }
    var isOverLimit: Bool { get }
    var keys: [Key] { get }
    var entries: [(key: Key, value: Value)] { get }
    var memoryPressureAction: MemoryPressureAction { get set }
    func handleMemoryPressure()
    func _checkInvariants()
    func value(
        forKey key: Key,
        cost: Int,
        expiresAfter: Duration?,
        orInsert make: () throws -> Value
    ) rethrows -> Value
    func removeExpired()
    func expireAll()
    var statistics: CacheStatistics { get }
    var isRecordingStatistics: Bool { get set }
    func resetStatistics()
    /// Installs a removal handler (as `@Sendable`, which both caches accept).
    func onRemoval(_ handler: @escaping @Sendable (CacheRemoval<Key, Value>) -> Void)
    /// Installs (or with `nil` removes) an eviction veto.
    func veto(_ veto: (@Sendable (Key, Value, RemovalReason) -> Bool)?)
    /// Installs an activity observer.
    func onActivity(_ observer: @escaping @Sendable (CacheActivity<Key>) -> Void)
}

extension CacheUnderTest {
    @discardableResult
    func setValue(_ value: Value, forKey key: Key, cost: Int = 0) -> WriteResult {
        setValue(value, forKey: key, cost: cost, expiresAfter: nil)
    }

    func value(forKey key: Key, cost: Int = 0, orInsert make: () throws -> Value) rethrows -> Value {
        try value(forKey: key, cost: cost, expiresAfter: nil, orInsert: make)
    }
}

extension Cache: CacheUnderTest {
    func onRemoval(_ handler: @escaping @Sendable (CacheRemoval<Key, Value>) -> Void) { removalHandler = handler }
    func veto(_ veto: (@Sendable (Key, Value, RemovalReason) -> Bool)?) { evictionVeto = veto }
    func onActivity(_ observer: @escaping @Sendable (CacheActivity<Key>) -> Void) { activityObserver = observer }
}

extension SerialCache: CacheUnderTest {
    func onRemoval(_ handler: @escaping @Sendable (CacheRemoval<Key, Value>) -> Void) { removalHandler = handler }
    func veto(_ veto: (@Sendable (Key, Value, RemovalReason) -> Bool)?) { evictionVeto = veto }
    func onActivity(_ observer: @escaping @Sendable (CacheActivity<Key>) -> Void) { activityObserver = observer }
}

/// Which cache type a parameterized test builds.
enum CacheKind: String, CaseIterable, CustomStringConvertible, Sendable {
    case cache = "Cache"
    /// A `Cache` whose reads take the shared lock from the start (as they do once threads
    /// contend for it): the policy hears reads from the stripes' buffers.
    case cacheSharingReads = "Cache (shared reads)"
    case serial = "SerialCache"

    var description: String { rawValue }

    func make<Key: Hashable, Value>(
        _: Key.Type = Key.self,
        _: Value.Type = Value.self,
        countLimit: Int = 0,
        totalCostLimit: Int = 0,
        policy: EvictionPolicy = .lru,
        expiration: Expiration = .never,
        clock: ManualClock? = nil,
        insertionPolicy: (@Sendable (Key, Value, Int) -> Bool)? = nil
    ) -> any CacheUnderTest<Key, Value> {
        let clock = clock ?? ManualClock()
        return switch self {
        case .cache, .cacheSharingReads:
            {
                let cache = Cache<Key, Value>(
                    countLimit: countLimit,
                    totalCostLimit: totalCostLimit,
                    policy: policy,
                    expiration: expiration,
                    clock: clock,
                    insertionPolicy: insertionPolicy
                )
                if self == .cacheSharingReads { cache._shareReads() }
                return cache
            }()
        case .serial:
            SerialCache<Key, Value>(
                countLimit: countLimit,
                totalCostLimit: totalCostLimit,
                policy: policy,
                expiration: expiration,
                clock: clock,
                insertionPolicy: insertionPolicy
            )
        }
    }
}

/// Every (cache kind, policy) pair.
let allConfigurations: [(CacheKind, EvictionPolicy)] = CacheKind.allCases.flatMap { kind in
    EvictionPolicy.allCases.map { (kind, $0) }
}

/// The policies whose eviction order `ReferenceModel` reproduces exactly. ARC, S3-FIFO and
/// W-TinyLFU are checked against their own references in `AdaptivePolicyTests`.
let classicPolicies: [EvictionPolicy] = [.lru, .fifo, .lfu, .sieve]

/// Both caches with each classic policy.
let classicConfigurations: [(CacheKind, EvictionPolicy)] = CacheKind.allCases.flatMap { kind in
    classicPolicies.map { (kind, $0) }
}

/// Collects what a removal handler hears, safely from any thread.
final class RemovalLog<Key: Sendable, Value: Sendable>: Sendable {
    private let storage = Locked<[CacheRemoval<Key, Value>]>([])

    var all: [CacheRemoval<Key, Value>] { storage.value }

    func append(_ removal: CacheRemoval<Key, Value>) { storage.mutate { $0.append(removal) } }

    /// Forgets the oldest removal heard.
    func dropFirst() { storage.mutate { _ = $0.removeFirst() } }

    func take() -> [CacheRemoval<Key, Value>] {
        storage.mutate { log in
            defer { log = [] }
            return log
        }
    }
}

/// A value behind a lock, for test bookkeeping.
///
/// An `NSLock` (a pthread mutex), not `Synchronization.Mutex`: ThreadSanitizer sees pthread
/// locking but not the standard library's futex-based `Mutex`, and reports the accesses it guards
/// as races.
final class Locked<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T

    init(_ value: T) { stored = value }

    var value: T { lock.withLock { stored } }

    @discardableResult
    func mutate<R: Sendable>(_ body: (inout T) -> R) -> R { lock.withLock { body(&stored) } }
}

/// The seeds the randomized model tests replay: `1...defaultCount`, or `1...N` with
/// `CACHEKIT_MODEL_SEEDS=N` in the environment, for a longer search (`CACHEKIT_MODEL_SEEDS=500
/// swift test --filter "ModelBasedTests|AdaptivePolicyTests|SharedCacheTests"`). A failure names its seed.
func modelSeeds(default defaultCount: UInt64) -> ClosedRange<UInt64> {
    let count = ProcessInfo.processInfo.environment["CACHEKIT_MODEL_SEEDS"].flatMap(UInt64.init) ?? defaultCount
    return 1...Swift.max(count, 1)
}

/// The tests' seeded generator (SplitMix64), from CacheKitTestSupport.
typealias SeededGenerator = CacheKitTestSupport.SeededGenerator
