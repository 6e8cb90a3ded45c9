// Policies/: the eviction policies. A policy sees slot numbers and 32-bit hashes, never keys,
// values, locks or clocks; it answers who goes next and never removes an entry itself.

/// Which entry a full cache gives up first.
///
/// Pass one to any CacheKit cache:
///
/// ```swift
/// let cache = Cache<String, Data>(countLimit: 500, policy: .lfu)
/// ```
///
/// - ``lru``: least recently used leaves first. Reads and writes refresh an entry. Exact and
///   predictable, and what `NSCache` users expect.
/// - ``fifo``: entries leave in insertion order; reads change nothing. Cheapest on reads.
/// - ``lfu``: least frequently used leaves first; ties go to the least recently used. Good when
///   popularity is stable; slow to forget entries that were popular long ago.
/// - ``sieve``: SIEVE (Zhang et al., NSDI 2024). New entries wait in a queue; a read marks an
///   entry visited; a hand sweeping the queue evicts the first unvisited entry and clears the
///   marks it passes. Reads are as cheap as FIFO's, and it keeps popular entries as LRU does or
///   better, and resists scans.
/// - ``s3fifo``: S3-FIFO (Yang et al., SOSP 2023). New entries wait in a small FIFO queue; those
///   used at least twice there (libCacheSim's threshold) move to a main queue run as a 2-bit
///   CLOCK; keys evicted from the small queue are
///   remembered (by hash) so that a quick return goes straight to the main queue. Excellent on
///   web and block workloads where most keys are used once; reads relink nothing.
/// - ``arc``: the Adaptive Replacement Cache (Megiddo & Modha, FAST 2003). Balances a recency list
///   and a frequency list, steered by ghost lists of recently evicted keys. Scan-resistant and
///   self-tuning.
/// - ``wTinyLFU``: W-TinyLFU (Einziger, Friedman & Manes, 2017) as in Caffeine: a small LRU
///   window in front of a segmented-LRU main space, admission decided by a frequency sketch with
///   aging, and a window resized by hill climbing. The smallest mean gap to OPT over the project's
///   reference traces, from recency-heavy to frequency-heavy (not the best on every trace), at
///   a few more instructions per access.
/// - ``adaptive``: one of W-TinyLFU, S3-FIFO and ARC at a time, chosen while the cache runs by
///   miniature simulations (Waldspurger et al., USENIX ATC 2017) of all three on a spatially
///   hashed sample of the keys (at most 512 per simulation); it moves to another policy when
///   McNemar's test on their paired hits says it wins, keeping every entry. Starts as W-TinyLFU.
///   Over the reference traces its mean gap to OPT is smaller than any fixed policy's; it costs
///   a few nanoseconds per access more than W-TinyLFU and a few hundred entries' worth of
///   memory. See <doc:ChoosingAPolicy>.
///
/// Every policy runs in O(1) (amortized) per operation and allocates nothing per access.
///
/// ``default`` (W-TinyLFU) is what a cache uses when you name none: across the real traces of
/// the <doc:ChoosingAPolicy> article it comes closest to the optimal hit ratio on average and never collapses
/// (LRU, FIFO, SIEVE and ARC score 0 on a loop slightly larger than the cache). Choose ``lru``
/// for strict recency semantics (NSCache's), or run `cachekit simulate` on a trace of your own.
public struct EvictionPolicy: Hashable, Sendable, CustomStringConvertible {
    @usableFromInline
    enum Kind: String, Hashable, Sendable, CaseIterable {
        case lru
        case fifo
        case lfu
        case sieve
        case s3fifo
        case arc
        case wtinylfu
        case adaptive
    }

    @usableFromInline let kind: Kind

    @inlinable
    init(_ kind: Kind) { self.kind = kind }

    /// Least recently used.
    public static let lru = EvictionPolicy(.lru)
    /// First in, first out.
    public static let fifo = EvictionPolicy(.fifo)
    /// Least frequently used, ties broken by least recent use.
    public static let lfu = EvictionPolicy(.lfu)
    /// SIEVE: FIFO with a visited bit and a moving hand; reads never relink.
    public static let sieve = EvictionPolicy(.sieve)
    /// S3-FIFO: small and main FIFO queues with a ghost queue of evicted keys.
    public static let s3fifo = EvictionPolicy(.s3fifo)
    /// ARC: adaptive balance of recency and frequency lists, with ghost lists.
    public static let arc = EvictionPolicy(.arc)
    /// W-TinyLFU: an LRU window, a frequency-sketch admission filter and a segmented-LRU main
    /// space, with a hill-climbing window size.
    public static let wTinyLFU = EvictionPolicy(.wtinylfu)
    /// Adaptive: one of W-TinyLFU, S3-FIFO and ARC at a time, moving to whichever of them
    /// miniature simulations on a sample of the keys show hitting most.
    public static let adaptive = EvictionPolicy(.adaptive)

    /// The policy caches use unless told otherwise: ``wTinyLFU``.
    public static let `default` = wTinyLFU

    /// Every policy CacheKit offers.
    public static var allCases: [EvictionPolicy] { Kind.allCases.map(EvictionPolicy.init) }

    /// The policy's short name, as the command line spells it: `lru`, `fifo`, `lfu`, `sieve`,
    /// `s3fifo`, `arc`, `wtinylfu`, `adaptive`.
    public var name: String { kind.rawValue }

    public var description: String { name }

    /// The policy named `name`, or `nil`: one of the ``name``s, case-insensitive, with dashes
    /// allowed (`S3-FIFO`, `W-TinyLFU`).
    public init?(name: String) {
        let plain = String(name.lowercased().filter { $0 != "-" })
        guard let kind = Kind(rawValue: plain) else { return nil }
        self.kind = kind
    }
}
