/// Which entry a full cache gives up first.
///
/// Pass one to any CacheKit cache:
///
/// ```swift
/// let cache = Cache<String, Data>(countLimit: 500, policy: .lfu)
/// ```
///
/// - ``lru``: least recently used leaves first. Reads and writes refresh an entry. The right
///   default for most workloads, and what `NSCache` users expect.
/// - ``fifo``: entries leave in insertion order; reads change nothing. Cheapest on reads.
/// - ``lfu``: least frequently used leaves first; ties go to the least recently used. Good when
///   popularity is stable; slow to forget entries that were popular long ago.
/// - ``sieve``: SIEVE (Zhang et al., NSDI 2024). New entries wait in a queue; a read marks an
///   entry visited; a hand sweeping the queue evicts the first unvisited entry and clears the
///   marks it passes. Reads are as cheap as FIFO's, and it keeps popular entries as LRU does or
///   better, and resists scans.
///
/// Every policy runs in O(1) per operation and allocates nothing per access.
public struct EvictionPolicy: Hashable, Sendable, CustomStringConvertible {
    @usableFromInline
    enum Kind: String, Hashable, Sendable, CaseIterable {
        case lru
        case fifo
        case lfu
        case sieve
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

    /// Every policy CacheKit offers.
    public static var allCases: [EvictionPolicy] { Kind.allCases.map(EvictionPolicy.init) }

    /// The policy's short name, as the command line spells it: `lru`, `fifo`, `lfu`, `sieve`.
    public var name: String { kind.rawValue }

    public var description: String { name }

    /// The policy named `name` (`lru`, `fifo`, `lfu`, `sieve`; case-insensitive), or `nil`.
    public init?(name: String) {
        guard let kind = Kind(rawValue: name.lowercased()) else { return nil }
        self.kind = kind
    }
}
