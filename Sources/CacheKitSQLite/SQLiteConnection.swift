// A thin layer over the SQLite C API: one connection, its prepared statements kept for reuse, and
// SQLite's result codes turned into CacheStoreError. Not thread-safe: SQLiteStore uses it under
// its lock only.
//
// SQL written in the source is a `SQL`: its statement is found by the address of the literal, a
// one-word hash, where hashing the text would cost more than a small query's own work. SQL built
// at run time is prepared once as a `SQLiteStatement` and run through that.
#if SQLite

import CSQLite
import CacheKit
import Foundation

/// Tells SQLite to copy bound bytes before the bind call returns.
private let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// One open SQLite connection and the statements prepared on it.
package final class SQLiteConnection {
    /// The database file, as errors name it.
    package let path: String
    private var handle: OpaquePointer?
    /// Prepared statements of SQL literals, by the literal's address; reset after each use and
    /// finalized at close.
    private var literalStatements: [UnsafeRawPointer: OpaquePointer] = [:]
    /// Prepared statements of SQL built at run time, by their text; finalized at close.
    private var textStatements: [String: OpaquePointer] = [:]

    /// Opens (or creates) the database at `path` for reading and writing.
    package init(path: String) throws(CacheStoreError) {
        self.path = path
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let code = sqlite3_open_v2(path, &handle, flags, nil)
        guard code == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
            sqlite3_close_v2(handle)
            throw Self.error(path: path, code: code, message: message)
        }
        self.handle = handle
        // Another program reading the file may briefly hold a lock SQLite needs: wait for it.
        sqlite3_busy_timeout(handle, 5_000)
        // SQLite falls back to read-only when the file cannot be written; a store must write.
        if sqlite3_db_readonly(handle, "main") == 1 {
            close()
            throw .database(path: path, code: SQLITE_READONLY, message: "the database file cannot be written")
        }
    }

    deinit { close() }

    /// Whether the connection is still open.
    package var isOpen: Bool { handle != nil }

    /// Finalizes every statement and closes the connection; harmless when already closed.
    package func close() {
        for statement in literalStatements.values { sqlite3_finalize(statement) }
        for statement in textStatements.values { sqlite3_finalize(statement) }
        literalStatements.removeAll()
        textStatements.removeAll()
        if let handle { sqlite3_close_v2(handle) }
        handle = nil
    }

    /// How many rows the last INSERT, UPDATE or DELETE changed.
    package var changes: Int { handle.map { Int(sqlite3_changes64($0)) } ?? 0 }

    /// Runs `sql` (one or more statements without parameters or results).
    package func execute(_ sql: String) throws(CacheStoreError) {
        guard let handle else { throw .closed(path: path) }
        let code = sqlite3_exec(handle, sql, nil, nil, nil)
        if code != SQLITE_OK { throw failure(code) }
    }

    /// Runs `sql` with `bindings`, handing each result row to `row`, reusing its prepared
    /// statement.
    package func run(
        _ sql: SQL,
        _ bindings: [SQLiteValue] = [],
        row: (SQLiteRow) throws(CacheStoreError) -> Void = { _ in }
    ) throws(CacheStoreError) {
        try run(prepared(sql), bindings, row: row)
    }

    /// Runs `statement` with `bindings`, handing each result row to `row`.
    package func run(
        _ statement: SQLiteStatement,
        _ bindings: [SQLiteValue] = [],
        row: (SQLiteRow) throws(CacheStoreError) -> Void = { _ in }
    ) throws(CacheStoreError) {
        guard handle != nil else { throw .closed(path: path) }
        try run(statement.handle, bindings, row: row)
    }

    private func run(
        _ statement: OpaquePointer,
        _ bindings: [SQLiteValue],
        row: (SQLiteRow) throws(CacheStoreError) -> Void
    ) throws(CacheStoreError) {
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (offset, value) in bindings.enumerated() {
            let code = value.bind(to: statement, at: Int32(offset + 1))
            if code != SQLITE_OK { throw failure(code) }
        }
        while true {
            let code = sqlite3_step(statement)
            if code == SQLITE_DONE { return }
            guard code == SQLITE_ROW else { throw failure(code) }
            try row(SQLiteRow(statement: statement))
        }
    }

    /// The first column of the first row `sql` returns, as an integer (0 when there is none).
    package func integer(_ sql: String, _ bindings: [SQLiteValue] = []) throws(CacheStoreError) -> Int64 {
        var result: Int64 = 0
        var seen = false
        try run(statement(sql), bindings) { row in
            if !seen { result = row.integer(0) }
            seen = true
        }
        return result
    }

    /// The prepared statement of `sql`, SQL built at run time: prepared at its first use, kept
    /// until the connection closes.
    package func statement(_ sql: String) throws(CacheStoreError) -> SQLiteStatement {
        if let statement = textStatements[sql] { return SQLiteStatement(handle: statement) }
        let statement = try prepare(sql)
        textStatements[sql] = statement
        return SQLiteStatement(handle: statement)
    }

    /// Begins a write transaction, taking the write lock at once.
    package func begin() throws(CacheStoreError) { try run("BEGIN IMMEDIATE") }

    /// Commits the open transaction.
    package func commit() throws(CacheStoreError) { try run("COMMIT") }

    /// Rolls back the open transaction, if any; errors are ignored (SQLite may already have
    /// rolled it back itself).
    package func rollback() {
        guard let handle, sqlite3_get_autocommit(handle) == 0 else { return }
        _ = sqlite3_exec(handle, "ROLLBACK", nil, nil, nil)
    }

    private func prepared(_ sql: SQL) throws(CacheStoreError) -> OpaquePointer {
        if let statement = literalStatements[sql.address] { return statement }
        let statement = try prepare(sql.text)
        literalStatements[sql.address] = statement
        return statement
    }

    private func prepare(_ sql: String) throws(CacheStoreError) -> OpaquePointer {
        guard let handle else { throw .closed(path: path) }
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard code == SQLITE_OK, let statement else { throw failure(code) }
        return statement
    }

    /// The error for result `code`, with SQLite's message for this connection.
    package func failure(_ code: Int32) -> CacheStoreError {
        let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
        return Self.error(path: path, code: code, message: message)
    }

    /// A damaged or foreign file is `corrupted`; any other failure is a `database` error.
    static func error(path: String, code: Int32, message: String) -> CacheStoreError {
        switch code & 0xFF {
        case SQLITE_NOTADB, SQLITE_CORRUPT:
            .corrupted(path: path, reason: "\(message) (SQLite result code \(code))")
        default:
            .database(path: path, code: code, message: message)
        }
    }

    /// Ends the reason of a `corrupted` error for a file whose application id says it is a
    /// store's but whose schema does not match: damage, as opposed to someone else's database.
    static let ownDamage = "; the file is a store's, damaged"

    /// Whether `error` is damage to the file: SQLite's own finding that it is damaged or not a
    /// database (`SQLITE_CORRUPT`, `SQLITE_NOTADB`), or a store's file whose schema does not
    /// match (``ownDamage``); as opposed to a database that is whole but not a store's.
    static func isDamage(_ error: CacheStoreError) -> Bool {
        guard case .corrupted(_, let reason) = error else { return false }
        if reason.hasSuffix(ownDamage) { return true }
        guard reason.hasSuffix(")"),
            let start = reason.range(of: "(SQLite result code ", options: .backwards),
            let code = Int32(reason[start.upperBound...].dropLast())
        else { return false }
        return [SQLITE_NOTADB, SQLITE_CORRUPT].contains(code & 0xFF)
    }
}

/// SQL written as a literal in the source. The connection keeps its prepared statement by the
/// literal's address, which never changes while the program runs.
package struct SQL: ExpressibleByStringLiteral {
    fileprivate let literal: StaticString

    package init(stringLiteral literal: StaticString) {
        precondition(literal.hasPointerRepresentation, "SQL: SQL must be a string literal")
        self.literal = literal
    }

    fileprivate var address: UnsafeRawPointer { UnsafeRawPointer(literal.utf8Start) }
    fileprivate var text: String { literal.description }
}

/// A statement prepared on a connection from SQL built at run time; valid until the connection
/// closes.
package struct SQLiteStatement {
    fileprivate let handle: OpaquePointer
}

/// A value bound to a statement parameter.
package enum SQLiteValue {
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)
    case null

    fileprivate func bind(to statement: OpaquePointer, at index: Int32) -> Int32 {
        switch self {
        case .integer(let value):
            return sqlite3_bind_int64(statement, index, value)
        case .real(let value):
            return sqlite3_bind_double(statement, index, value)
        case .text(let value):
            var value = value
            return value.withUTF8 { bytes in
                guard let start = bytes.baseAddress else {
                    return sqlite3_bind_text(statement, index, "", 0, transient)
                }
                return sqlite3_bind_text64(statement, index, start, UInt64(bytes.count), transient, UInt8(SQLITE_UTF8))
            }
        case .blob(let value):
            if value.isEmpty { return sqlite3_bind_zeroblob(statement, index, 0) }
            return value.withUnsafeBytes { bytes in
                sqlite3_bind_blob64(statement, index, bytes.baseAddress, UInt64(bytes.count), transient)
            }
        case .null:
            return sqlite3_bind_null(statement, index)
        }
    }
}

/// The current row of a statement, valid only inside the `row` closure of a
/// ``SQLiteConnection`` `run` call.
package struct SQLiteRow {
    fileprivate let statement: OpaquePointer

    /// Whether column `index` is NULL.
    package func isNull(_ index: Int32) -> Bool { sqlite3_column_type(statement, index) == SQLITE_NULL }

    /// Column `index` as an integer.
    package func integer(_ index: Int32) -> Int64 { sqlite3_column_int64(statement, index) }

    /// Column `index` as a double.
    package func real(_ index: Int32) -> Double { sqlite3_column_double(statement, index) }

    /// Column `index` as text (UTF-8; any embedded NUL kept).
    package func text(_ index: Int32) -> String {
        guard let bytes = sqlite3_column_text(statement, index) else { return "" }
        let count = Int(sqlite3_column_bytes(statement, index))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    /// Column `index` as bytes.
    package func blob(_ index: Int32) -> Data {
        guard let bytes = sqlite3_column_blob(statement, index) else { return Data() }
        return Data(bytes: bytes, count: Int(sqlite3_column_bytes(statement, index)))
    }
}
#endif
