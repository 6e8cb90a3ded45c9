#if Redis
import CacheKit
import Synchronization

/// A Redis client: a small pool of pipelined connections, opened lazily.
///
/// ```swift
/// let client = RedisClient(configuration: RedisConfiguration(port: 6379))
/// try await client.set("user:42", to: Array("Ada".utf8), expiresAfter: .seconds(300))
/// let name = try await client.get("user:42")   // [UInt8]? ("Ada")
/// let reply = try await client.send("HINCRBY", ["counters", "hits", 1])
/// await client.close()
/// ```
///
/// Each command goes to one of ``RedisConfiguration/poolSize`` connections in turn; a connection
/// writes each command as it comes, without waiting for the replies of earlier ones (pipelining),
/// and matches replies to commands in order. Commands that need one connection for several
/// commands (`MULTI`/`EXEC`, `WATCH`) need a client with a pool of one.
///
/// Failures are typed (``RedisError``): a command without a reply within
/// ``RedisConfiguration/commandTimeout`` fails with ``RedisError/timeout(command:after:)`` and closes
/// its connection; a connection that closes fails every command in flight on it with
/// ``RedisError/connectionClosed(reason:)``. No command is ever sent again on its own: it may have
/// run. The next command opens a new connection; after a failed attempt, commands fail at once with
/// ``RedisError/connectionFailed(host:port:reason:)`` until the backoff delay has passed.
///
/// A command whose task is cancelled still waits for its reply (or its timeout): its connection
/// cannot skip a reply.
public final class RedisClient: Sendable {
    /// The configuration the connections use.
    public let configuration: RedisConfiguration

    private enum Slot {
        /// No connection; after `failures` failed attempts in a row, the next one may start at
        /// `retryAt`.
        case idle(failures: Int, retryAt: ContinuousClock.Instant?, lastError: RedisError?)
        case connecting(Task<Result<RedisConnection, RedisError>, Never>)
        case connected(RedisConnection)
    }

    private struct State {
        var slots: [Slot]
        var next = 0
        var isClosed = false
    }

    private enum Acquisition {
        case use(RedisConnection)
        case wait(Task<Result<RedisConnection, RedisError>, Never>)
        case fail(RedisError)
    }

    private let state: _Mutex<State>

    /// A client for the server `configuration` names. Connects on the first command, not here.
    public init(configuration: RedisConfiguration) {
        self.configuration = configuration
        self.state = _Mutex(
            State(
                slots: Array(repeating: .idle(failures: 0, retryAt: nil, lastError: nil), count: configuration.poolSize)
            )
        )
    }

    /// Sends any command and returns its reply; an error reply is thrown as
    /// ``RedisError/server(message:)``.
    ///
    /// ```swift
    /// let length = try await client.send("STRLEN", ["greeting"])   // .integer(5)
    /// ```
    public func send(_ command: String, _ arguments: [RedisArgument] = []) async throws(RedisError) -> RESPValue {
        let connection = try await acquire()
        return try await connection.send(command, arguments)
    }

    /// Closes every connection: commands in flight fail, later ones throw ``RedisError/closed``.
    public func close() async {
        let (connections, tasks) = state.withLock { state in
            state.isClosed = true
            var connections: [RedisConnection] = []
            var tasks: [Task<Result<RedisConnection, RedisError>, Never>] = []
            for slot in state.slots {
                switch slot {
                case .connected(let connection): connections.append(connection)
                case .connecting(let task): tasks.append(task)
                case .idle: break
                }
            }
            state.slots = state.slots.map { _ in .idle(failures: 0, retryAt: nil, lastError: nil) }
            return (connections, tasks)
        }
        for connection in connections {
            await connection.closeAndWait()
        }
        for task in tasks {
            if case .success(let connection) = await task.value {
                await connection.closeAndWait()
            }
        }
    }

    deinit {
        // A client dropped without `close()` still closes its connections (a connection being opened
        // holds the client, so none is).
        let connections = state.withLock { state in
            state.slots.compactMap { slot -> RedisConnection? in
                if case .connected(let connection) = slot { return connection }
                return nil
            }
        }
        for connection in connections {
            connection.close()
        }
    }

    // MARK: The pool

    private func acquire() async throws(RedisError) -> RedisConnection {
        let now = ContinuousClock.now
        let acquisition = state.withLock { state -> Acquisition in
            guard !state.isClosed else { return .fail(.closed) }
            let index = state.next % state.slots.count
            state.next &+= 1
            switch state.slots[index] {
            case .connected(let connection) where connection.isActive:
                return .use(connection)
            case .connecting(let task):
                return .wait(task)
            case .idle(let failures, let retryAt, let lastError):
                if let retryAt, now < retryAt {
                    // Another open connection serves while this one waits out its backoff.
                    for slot in state.slots {
                        if case .connected(let connection) = slot, connection.isActive { return .use(connection) }
                    }
                    return .fail(
                        .connectionFailed(
                            host: configuration.host,
                            port: configuration.port,
                            reason:
                                "waiting to retry after \(failures) failed attempts: \(lastError?.description ?? "")"
                        )
                    )
                }
                let task = startConnecting(slot: index, failures: failures)
                state.slots[index] = .connecting(task)
                return .wait(task)
            case .connected:
                let task = startConnecting(slot: index, failures: 0)
                state.slots[index] = .connecting(task)
                return .wait(task)
            }
        }
        switch acquisition {
        case .use(let connection): return connection
        case .fail(let error): throw error
        case .wait(let task): return try await task.value.get()
        }
    }

    private func startConnecting(slot index: Int, failures: Int) -> Task<Result<RedisConnection, RedisError>, Never> {
        Task { [configuration] in
            let result = await RedisConnection.open(configuration)
            return await self.finishConnecting(slot: index, failures: failures, result: result)
        }
    }

    private func finishConnecting(
        slot index: Int,
        failures: Int,
        result: Result<RedisConnection, RedisError>
    ) async -> Result<RedisConnection, RedisError> {
        let backoff = configuration.reconnectBackoff
        let isClosed = state.withLock { state in
            guard !state.isClosed else { return true }
            switch result {
            case .success(let connection):
                state.slots[index] = .connected(connection)
            case .failure(let error):
                let delay = backoff.delay(afterFailures: failures + 1)
                state.slots[index] = .idle(failures: failures + 1, retryAt: .now + delay, lastError: error)
            }
            return false
        }
        guard isClosed else { return result }
        if case .success(let connection) = result {
            await connection.closeAndWait()
        }
        return .failure(.closed)
    }
}
#endif
