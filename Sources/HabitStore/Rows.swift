import PostgresClient

/// How the repositories read the rows of a one-statement method.
extension Array where Element == Row {
    /// The row of a statement that always returns exactly one (an INSERT … RETURNING, an
    /// aggregate): anything else is a bug, reported as such.
    func single() throws -> Row {
        guard count == 1 else {
            throw PostgresError(kind: .unexpectedRowCount, message: "expected exactly one row, got \(count)")
        }
        return self[0]
    }

    /// The row of a statement that finds at most one of the user's rows by id, or `notFound`
    /// (which also covers another user's id, deliberately indistinguishable).
    func found() throws -> Row {
        guard let row = first else { throw StoreError.notFound }
        return row
    }
}
