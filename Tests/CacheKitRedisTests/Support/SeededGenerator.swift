#if Redis
import CacheKitTestSupport

/// The tests' seeded generator (SplitMix64), from CacheKitTestSupport.
typealias SeededGenerator = CacheKitTestSupport.SeededGenerator
#endif
