/// What a cache does when told of memory pressure by `handleMemoryPressure()`.
public struct MemoryPressureAction: Hashable, Sendable {
    @usableFromInline let keptFraction: Double

    /// Evicts every entry (OSCache and `NSCache` behaviour). Each eviction still asks the veto.
    public static let removeAll = MemoryPressureAction(keptFraction: 0)

    /// Evicts entries in eviction order until at most `fraction` of the current count remains
    /// (`0.5` halves the cache), rounded down: 0.29 of 100 entries keeps 29, of 99 keeps 28.
    ///
    /// - Precondition: `fraction` is in `0...1`.
    public static func trim(toFraction fraction: Double) -> MemoryPressureAction {
        precondition(
            fraction >= 0 && fraction <= 1,
            "MemoryPressureAction.trim(toFraction:): fraction must be in 0...1 (got \(fraction))"
        )
        return MemoryPressureAction(keptFraction: fraction)
    }

    @usableFromInline
    init(keptFraction: Double) { self.keptFraction = keptFraction }

    /// How many of `count` entries may stay.
    @inlinable
    func keptCount(of count: Int) -> Int { Self.keptCount(of: count, fraction: keptFraction) }

    /// `count` times `fraction`, rounded down, but as the fraction is written in decimal: the
    /// `Double` nearest 0.29 is a little below it, and 100 × it truncates to 28, not 29. A
    /// product within a billionth of a whole number counts as that number.
    @inlinable
    static func keptCount(of count: Int, fraction: Double) -> Int {
        let exact = Double(count) * fraction
        let nearest = exact.rounded()
        let kept = Swift.abs(exact - nearest) <= Swift.max(1, nearest) * 1e-9 ? nearest : exact.rounded(.down)
        return Swift.min(count, Swift.max(0, Int(kept)))
    }
}
