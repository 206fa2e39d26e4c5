import Foundation
import PostgresClient

/// What `habit.delete_account` removed: one entry per table it knows, in its order, with the
/// rows deleted (all zeros when the account was already gone).
public struct AccountDeletion: Sendable, Equatable {
    public struct Table: Sendable, Equatable {
        /// Schema-qualified, e.g. `public.habit_completions`.
        public let name: String
        public let deleted: Int64

        public init(name: String, deleted: Int64) {
            self.name = name
            self.deleted = deleted
        }
    }

    public let tables: [Table]

    public init(tables: [Table]) {
        self.tables = tables
    }

    public var total: Int64 { tables.reduce(0) { $0 + $1.deleted } }

    init(rows: [Row]) throws {
        tables = try rows.map { Table(name: try $0.decode(String.self, at: 0), deleted: try $0.decode(Int64.self, at: 1)) }
    }
}

/// Account deletion: one SQL function (sql/functions/accounts.sql, `habit.delete_account`), the single place that
/// knows every table a user owns; this only calls it.
extension AccountRepository {
    /// Deletes everything `user` owns, as that user (role authenticated, the user's claims): one
    /// statement, one transaction. Repeating it deletes nothing and answers zeros.
    public func delete(user: UUID) throws -> AccountDeletion {
        try AccountDeletion(rows: scope.query(as: user, Self.deleteStatement(user: user)))
    }

    /// The same for an admin (`habit account delete`): one transaction as habit_admin (SET LOCAL
    /// ROLE), so the connecting role must be a member of habit_admin (42501 otherwise).
    public static func deleteAsAdmin(_ connection: Connection, user: UUID) throws -> AccountDeletion {
        do {
            return try connection.withTransaction(prelude: ["SET LOCAL ROLE habit_admin"]) { connection in
                try AccountDeletion(rows: connection.query(deleteStatement(user: user)))
            }
        } catch {
            throw StoreError.mapping(error)
        }
    }

    static func deleteStatement(user: UUID) -> Query {
        "SELECT table_name, deleted FROM habit.delete_account(\(user))"
    }
}
