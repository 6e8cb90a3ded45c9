// The system's SQLite, as the module CSQLite (CacheKitSQLite's only dependency outside Swift).
#include <sqlite3.h>
