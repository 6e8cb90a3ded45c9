#if Redis
extension RedisClient {
    /// The value of `key`, or `nil` when it has none (`GET`).
    public func get(_ key: String) async throws(RedisError) -> [UInt8]? {
        let reply = try await send("GET", [RedisArgument(key)])
        switch reply {
        case .null: return nil
        case .blobString(let bytes): return bytes
        default: throw .unexpectedReply(command: "GET", reply: reply.description)
        }
    }

    /// The values of `keys`, in their order, `nil` for a key without one (`MGET`).
    public func mget(_ keys: [String]) async throws(RedisError) -> [[UInt8]?] {
        guard !keys.isEmpty else { return [] }
        let reply = try await send("MGET", keys.map(RedisArgument.init(_:)))
        guard case .array(let elements) = reply, elements.count == keys.count else {
            throw .unexpectedReply(command: "MGET", reply: reply.description)
        }
        var values: [[UInt8]?] = []
        values.reserveCapacity(elements.count)
        for element in elements {
            switch element {
            case .null: values.append(nil)
            case .blobString(let bytes): values.append(bytes)
            default: throw .unexpectedReply(command: "MGET", reply: reply.description)
            }
        }
        return values
    }

    /// Sets `key` to `value`, expiring after `expiresAfter` when given (`SET key value PX ms`, the
    /// milliseconds rounded up and at least 1).
    public func set(_ key: String, to value: [UInt8], expiresAfter: Duration? = nil) async throws(RedisError) {
        var arguments = [RedisArgument(key), RedisArgument(value)]
        if let expiresAfter {
            arguments += ["PX", RedisArgument(Self.milliseconds(expiresAfter))]
        }
        let reply = try await send("SET", arguments)
        guard case .simpleString("OK") = reply else {
            throw .unexpectedReply(command: "SET", reply: reply.description)
        }
    }

    /// Deletes `keys`; returns how many existed (`DEL`).
    @discardableResult
    public func del(_ keys: [String]) async throws(RedisError) -> Int {
        guard !keys.isEmpty else { return 0 }
        return try await integer("DEL", keys.map(RedisArgument.init(_:)))
    }

    /// Deletes `keys`, reclaiming their memory in the background; returns how many existed
    /// (`UNLINK`).
    @discardableResult
    public func unlink(_ keys: [String]) async throws(RedisError) -> Int {
        guard !keys.isEmpty else { return 0 }
        return try await integer("UNLINK", keys.map(RedisArgument.init(_:)))
    }

    /// Makes `key` expire after `after` (`PEXPIRE`, milliseconds rounded up); `false` when the key
    /// does not exist.
    @discardableResult
    public func expire(_ key: String, after: Duration) async throws(RedisError) -> Bool {
        try await integer("PEXPIRE", [RedisArgument(key), RedisArgument(Self.milliseconds(after))]) == 1
    }

    /// One step of an iteration over the keys (`SCAN`): start with cursor `"0"`, and continue with the
    /// returned cursor until it is `"0"` again. A key may be returned more than once.
    public func scan(
        cursor: String,
        match: String? = nil,
        count: Int? = nil
    ) async throws(RedisError) -> (
        cursor: String, keys: [String]
    ) {
        var arguments = [RedisArgument(cursor)]
        if let match { arguments += ["MATCH", RedisArgument(match)] }
        if let count { arguments += ["COUNT", RedisArgument(count)] }
        let reply = try await send("SCAN", arguments)
        guard case .array(let parts) = reply, parts.count == 2, let next = parts[0].string,
            let keys = parts[1].elements
        else { throw .unexpectedReply(command: "SCAN", reply: reply.description) }
        var names: [String] = []
        for key in keys {
            guard let name = key.string else { throw .unexpectedReply(command: "SCAN", reply: reply.description) }
            names.append(name)
        }
        return (next, names)
    }

    /// Publishes `message` on `channel`; returns how many subscribers received it (`PUBLISH`).
    @discardableResult
    public func publish(_ channel: String, _ message: [UInt8]) async throws(RedisError) -> Int {
        try await integer("PUBLISH", [RedisArgument(channel), RedisArgument(message)])
    }

    /// Checks that the server answers (`PING`).
    public func ping() async throws(RedisError) {
        let reply = try await send("PING", [])
        guard case .simpleString("PONG") = reply else {
            throw .unexpectedReply(command: "PING", reply: reply.description)
        }
    }

    private func integer(_ command: String, _ arguments: [RedisArgument]) async throws(RedisError) -> Int {
        let reply = try await send(command, arguments)
        guard case .integer(let value) = reply else {
            throw .unexpectedReply(command: command, reply: reply.description)
        }
        return Int(value)
    }

    /// `duration` in whole milliseconds, rounded up, at least 1.
    static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, attoseconds >= 0 else { return 1 }
        let (wholeSeconds, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return Int.max }
        let perMillisecond: Int64 = 1_000_000_000_000_000
        let fraction = attoseconds / perMillisecond + (attoseconds % perMillisecond == 0 ? 0 : 1)
        return max(1, Int(wholeSeconds.addingReportingOverflow(fraction).partialValue))
    }
}
#endif
