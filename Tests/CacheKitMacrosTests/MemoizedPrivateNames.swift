#if Macros
import CacheKitMacros

// A private function named like one in MemoizedBehaviourTests.swift, sharing its cache: the two
// must not answer each other's calls (their identities start with their files).

@Memoized(cache: PrivateNames.cache)
private func describe(id: Int) -> String { "second file \(id)" }

/// `describe(id:)` of this file, for the test in MemoizedBehaviourTests.swift.
func describeFromSecondFile(_ id: Int) -> String { describe(id: id) }
#endif
