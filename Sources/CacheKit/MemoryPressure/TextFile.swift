#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Small text files (`/proc`, `/sys/fs/cgroup`) read with POSIX calls, so the core module needs
/// no Foundation for them.
enum TextFile {
    /// The file's contents, or `nil` if it cannot be opened or read (missing, a directory, no
    /// permission). Reads until end of file: `/proc` files report a size of 0.
    static func contents(of path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 1 << 20 {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if count == 0 { break }
            bytes.append(contentsOf: buffer[..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Whether something exists at `path`.
    static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// `root` and `relative` joined with exactly one `/` between components (absolute if `root` is).
    static func join(_ root: String, _ relative: String...) -> String {
        let parts = ([root] + relative).flatMap { $0.split(separator: "/", omittingEmptySubsequences: true) }
        return (root.hasPrefix("/") ? "/" : "") + parts.joined(separator: "/")
    }

    /// The non-empty lines of `text` with their 1-based line numbers.
    static func numberedLines(_ text: String) -> [(number: Int, text: Substring)] {
        text.split(separator: "\n", omittingEmptySubsequences: false).enumerated().compactMap { index, line in
            let trimmed = line.drop { $0 == " " || $0 == "\t" }
            return trimmed.isEmpty ? nil : (index + 1, line)
        }
    }
}
