/// Entries taken out under a lock, handed to the caller to release and report after unlocking.
///
/// The common cases, nothing or one eviction, carry no array, so a steady-state write allocates
/// nothing. Values are always moved out rather than destroyed in place: no `deinit` of a user's
/// value ever runs inside a cache's critical section.
@usableFromInline
enum _Removals<Key, Value> {
    case none
    case one(CacheRemoval<Key, Value>)
    case many([CacheRemoval<Key, Value>])

    @inlinable
    init() { self = .none }

    @inlinable
    var isEmpty: Bool {
        if case .none = self { return true }
        return false
    }

    @inlinable
    mutating func append(_ removal: CacheRemoval<Key, Value>) {
        switch self {
        case .none:
            self = .one(removal)
        case .one(let first):
            self = .many([first, removal])
        case .many(var all):
            self = .none
            all.append(removal)
            self = .many(all)
        }
    }

    @inlinable
    mutating func append(contentsOf other: consuming _Removals) {
        switch consume other {
        case .none: break
        case .one(let r): append(r)
        case .many(let rs): for r in rs { append(r) }
        }
    }

    /// Calls `body` for each removal, in the order they happened.
    @inlinable
    func forEach(_ body: (CacheRemoval<Key, Value>) throws -> Void) rethrows {
        switch self {
        case .none: break
        case .one(let r): try body(r)
        case .many(let rs): for r in rs { try body(r) }
        }
    }
}
