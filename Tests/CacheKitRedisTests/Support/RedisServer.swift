#if Redis
import CacheKitRedis
import CacheKitTestSupport
import Foundation
import Testing

/// The tests' own `redis-server` (see `RedisServerProcess`): started on a free loopback port and
/// stopped by each test.
///
/// ```swift
/// @Test(.enabled(if: RedisServer.shouldRun, RedisServer.skipMessage))
/// func roundTrip() async throws {
///     let server = try await RedisServer.start()
///     defer { server.stop() }
///     let client = RedisClient(configuration: server.configuration())
///     ...
/// }
/// ```
typealias RedisServer = RedisServerProcess

extension RedisServerProcess {
    /// Whether the Redis tests run: where `redis-server` is installed, and always in CI (where a
    /// missing server fails them instead of skipping them).
    static var shouldRun: Bool {
        executable != nil || ProcessInfo.processInfo.environment["CI"] == "true"
    }

    /// Why the Redis tests are skipped.
    static let skipMessage: Comment =
        "redis-server is not on PATH (apt-get install redis-server); these tests run in CI"
}
#endif
