/// What a cache's background sweep calls: erasing `Cache`'s generic parameters keeps the sweep's
/// task free of its (possibly non-`Sendable`) key and value types.
protocol _Sweepable: AnyObject {
    func removeExpired()
}

extension Cache: _Sweepable {}

extension Cache {
    /// Removes every entry that has expired now, reporting each with reason
    /// ``RemovalReason/expired``. Every operation does this first anyway; call it to free
    /// memory in a cache that sees no calls (or set ``Expiration/sweepInterval``).
    ///
    /// - Complexity: O(1) if nothing expired; O(1) per entry removed, O(log *n*) for entries
    ///   written with their own `expiresAfter`.
    public func removeExpired() { _removeExpired() }

    /// Expires every entry at once (ClearCache's expiration trigger): removes them all,
    /// reporting each with reason ``RemovalReason/expired``. The veto is not asked.
    ///
    /// - Complexity: O(1) inside the lock; O(*n*) afterwards to report and release the entries.
    public func expireAll() { _removeAll(reason: .expired) }
}

extension SerialCache {
    /// Removes every entry that has expired now, reporting each with reason
    /// ``RemovalReason/expired``. Every operation does this first anyway.
    ///
    /// - Complexity: O(1) if nothing expired; O(1) per entry removed, O(log *n*) for entries
    ///   written with their own `expiresAfter`.
    public func removeExpired() { _removeExpired() }

    /// Expires every entry at once: removes them all, reporting each with reason
    /// ``RemovalReason/expired``.
    ///
    /// - Complexity: O(*n*) to report and release the entries.
    public func expireAll() { _removeAll(reason: .expired) }
}
