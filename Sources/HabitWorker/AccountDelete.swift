import Foundation
import HabitStore
import JSONRPC
import PostgresClient

// MARK: - account.delete

/// `account.delete {user_id, confirm}`: deletes every row the user owns, in one transaction, and
/// answers the rows deleted per table. `confirm` must repeat `user_id`, so a client cannot
/// delete an account by a stray call with only the user's id. The rules (which tables, what is
/// kept, who may) are `habit.delete_account`'s (sql/functions/accounts.sql; docs/schema.md, "What account
/// deletion keeps"). Retry-safe: a repeat deletes nothing and answers zeros. Not allowed in a
/// sync.push (`SyncPush.mutationMethods` leaves it out).
enum AccountDelete: DatabaseMethod {
    static let name = "account.delete"
    static let retry = RetrySafety.always
    static let summary = "Deletes every row the user owns (one transaction) and answers the rows deleted per table; confirm must equal user_id. A repeat answers zeros."

    struct Params: Sendable {
        let user: UUID
    }

    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        let user = try params.userID()
        let confirm = try params.requiredString("confirm", description: "The user_id again, to confirm the deletion.")
        guard !params.isDescribing else { return Params(user: user) }
        // Compared as UUIDs: the same id in upper case confirms it too.
        guard UUID(canonical: confirm) == user else {
            throw .invalidParams(field: "confirm", reason: InputFailure.confirmationMismatch, message: "confirm must equal user_id")
        }
        return Params(user: user)
    }

    static func run(_ params: Params, in context: MethodContext) throws -> AccountDeletion {
        try AccountRepository(connection: context.connection, settings: context.settings).delete(user: params.user)
    }
}

extension AccountDeletion: MethodResult {
    static let schema = JSONSchema.object([
        ("tables", JSONSchema.described(JSONSchema.array(of: JSONSchema.object([
            ("table", JSONSchema.described(JSONSchema.string(), "Schema-qualified table name, e.g. public.habit_completions.")),
            ("deleted", JSONSchema.described(JSONSchema.integer(0...Int.max), "Rows of the user deleted from it.")),
        ])), "Every table the user can own rows in, in a fixed order, each with its count (0 included).")),
        ("total", JSONSchema.described(JSONSchema.integer(0...Int.max), "The sum of the counts; 0 when the account was already empty.")),
    ])

    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.key("tables"); json.array(tables) { json, table in
            json.beginObject()
            json.key("table"); json.string(table.name)
            json.key("deleted"); json.int(table.deleted)
            json.endObject()
        }
        json.key("total"); json.int(total)
        json.endObject()
    }

    public var estimatedJSONBytes: Int { 64 + 64 * tables.count }
}
