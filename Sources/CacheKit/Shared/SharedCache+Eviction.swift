extension SharedCache {
    /// Runs the ``evictionDecider`` over every entry, on the calling thread and outside the lock,
    /// and removes those it selects (reason ``RemovalReason/purged``), as one write (YMCache's
    /// `purgeEvictableItems:`, an "immediate synchronous cache cleanup"). An entry written or
    /// removed after the decider saw it is left alone. Unlike other writes, the purge is applied
    /// before this returns, with everything queued before it; this thread then tells the
    /// ``removalHandler`` and the purged values are released, unless another thread is telling
    /// the handler of earlier removals at that moment (or this is called from the handler):
    /// that delivery then tells it of these too, and releases them after. (It never waits for a
    /// handler running on another thread: that handler might be waiting for this one.) Returns
    /// how many entries the decider selected; `0` without a decider.
    ///
    /// - Complexity: O(*n*) calls of the decider, plus applying the queue.
    @discardableResult
    public func purgeEvictableItems(context: (any Sendable)? = nil) -> Int {
        guard let evictionDecider else { return 0 }
        let candidates = _readingInEvictionOrder { state, now -> [(target: _PurgeTarget<Key>, value: Value)] in
            var result: [(target: _PurgeTarget<Key>, value: Value)] = []
            result.reserveCapacity(state.core.count)
            state.core.forEachSlotInEvictionOrder { slot in
                if !state.core._isExpired(slot, now: now) {
                    let entry = state.core.entries[Int(slot)]
                    let version = state.core.trackedVersion(of: slot)
                    result.append((_PurgeTarget(key: entry.key, slot: slot, version: version), entry.value))
                }
                return true
            }
            return result
        }
        let chosen = candidates.filter { evictionDecider($0.target.key, $0.value, context) }.map(\.target)
        if !chosen.isEmpty {
            _enqueue(.purge(chosen))
            _exclusive { _, _ in }  // applies the queue, and delivers unless someone else is
        }
        return chosen.count
    }

    /// How often the cache runs ``purgeEvictableItems(context:)`` by itself, on a background
    /// task, with a `nil` context (YMCache's `evictionInterval`); `nil` (the default) never.
    /// Measured on the cache's clock; setting it restarts the interval. Combines with calls of
    /// `purgeEvictableItems` made at any time.
    ///
    /// - Precondition: the interval is positive, and the cache has an ``evictionDecider``.
    public var evictionInterval: Duration? {
        get { background.withLock { $0.evictionInterval } }
        set {
            if let newValue {
                precondition(newValue > .zero, "evictionInterval must be positive (got \(newValue))")
                precondition(evictionDecider != nil, "evictionInterval needs an evictionDecider")
            }
            let task = newValue.map { repeating(every: $0) { $0.purgeEvictableItems() } }
            background.withLock { tasks in
                tasks.eviction?.cancel()
                tasks.eviction = task
                tasks.evictionInterval = newValue
            }
        }
    }

    /// Removes entries now: with `.removeAll` (the default) removes every entry, with
    /// `.trim(toFraction:)` evicts in eviction order down to that fraction (reason
    /// ``RemovalReason/memoryPressure``). To run the eviction decider instead, call
    /// ``purgeEvictableItems(context:)``.
    ///
    /// The removals are applied before this returns, with everything queued before them, and
    /// told to the ``removalHandler`` as ``purgeEvictableItems(context:)``'s are: by this thread,
    /// unless another is telling it of earlier removals at that moment, in which case the
    /// removed values are released when that delivery has told the handler of them.
    ///
    /// - Complexity: O(*n*) to remove every entry, O(*k*) to trim *k* entries, plus applying the
    ///   queue.
    public func handleMemoryPressure(_ action: MemoryPressureAction = .removeAll) {
        if action == .removeAll {
            _enqueue(.removeAll(.memoryPressure, now: _timekeeper.now()))
        } else {
            _enqueue(.trim(keptFraction: action.keptFraction, reason: .memoryPressure))
        }
        _exclusive { _, _ in }  // as in purgeEvictableItems: never waits for another thread's handler
    }
}

extension SharedCache: MemoryPressureResponder {
    func _respondToMemoryPressure(_ action: MemoryPressureAction?, at level: MemoryPressureLevel) {
        if let action {
            handleMemoryPressure(action)
        } else if evictionDecider != nil {
            purgeEvictableItems(context: level)
        } else {
            handleMemoryPressure(.removeAll)
        }
    }

    /// Frees memory each time `monitor` reports pressure rising to `level` or higher: YMCache's
    /// "automatic eviction on low memory".
    ///
    /// ```swift
    /// let monitor = try MemoryPressureMonitor.system()
    /// stories.respond(to: monitor)                              // run the eviction decider
    /// stories.respond(to: monitor, at: .critical, with: .removeAll)
    /// ```
    ///
    /// - Parameters:
    ///   - monitor: The monitor to listen to.
    ///   - level: The level from which to act: `.warning` (the default) or `.critical`.
    ///   - action: `.removeAll` or `.trim(toFraction:)` (reason ``RemovalReason/memoryPressure``);
    ///     `nil` (the default) purges what the ``evictionDecider`` selects (reason
    ///     ``RemovalReason/purged``), or removes everything when the cache has no decider. The
    ///     decider's context is then the ``MemoryPressureLevel`` reported, as YMCache hands its
    ///     decider the memory warning notification.
    ///     Runs on the monitor's task; the subscription holds the cache weakly and ends with it.
    @discardableResult
    public func respond(
        to monitor: MemoryPressureMonitor,
        at level: MemoryPressureLevel = .warning,
        with action: MemoryPressureAction? = nil
    ) -> MemoryPressureSubscription {
        _subscribe(to: monitor, at: level, with: action)
    }
}
