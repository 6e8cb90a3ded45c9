import Synchronization

#if os(Linux) && canImport(Glibc)
import Glibc
#endif

/// Tells ThreadSanitizer about the happens-before edges of a lock.
///
/// A lock whose waiting happens in code that is not instrumented (a futex, the standard
/// library's `Mutex`) can make `swift test --sanitize=thread` report accesses it guards as races.
/// Where the TSan runtime is loaded, its `__tsan_acquire` and `__tsan_release` are found once with
/// `dlsym` and called on each lock and unlock; otherwise both are `nil` and each call costs one
/// predictable branch.
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
