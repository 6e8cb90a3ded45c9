#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Allocates the engine's per-slot and index arrays so that a freed array goes back to the system.
///
/// Slot storage grows by doubling, freeing the old arrays each time. On Linux, glibc serves big
/// blocks from `mmap` only until the first such block is freed; after that it raises its
/// threshold and serves them from the heap, where freed blocks stay resident. A cache grown to a
/// million entries then held ~20% more memory than it used (measured with `cachekit bench
/// --memory`). Arrays of at least `mapThreshold` bytes are therefore mapped and unmapped here
/// directly; smaller ones use the ordinary allocator.
///
/// Every block starts with a header, `headerSize(T.self)` bytes before the returned pointer, that
/// records the mapped length (0 for an ordinary allocation), so freeing needs only the pointer.
@usableFromInline
enum _SlotMemory {
    /// Blocks at least this large are mapped.
    @usableFromInline static let mapThreshold = 256 * 1024

    @inlinable
    static func headerSize<T>(_: T.Type) -> Int { Swift.max(16, MemoryLayout<T>.alignment) }

    /// Uninitialized memory for `capacity` values of `T`.
    @inlinable
    static func allocate<T>(_: T.Type, capacity: Int) -> UnsafeMutablePointer<T> {
        let header = headerSize(T.self)
        let raw = allocateRaw(byteCount: header + MemoryLayout<T>.stride * capacity, alignment: header)
        return (raw + header).assumingMemoryBound(to: T.self)
    }

    /// Frees memory from `allocate`; its contents must already be deinitialized or trivial.
    @inlinable
    static func deallocate<T>(_ pointer: UnsafeMutablePointer<T>) {
        deallocateRaw(UnsafeMutableRawPointer(pointer) - headerSize(T.self))
    }

    /// `old` grown (or shrunk) to `newCapacity` values: the first `used` copied, the rest zero.
    /// `nil` stays `nil`.
    @inlinable
    static func resized<T: FixedWidthInteger>(
        _ old: UnsafeMutablePointer<T>?,
        used: Int,
        to newCapacity: Int
    ) -> UnsafeMutablePointer<T>? {
        guard let old else { return nil }
        let new = allocate(T.self, capacity: newCapacity)
        new.initialize(repeating: 0, count: newCapacity)
        new.update(from: old, count: used)
        deallocate(old)
        return new
    }

    @usableFromInline
    static func allocateRaw(byteCount: Int, alignment: Int) -> UnsafeMutableRawPointer {
        #if canImport(Glibc) || canImport(Musl)
        if byteCount >= mapThreshold {
            let mapped = mmap(nil, byteCount, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
            if let mapped, mapped != MAP_FAILED {
                mapped.storeBytes(of: byteCount, as: Int.self)
                return mapped
            }
            // Out of mappings: fall back to the ordinary allocator, which reports exhaustion itself.
        }
        #endif
        let raw = UnsafeMutableRawPointer.allocate(byteCount: byteCount, alignment: alignment)
        raw.storeBytes(of: 0, as: Int.self)
        return raw
    }

    @usableFromInline
    static func deallocateRaw(_ raw: UnsafeMutableRawPointer) {
        let mappedLength = raw.load(as: Int.self)
        #if canImport(Glibc) || canImport(Musl)
        if mappedLength > 0 {
            munmap(raw, mappedLength)
            return
        }
        #endif
        raw.deallocate()
    }
}
