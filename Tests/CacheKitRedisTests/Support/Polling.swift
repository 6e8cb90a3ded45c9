#if Redis
import CacheKitRedis

/// Retries `body` until it succeeds, for at most `timeout` (generous: a full
/// parallel test run can keep the task from running for many seconds); returns its last error otherwise.
@discardableResult
func eventually<T>(
    timeout: Duration = .seconds(60),
    _ body: () async throws(RedisError) -> T
) async throws(RedisError) -> T {
    let deadline = ContinuousClock.now + timeout
    while true {
        do {
            return try await body()
        } catch {
            if ContinuousClock.now >= deadline { throw error }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }
}

/// Whether `error` is ``RedisError/connectionClosed(reason:)``.
func isConnectionClosed(_ error: any Error) -> Bool {
    if case .connectionClosed = error as? RedisError { return true }
    return false
}
#endif
