#if SQLite
import CSQLite
import CacheKit
import CacheKitSQLite
import Foundation
import Synchronization

/// The SQLite subjects of `bench --stores`: `SQLiteStore`, and `raw-sqlite`, the same table
/// read and written with one prepared statement each.
/// The subjects of `bench --stores` that need SQLite.
let sqliteSubjects = ["SQLiteStore", "raw-sqlite"]

func makeSQLiteSubject(_ name: String, directory: URL) throws -> (any StoreSubject)? {
    let path = directory.appendingPathComponent("store.sqlite")
    switch name {
    case "SQLiteStore":
        return try runBlocking { SQLiteStoreSubject(try await SQLiteStore(path: path, byteLimit: Int.max / 2)) }
    case "raw-sqlite":
        return try RawSQLiteSubject(path: path.path)
    default:
        return nil
    }
}

final class SQLiteStoreSubject: StoreSubject {
    let store: SQLiteStore
    init(_ store: SQLiteStore) { self.store = store }
    func get(_ key: String) async throws -> Int { try await store.entry(forKey: key)?.value.count ?? 0 }
    func set(_ key: String, _ value: Data) async throws { try await store.setEntry(value, forKey: key, expiresAt: nil) }
    func close() async { try? await store.close() }
}

/// One connection in WAL mode with `synchronous = NORMAL`, as `SQLiteStore` opens it, the same
/// table, and a prepared `SELECT` and `INSERT OR REPLACE` (each its own transaction).
final class RawSQLiteSubject: StoreSubject {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The connection and its statements, used by one call at a time.
    private struct Handles: @unchecked Sendable {
        var database: OpaquePointer?
        var select: OpaquePointer?
        var insert: OpaquePointer?
        var access: Int64 = 0
    }

    private let handles: _Mutex<Handles>

    init(path: String) throws {
        var handles = Handles()
        guard sqlite3_open_v2(path, &handles.database, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK
        else { throw Failure(description: "cannot open \(path)") }
        let setup = """
            PRAGMA journal_mode = WAL;
            PRAGMA synchronous = NORMAL;
            CREATE TABLE IF NOT EXISTS cachekit_entries (
                key TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL, size INTEGER NOT NULL,
                deadline REAL, access INTEGER NOT NULL
            );
            """
        guard sqlite3_exec(handles.database, setup, nil, nil, nil) == SQLITE_OK,
            sqlite3_prepare_v2(
                handles.database,
                "SELECT value FROM cachekit_entries WHERE key = ?",
                -1,
                &handles.select,
                nil
            ) == SQLITE_OK,
            sqlite3_prepare_v2(
                handles.database,
                "INSERT OR REPLACE INTO cachekit_entries (key, value, size, deadline, access) "
                    + "VALUES (?, ?, ?, NULL, ?)",
                -1,
                &handles.insert,
                nil
            ) == SQLITE_OK
        else {
            let message = String(cString: sqlite3_errmsg(handles.database))
            sqlite3_close(handles.database)
            throw Failure(description: "\(path): \(message)")
        }
        self.handles = _Mutex(handles)
    }

    func get(_ key: String) async throws -> Int {
        handles.withLock { handles in
            let statement = handles.select
            defer { sqlite3_reset(statement) }
            sqlite3_bind_text(statement, 1, key, -1, transientDestructor)
            guard sqlite3_step(statement) == SQLITE_ROW else { return 0 }
            let count = Int(sqlite3_column_bytes(statement, 0))
            // The value leaves SQLite's buffer, as a store's must.
            return Data(bytes: sqlite3_column_blob(statement, 0), count: count).count
        }
    }

    func set(_ key: String, _ value: Data) async throws {
        let done = handles.withLock { handles in
            let statement = handles.insert
            defer { sqlite3_reset(statement) }
            handles.access += 1
            sqlite3_bind_text(statement, 1, key, -1, transientDestructor)
            _ = value.withUnsafeBytes {
                sqlite3_bind_blob(statement, 2, $0.baseAddress, Int32($0.count), transientDestructor)
            }
            sqlite3_bind_int64(statement, 3, Int64(value.count))
            sqlite3_bind_int64(statement, 4, handles.access)
            return sqlite3_step(statement) == SQLITE_DONE
        }
        if !done { throw Failure(description: "INSERT failed") }
    }

    func close() async {
        handles.withLock { handles in
            sqlite3_finalize(handles.select)
            sqlite3_finalize(handles.insert)
            sqlite3_close(handles.database)
            handles = Handles()
        }
    }
}

/// `SQLITE_TRANSIENT`: SQLite copies what is bound (the C macro does not reach Swift).
private let transientDestructor = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
#else
import Foundation

/// Without the SQLite trait, `bench --stores` measures the file subjects alone.
let sqliteSubjects: [String] = []

func makeSQLiteSubject(_ name: String, directory: URL) throws -> (any StoreSubject)? { nil }
#endif
