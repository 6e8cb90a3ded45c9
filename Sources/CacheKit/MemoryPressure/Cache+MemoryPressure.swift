extension Cache: MemoryPressureResponder {
    func _respondToMemoryPressure(_ action: MemoryPressureAction?, at level: MemoryPressureLevel) {
        if let action { _handleMemoryPressure(action) } else { handleMemoryPressure() }
    }
}

// The monitor calls the cache from its own task, and the removal handler then runs there with the
// keys and values: the cache must be `Sendable`.
extension Cache where Key: Sendable, Value: Sendable {
    /// Frees memory each time `monitor` reports pressure rising to `level` or higher.
    ///
    /// ```swift
    /// let monitor = try MemoryPressureMonitor.system()
    /// images.respond(to: monitor)                                       // empty on a warning
    /// thumbnails.respond(to: monitor, with: .trim(toFraction: 0.5))     // halve on a warning
    /// thumbnails.respond(to: monitor, at: .critical, with: .removeAll)  // empty when critical
    /// ```
    ///
    /// Each eviction asks ``evictionVeto`` and is reported to ``removalHandler`` with reason
    /// ``RemovalReason/memoryPressure``, on the monitor's task. The subscription holds the cache
    /// weakly and is cancelled when the cache is deinitialized; keep the returned value only to
    /// cancel it earlier.
    ///
    /// - Parameters:
    ///   - monitor: The monitor to listen to.
    ///   - level: The level from which to act: `.warning` (the default) or `.critical`.
    ///   - action: What to do; `nil` (the default) does what ``memoryPressureAction`` says at the
    ///     time, as ``handleMemoryPressure()`` does.
    @discardableResult
    public func respond(
        to monitor: MemoryPressureMonitor,
        at level: MemoryPressureLevel = .warning,
        with action: MemoryPressureAction? = nil
    ) -> MemoryPressureSubscription {
        _subscribe(to: monitor, at: level, with: action)
    }
}

extension _StateHost {
    /// ``handleMemoryPressure()`` with a given action instead of the cache's own.
    @usableFromInline
    func _handleMemoryPressure(_ action: MemoryPressureAction) {
        let veto = _withState { $0.evictionVeto }
        if let veto {
            // The count to keep is taken once, from the count when the pressure came: each round
            // of the trim below asks the veto outside the lock, and a fraction taken again of
            // what a round left would trim further each time (a half of a half...). Entries
            // written meanwhile count against the same target, so the cache ends at most at it,
            // as a trim without a veto leaves it.
            let kept = _withSweptState { action.keptCount(of: $0.core.count) }
            let target = _TrimTarget(maxCount: kept, maxCost: .max, reason: .memoryPressure)
            _ = _trim(askingVeto: veto, protecting: nil) { _ in target }
        } else if action == .removeAll {
            _removeAll(reason: .memoryPressure)
        } else {
            // Swept first: expired entries leave as expired and do not count toward what stays.
            _withSweptState(now: _timekeeper.now()) { state, removals in
                let target = _TrimTarget(
                    maxCount: action.keptCount(of: state.core.count),
                    maxCost: .max,
                    reason: .memoryPressure
                )
                state.core.trim(to: target, protecting: -1, removals: &removals)
            }
        }
    }
}
