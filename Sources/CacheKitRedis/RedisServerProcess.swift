import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A `redis-server` of a test's or benchmark's own: started from `PATH` on a free loopback port,
/// with its data in a temporary directory, stopped (and restarted on the same port) at will.
/// Without `persistent` it keeps nothing on disk; with it, an append-only file synced on every
/// write, so that what it acknowledged survives a SIGKILL.
package final class RedisServerProcess: @unchecked Sendable {
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    /// The path of `redis-server` on `PATH`, if any.
    package static let executable: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/redis-server"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }()

    package let port: Int
    package let password: String?
    package let persistent: Bool
    package let directory: URL
    private let lock = NSLock()
    private var process: Process?

    private init(port: Int, password: String?, persistent: Bool, directory: URL) {
        self.port = port
        self.password = password
        self.persistent = persistent
        self.directory = directory
    }

    /// Starts a server on a free loopback port, requiring `password` when given.
    package static func start(password: String? = nil, persistent: Bool = false) async throws -> RedisServerProcess {
        guard executable != nil else { throw Failure(description: "redis-server is not on PATH") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "cachekit-redis-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var lastError: (any Error)?
        for _ in 0..<5 {
            let server = RedisServerProcess(
                port: try freePort(),
                password: password,
                persistent: persistent,
                directory: directory
            )
            do {
                try await server.launch()
                return server
            } catch {
                lastError = error
            }
        }
        throw lastError ?? Failure(description: "redis-server did not start")
    }

    /// A configuration for this server (with its password), adjusted by `adjust`.
    package func configuration(_ adjust: (inout RedisConfiguration) -> Void = { _ in }) -> RedisConfiguration {
        var configuration = RedisConfiguration(host: "127.0.0.1", port: port, password: password)
        configuration.reconnectBackoff = RedisBackoff(initial: .milliseconds(20), maximum: .milliseconds(200))
        adjust(&configuration)
        return configuration
    }

    /// Stops the server and waits (at most 5 s, then SIGKILL) for it to exit: with `SIGKILL`
    /// at once, without a chance to write anything; otherwise with `SHUTDOWN NOSAVE`. (A signal
    /// such as SIGTERM may be blocked: a process started from a thread of the concurrency pool
    /// inherits its blocked signals.)
    package func stop(signal: Int32 = SIGTERM) {
        let running = lock.withLock {
            let running = process
            process = nil
            return running
        }
        guard let running else { return }
        if signal == SIGKILL {
            kill(running.processIdentifier, SIGKILL)
        } else {
            Self.send(password.map { "AUTH \($0)\r\nSHUTDOWN NOSAVE\r\n" } ?? "SHUTDOWN NOSAVE\r\n", port: port)
        }
        for _ in 0..<5_000 where running.isRunning { usleep(1_000) }
        if running.isRunning { kill(running.processIdentifier, SIGKILL) }
        running.waitUntilExit()
    }

    /// Starts the server again on the same port (after ``stop(signal:)``).
    package func restart() async throws {
        var lastError: (any Error)?
        for _ in 0..<50 {
            do {
                try await launch()
                return
            } catch {
                lastError = error
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        throw lastError ?? Failure(description: "redis-server did not restart")
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    private func launch() async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.executable!)
        // A log of this launch's own: another test's server may answer PING on this port (two
        // tests can be given the same free port), and only this log tells that ours is ready.
        let log = directory.appendingPathComponent("redis-\(port)-\(UUID().uuidString).log")
        var arguments = [
            "--port", String(port), "--bind", "127.0.0.1", "--dir", directory.path, "--save", "",
            "--appendonly", persistent ? "yes" : "no", "--appendfsync", "always", "--daemonize", "no",
            "--enable-debug-command", "local", "--logfile", log.path,
        ]
        if let password { arguments += ["--requirepass", password] }
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Polls until this server says it is ready and answers PING, for at most 10 s.
        for _ in 0..<400 {
            guard process.isRunning else { break }
            let ready = (try? String(contentsOf: log, encoding: .utf8))?.contains("Ready to accept connections") ?? false
            if ready, Self.answersPing(port: port), process.isRunning {
                lock.withLock { self.process = process }
                return
            }
            try await Task.sleep(for: .milliseconds(25))
        }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
        throw Failure(description: "redis-server on port \(port) did not answer PING")
    }

    /// A port no socket is bound to right now (the kernel's choice for port 0).
    package static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket() failed") }
        defer { close(fd) }
        var address = loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw Failure(description: "bind() failed") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw Failure(description: "getsockname() failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    /// Whether a server on `port` answers an inline PING with `+PONG` or, when it wants a password,
    /// `-NOAUTH`.
    private static func answersPing(port: Int) -> Bool {
        guard let reply = send("PING\r\n", port: port) else { return false }
        return reply.hasPrefix("+PONG") || reply.hasPrefix("-NOAUTH")
    }

    /// Sends `text` (inline commands) to the server on `port` and returns the start of its reply,
    /// or `nil` when it cannot be reached. Waits at most a second.
    @discardableResult
    private static func send(_ text: String, port: Int) -> String? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = loopback(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { return nil }
        let bytes = Array(text.utf8)
        guard write(fd, bytes, bytes.count) == bytes.count else { return nil }
        var reply = [UInt8](repeating: 0, count: 64)
        let count = read(fd, &reply, reply.count)
        guard count > 0 else { return nil }
        return String(decoding: reply[..<count], as: UTF8.self)
    }
}
