import Synchronization

#if os(Linux) && canImport(Glibc)
import Glibc
#endif

/// Tells ThreadSanitizer about the happens-before edges of a `Synchronization.Mutex`.
///
/// On Linux the stdlib's `Mutex` locks with futexes from code that is not instrumented, so
/// `swift test --sanitize=thread` reports every access it guards as a race (even a plain
/// `mutex.withLock { $0 += 1 }`). Where the TSan runtime is loaded, its `__tsan_acquire` and
/// `__tsan_release` are found once with `dlsym` and called on each lock and unlock; otherwise both
/// are `nil` and each call costs one predictable branch.
@usableFromInline
package enum _ThreadSanitizer {
    @usableFromInline
    package typealias Annotation = @convention(c) (UnsafeRawPointer?) -> Void

    @usableFromInline
    package static let acquire: Annotation? = lookUp("__tsan_acquire")

    @usableFromInline
    package static let release: Annotation? = lookUp("__tsan_release")

    private static func lookUp(_ name: String) -> Annotation? {
        #if os(Linux) && canImport(Glibc)
        // RTLD_DEFAULT: search every loaded object.
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(symbol, to: Annotation.self)
        #else
        return nil
        #endif
    }
}

extension Mutex where Value: ~Copyable {
    /// `withLock`, with the lock's happens-before edges told to ThreadSanitizer under `owner`'s
    /// address (the object that holds this mutex). Inlinable, so that a caller in another module
    /// gets a copy specialized to its types rather than building their metadata on every call.
    @inlinable
    package borrowing func withAnnotatedLock<Result, E: Error>(
        for owner: AnyObject,
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        let address = UnsafeRawPointer(Unmanaged.passUnretained(owner).toOpaque())
        return try withLock { (value: inout sending Value) throws(E) -> sending Result in
            _ThreadSanitizer.acquire?(address)
            defer { _ThreadSanitizer.release?(address) }
            return try body(&value)
        }
    }
}
