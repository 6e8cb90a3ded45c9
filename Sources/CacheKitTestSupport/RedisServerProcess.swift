#if Redis
import CacheKitRedis
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
    private var pid: pid_t?

    private init(port: Int, password: String?, persistent: Bool, directory: URL) {
        self.port = port
        self.password = password
        self.persistent = persistent
        self.directory = directory
    }

    /// Starts a server on a free loopback port, requiring `password` when given.
    package static func start(password: String? = nil, persistent: Bool = false) async throws -> RedisServerProcess {
        guard executable != nil else { throw Failure(description: "redis-server is not on PATH") }
        var lastError: (any Error)?
        // Another process may take the port between the probe and the server's bind: try others.
        for _ in 0..<5 {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "cachekit-redis-\(UUID().uuidString)"
            )
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
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

    /// Stops the server: SIGTERM (or `signal`), then waits for it to exit.
    package func stop(signal: Int32 = SIGTERM) {
        let running = lock.withLock {
            let running = pid
            pid = nil
            return running
        }
        guard let running else { return }
        kill(running, signal)
        // A server stopped by `freeze()` acts on the signal only once it runs again.
        kill(running, SIGCONT)
        var status: Int32 = 0
        while waitpid(running, &status, 0) == -1 && errno == EINTR {}
    }

    /// Stops the server's process (SIGSTOP): its connections stay open and nothing answers until
    /// ``thaw()``, however long the test takes to notice.
    package func freeze() {
        if let running = lock.withLock({ pid }) { kill(running, SIGSTOP) }
    }

    /// Lets a frozen server run again (SIGCONT).
    package func thaw() {
        if let running = lock.withLock({ pid }) { kill(running, SIGCONT) }
    }

    /// Kills the server (SIGKILL): its connections drop without a goodbye.
    package func crash() {
        stop(signal: SIGKILL)
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
        // A log of this launch's own: another server may answer PING on this port (two callers
        // can be given the same free port), and only this log tells that ours is ready.
        let logFile = directory.appendingPathComponent("redis-\(port)-\(UUID().uuidString).log")
        var arguments = [
            Self.executable!, "--port", String(port), "--bind", "127.0.0.1", "--dir", directory.path, "--save", "",
            "--appendonly", persistent ? "yes" : "no", "--appendfsync", "always", "--daemonize", "no",
            "--enable-debug-command", "local", "--logfile", logFile.path,
        ]
        if let password { arguments += ["--requirepass", password] }
        let child = try Self.spawn(arguments)
        // Polls until the server answers PING, for at most 10 s.
        for _ in 0..<400 {
            var status: Int32 = 0
            let waited = waitpid(child, &status, WNOHANG)
            guard waited == 0 || (waited == -1 && errno == ECHILD && kill(child, 0) == 0) else {
                let log = try? String(contentsOf: logFile, encoding: .utf8)
                throw Failure(description: "redis-server on port \(port) exited: \(log ?? "")")
            }
            let ready = (try? String(contentsOf: logFile, encoding: .utf8))?.contains("Ready to accept") ?? false
            if ready, Self.answersPing(port: port) {
                lock.withLock { pid = child }
                return
            }
            try await Task.sleep(for: .milliseconds(25))
        }
        kill(child, SIGKILL)
        var status: Int32 = 0
        waitpid(child, &status, 0)
        throw Failure(description: "redis-server on port \(port) did not answer PING")
    }

    /// Starts `arguments[0]` with the default signal mask and dispositions (a test runner's threads
    /// may block SIGTERM, and a child inherits the mask of the thread that spawns it).
    private static func spawn(_ arguments: [String]) throws -> pid_t {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGTERM)
        sigaddset(&defaults, SIGINT)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var child: pid_t = 0
        let result = posix_spawn(&child, arguments[0], &actions, &attributes, &argv, environ)
        guard result == 0 else { throw Failure(description: "posix_spawn failed: \(result)") }
        return child
    }

    /// A port no socket is bound to right now (the kernel's choice for port 0).
    package static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket() failed") }
        defer { close(fd) }
        var address = loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { throw Failure(description: "bind() failed") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw Failure(description: "getsockname() failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    package static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    /// Whether a server on `port` answers an inline PING with `+PONG` or, when it wants a password,
    /// `-NOAUTH`.
    private static func answersPing(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = loopback(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { return false }
        let ping = Array("PING\r\n".utf8)
        guard write(fd, ping, ping.count) == ping.count else { return false }
        var reply = [UInt8](repeating: 0, count: 64)
        let count = read(fd, &reply, reply.count)
        guard count > 0 else { return false }
        let text = String(decoding: reply[..<count], as: UTF8.self)
        return text.hasPrefix("+PONG") || text.hasPrefix("-NOAUTH")
    }
}
#endif
