/// What a cache's background sweep calls: erasing `Cache`'s generic parameters keeps the sweep's
/// task free of its (possibly non-`Sendable`) key and value types.
protocol _Sweepable: AnyObject {
    func removeExpired()
}

extension Cache: _Sweepable {}
