#if Observability
import CacheKit
import Logging

/// Turns cache activity into swift-log messages: one message per hit, miss, write, removal and
/// load, each at its own level and with structured metadata.
///
/// ```swift
/// let logging = CacheActivityLogger(label: "images", logger: logger, keys: .redacted)
/// cache.enableMonitoring(CacheMonitor(logging: logging))
/// ```
///
/// ## Messages
/// | activity | message | level (default) | metadata |
/// | --- | --- | --- | --- |
/// | hit | `cache hit` | `trace` | `cache`, `key` |
/// | miss | `cache miss` | `trace` | `cache`, `key` |
/// | write | `cache write` | `trace` | `cache`, `key`, `cost` |
/// | eviction (for count, cost or memory pressure) | `cache removal` | `debug` | `cache`, `key`, `reason` |
/// | expiry | `cache removal` | `debug` | `cache`, `key`, `reason` |
/// | other removal (replaced, removed, removed all) | `cache removal` | `trace` | `cache`, `key`, `reason` |
/// | load that returned a value | `cache load` | `debug` | `cache`, `key`, `duration` |
/// | load that threw | `cache load failed` | `warning` | `cache`, `key`, `duration`, `error` |
///
/// `cache` is the label, `key` is `"\(key)"` (left out with ``KeyLogging/redacted``), `reason` is the
/// `RemovalReason`'s raw value (`evictedForCount`, `expired`, ...), `duration` is the `Duration`'s
/// description (`0.0125 seconds`). A failed load also passes its error as the log event's `error`.
/// ``Levels`` changes any level or silences an activity.
///
/// ## Cost
/// Every activity first compares its level with `logger.logLevel`; when the level is filtered out,
/// nothing else happens: no metadata is built and the key is never turned into a string. With the
/// defaults and a logger at `info`, a hit or a miss costs one log-level read.
public struct CacheActivityLogger: Sendable {
    /// Whether messages carry the key.
    public enum KeyLogging: Hashable, Sendable {
        /// Each message has a `key` metadata value, `"\(key)"`.
        case logged
        /// Messages carry no `key` metadata, and the key is never turned into a string: for keys
        /// that are personal data, credentials or too long to log.
        case redacted
    }

    /// The level each kind of activity is logged at; `nil` logs nothing for it.
    ///
    /// The defaults follow swift-server's logging guidance for libraries: the steady stream of
    /// hits, misses, writes and explicit removals at `trace`, the decisions the cache makes
    /// (evictions, expiries) and loads at `debug`. A failed load is a `warning` because a
    /// background refresh (`Expiration.refreshAfterWrite`) has no caller to throw its error to:
    /// this message may be the only trace of it. If your callers log the errors they receive, set
    /// ``failedLoad`` to `.debug`.
    public struct Levels: Hashable, Sendable {
        /// A read that found its key. Default `trace`.
        public var hit: Logger.Level?
        /// A read that did not find its key. Default `trace`.
        public var miss: Logger.Level?
        /// A value stored. Default `trace`.
        public var write: Logger.Level?
        /// An entry evicted for count, for cost or for memory pressure
        /// (`RemovalReason.isEviction`). Default `debug`.
        public var eviction: Logger.Level?
        /// An entry that expired. Default `debug`.
        public var expiry: Logger.Level?
        /// An entry replaced, removed or cleared by `removeAll()`. Default `trace`.
        public var removal: Logger.Level?
        /// A loader or `orInsert` closure that returned a value. Default `debug`.
        public var load: Logger.Level?
        /// A loader or `orInsert` closure that threw. Default `warning`.
        public var failedLoad: Logger.Level?

        /// Creates a set of levels; every argument defaults to the level documented on its property.
        public init(
            hit: Logger.Level? = .trace,
            miss: Logger.Level? = .trace,
            write: Logger.Level? = .trace,
            eviction: Logger.Level? = .debug,
            expiry: Logger.Level? = .debug,
            removal: Logger.Level? = .trace,
            load: Logger.Level? = .debug,
            failedLoad: Logger.Level? = .warning
        ) {
            self.hit = hit
            self.miss = miss
            self.write = write
            self.eviction = eviction
            self.expiry = expiry
            self.removal = removal
            self.load = load
            self.failedLoad = failedLoad
        }

        /// The documented defaults.
        public static var `default`: Levels { Levels() }

        /// The level `activity` is logged at, or `nil` if it is not logged.
        public func level<Key>(for activity: CacheActivity<Key>) -> Logger.Level? {
            switch activity {
            case .hit: hit
            case .miss: miss
            case .write: write
            case .removal(_, let reason):
                if reason == .expired {
                    expiry
                } else if reason.isEviction {
                    eviction
                } else {
                    removal
                }
            case .load(_, _, let error): error == nil ? load : failedLoad
            }
        }
    }

    /// The cache's name, logged as the `cache` metadata value of every message.
    public var label: String
    /// The logger messages go to. Its level, handler and metadata apply as usual.
    public var logger: Logger
    /// Whether messages carry the key.
    public var keys: KeyLogging
    /// The level of each kind of activity.
    public var levels: Levels

    /// Creates an activity logger.
    ///
    /// - Parameters:
    ///   - label: The cache's name, the `cache` metadata value of every message.
    ///   - logger: Where messages go.
    ///   - keys: ``KeyLogging/logged`` (the default) or ``KeyLogging/redacted``.
    ///   - levels: The level of each kind of activity. Defaults to ``Levels/default``.
    public init(label: String, logger: Logger, keys: KeyLogging = .logged, levels: Levels = .default) {
        self.label = label
        self.logger = logger
        self.keys = keys
        self.levels = levels
    }

    /// Logs one activity, if its level passes `logger.logLevel`.
    ///
    /// - Complexity: O(1) when the level is filtered out; otherwise O(1) plus describing the key
    ///   and the log handler's work.
    public func log<Key>(_ activity: CacheActivity<Key>) {
        guard let level = levels.level(for: activity), logger.logLevel <= level else { return }
        var metadata: Logger.Metadata = ["cache": .string(label)]
        if keys == .logged {
            metadata["key"] = .string("\(activity.key)")
        }
        let message: Logger.Message
        var failure: (any Error)?
        switch activity {
        case .hit:
            message = "cache hit"
        case .miss:
            message = "cache miss"
        case .write(_, let cost):
            message = "cache write"
            metadata["cost"] = .stringConvertible(cost)
        case .removal(_, let reason):
            message = "cache removal"
            metadata["reason"] = .string(reason.rawValue)
        case .load(_, let duration, let error):
            metadata["duration"] = .string(duration.description)
            if let error {
                message = "cache load failed"
                // Also as metadata: handlers written before swift-log 1.16 never see `error:`.
                metadata["error"] = .string("\(error)")
                failure = error
            } else {
                message = "cache load"
            }
        }
        logger.log(level: level, message, error: failure, metadata: metadata)
    }
}
#endif
