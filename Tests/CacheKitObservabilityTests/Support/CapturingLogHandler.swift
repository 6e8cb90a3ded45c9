#if Observability
import Logging
import Synchronization

/// One message a ``CapturingLogHandler`` received.
struct LogRecord: Sendable {
    var level: Logger.Level
    var message: String
    /// The handler's metadata merged with the message's.
    var metadata: Logger.Metadata
    var error: (any Error)?

    /// `level message key=value ...`, metadata sorted by key, leaving out `duration` (which varies).
    var summary: String {
        let pairs = metadata.filter { $0.key != "duration" }.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        return ([level.rawValue, message] + pairs).joined(separator: " ")
    }
}

/// Where the loggers a test makes put their messages.
final class LogStore: Sendable {
    private let storage = Mutex<[LogRecord]>([])

    /// Every message so far, oldest first.
    var records: [LogRecord] { storage.withLock { $0 } }

    /// ``LogRecord/summary`` of every message so far.
    var summaries: [String] { records.map(\.summary) }

    func append(_ record: LogRecord) { storage.withLock { $0.append(record) } }

    /// A logger at `level` whose messages land here.
    func logger(level: Logger.Level = .trace) -> Logger {
        var logger = Logger(label: "CacheKitObservabilityTests") { _ in CapturingLogHandler(store: self) }
        logger.logLevel = level
        return logger
    }
}

/// A log handler that keeps every message in a ``LogStore``.
struct CapturingLogHandler: LogHandler {
    let store: LogStore
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        store.append(
            LogRecord(
                level: event.level,
                message: event.message.description,
                metadata: metadata.merging(event.metadata ?? [:]) { $1 },
                error: event.error
            )
        )
    }
}
#endif
