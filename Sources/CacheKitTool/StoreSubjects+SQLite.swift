import Foundation

func makeSQLiteSubject(_ name: String, directory: URL) throws -> (any StoreSubject)? { nil }
