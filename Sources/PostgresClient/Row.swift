import CLibPQ

/// Owns one `PGresult` and clears it exactly once, when the last row referring to it goes away.
final class ResultSet {
    private let handle: OpaquePointer
    let rowCount: Int
    let columnCount: Int
    // Names and types are read from the PGresult when first needed: most results of a request
    // (BEGIN, SET, COMMIT) are never looked at, and rows are decoded by position.
    lazy var columnNames: [String] = (0..<columnCount).map { String(cString: PQfname(handle, Int32($0))) }
    lazy var columnTypes: [PostgresType] = (0..<columnCount).map { PostgresType(rawValue: PQftype(handle, Int32($0))) }
    private lazy var indexByName: [String: Int] = {
        var map: [String: Int] = [:]
        for (index, name) in columnNames.enumerated() where map[name] == nil { map[name] = index }
        return map
    }()

    init(handle: OpaquePointer) {
        self.handle = handle
        rowCount = Int(PQntuples(handle))
        columnCount = Int(PQnfields(handle))
    }

    deinit { PQclear(handle) }

    /// Affected rows for INSERT/UPDATE/DELETE/… ("" for other commands → 0).
    var affectedRows: Int {
        let text = String(cString: PQcmdTuples(handle))
        return Int(text) ?? 0
    }

    func columnIndex(named name: String) -> Int? { indexByName[name] }

    func isNull(row: Int, column: Int) -> Bool { PQgetisnull(handle, Int32(row), Int32(column)) == 1 }

    func decode<Value: PostgresDecodable>(_: Value.Type, row: Int, column: Int) throws -> Value {
        guard column >= 0, column < columnCount else {
            throw PostgresError(kind: .decoding, message: "column index \(column) out of range (result has \(columnCount) columns)")
        }
        let type = PostgresType(rawValue: PQftype(handle, Int32(column)))
        do {
            if PQgetisnull(handle, Int32(row), Int32(column)) == 1 {
                return try Value.decodeNull()
            }
            // libpq documents the value pointer as valid until PQclear; `self` outlives this call.
            let length = Int(PQgetlength(handle, Int32(row), Int32(column)))
            let pointer = UnsafeRawPointer(PQgetvalue(handle, Int32(row), Int32(column)))
            let bytes = UnsafeRawBufferPointer(start: pointer, count: length)
            return try Value.decode(from: PostgresValue(type: type, bytes: bytes))
        } catch let failure as PostgresDecodingFailure {
            throw PostgresError(
                kind: .decoding,
                message: "column \"\(columnNames[column])\" (index \(column)): cannot decode PostgreSQL \(type) as \(Value.self): \(failure.reason)"
            )
        }
    }
}

/// One row of a result. Rows keep their result alive; decode what you need and let them go.
public struct Row {
    let result: ResultSet
    let index: Int

    public var columnCount: Int { result.columnCount }
    public var columnNames: [String] { result.columnNames }
    public var columnTypes: [PostgresType] { result.columnTypes }

    public func decode<Value: PostgresDecodable>(_ type: Value.Type = Value.self, at column: Int) throws -> Value {
        try result.decode(type, row: index, column: column)
    }

    public func decode<Value: PostgresDecodable>(_ type: Value.Type = Value.self, _ column: String) throws -> Value {
        guard let position = result.columnIndex(named: column) else {
            throw PostgresError(kind: .decoding, message: "no column \"\(column)\" in result (columns: \(result.columnNames.joined(separator: ", ")))")
        }
        return try result.decode(type, row: index, column: position)
    }

    public func isNull(at column: Int) -> Bool { result.isNull(row: index, column: column) }
}

@available(*, unavailable, message: "Rows share their PGresult; keep them on the connection's thread")
extension Row: Sendable {}
