/// Why a memory-pressure source could not give a reading.
public enum MemoryPressureSourceError: Error, Hashable, Sendable, CustomStringConvertible {
    /// None of the files the source watches could be read (`tried` lists them), so it has
    /// nothing to judge the pressure by.
    case nothingReadable(tried: [String])
    /// A file did not have the expected format. `line` counts from 1.
    case malformed(file: String, line: Int, reason: String)
    /// This platform has no memory-pressure source built in; supply your own ``MemoryPressureSource``.
    case unsupportedPlatform

    public var description: String {
        switch self {
        case .nothingReadable(let tried):
            "no memory-pressure file is readable (tried \(tried.joined(separator: ", ")))"
        case .malformed(let file, let line, let reason):
            "\(file):\(line): \(reason)"
        case .unsupportedPlatform:
            "no built-in memory-pressure source on this platform"
        }
    }
}
