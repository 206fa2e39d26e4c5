import Foundation
import PostgresClient

/// Settings every user transaction runs with.
public struct StoreSettings: Sendable {
    /// `statement_timeout` for each statement of a request (0 = none).
    public var statementTimeoutMilliseconds: Int
    public init(statementTimeoutMilliseconds: Int = 5_000) {
        self.statementTimeoutMilliseconds = statementTimeoutMilliseconds
    }
}

/// Runs work as one user, the way PostgREST does: per transaction, `SET LOCAL ROLE
/// authenticated` and the user's JWT claims with `set_config(…, true)`, so row-level
/// security sees that user and nothing survives the transaction (safe on pooled and
/// pgbouncer-shared connections). Session-level settings are never used.
public struct UserScope {
    public let connection: Connection
    public let settings: StoreSettings

    public init(connection: Connection, settings: StoreSettings = StoreSettings()) {
        self.connection = connection
        self.settings = settings
    }

    public func transaction<Value>(as user: UUID, _ body: (Connection) throws -> Value) throws -> Value {
        // The claims are built from a UUID (hex and dashes only) and still travel as a parameter.
        let claims = #"{"sub":"\#(user.uuidString.lowercased())","role":"authenticated"}"#
        let timeout = String(settings.statementTimeoutMilliseconds)
        do {
            return try connection.withTransaction(prelude: [
                "SET LOCAL ROLE authenticated",
                "SELECT set_config('request.jwt.claims', \(claims), true), set_config('statement_timeout', \(timeout), true)",
            ], body)
        } catch {
            throw StoreError.mapping(error)
        }
    }
}
