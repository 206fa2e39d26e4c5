import Foundation
import HabitStore
import JSONRPC
import PostgresClient

// account.export and account.import: the user's whole account as one "habit-account" document
// (docs/protocol.md "Accounts"; AccountDocument; AccountRepository; sql/0013).

// MARK: - account.export

/// `account.export {user_id, cursor?, limit?}`: the next page of the user's account document.
/// Pages chain by `cursor` while `has_more`; concatenating the pages' arrays (and taking the
/// header and profile of the first) gives the whole document. A write of the user between two
/// pages makes the next answer `export_changed`: start again without a cursor.
enum AccountExport: DatabaseMethod {
    static let name = "account.export"
    static let retry = RetrySafety.always
    static let summary = "A page of the user's whole account as a habit-account document (profile, habits with periods, completions, skips, lists, tasks); pass cursor back while has_more."
    static let errors: [DomainErrorCode] = [.exportChanged]
    static let limits = 1...AccountRepository.maxLimit
    static let defaultLimit = 1_000

    struct Params: Sendable {
        let user: UUID
        let cursor: ExportCursor?
        let limit: Int
    }

    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        let user = try params.userID()
        let text = try params.optionalString("cursor", description: "The previous page's cursor; absent or null: the first page.")
        let limit = try params.optionalInt("limit", range: limits, description: "Most items (the profile, a habit with its periods, a completion, a skip, a list, a task) in this page (default 1000).") ?? defaultLimit
        var cursor: ExportCursor?
        if let text, !params.isDescribing {
            do {
                cursor = try ExportCursor(text: text)
            } catch {
                throw .invalidParams(field: "cursor", reason: InputFailure.invalidCursor, message: "not an export cursor")
            }
        }
        return Params(user: user, cursor: cursor, limit: limit)
    }

    static func run(_ params: Params, in context: MethodContext) throws -> AccountExportPage {
        try AccountRepository(connection: context.connection, settings: context.settings)
            .exportPage(user: params.user, cursor: params.cursor, limit: params.limit)
    }
}

extension AccountExportPage: MethodResult {
    static let schema = JSONSchema.object([
        ("document", JSONSchema.described(JSONSchema.type("object"),
                                          "The header (format, version, exported_at), the profile (first page only) and this page's slice of each array of the habit-account document (docs/account-format.schema.json).")),
        ("cursor", JSONSchema.described(JSONSchema.nullable(JSONSchema.string()), "Opaque: pass it back as cursor for the next page; null on the last page.")),
        ("has_more", JSONSchema.described(JSONSchema.boolean, "True: ask again with cursor.")),
    ])

    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.key("document"); json.beginObject()
        json.accountHeader(exportedAt: exportedAt)
        json.accountSections(self)
        json.endObject()
        json.key("cursor"); json.string(cursor?.text)
        json.key("has_more"); json.bool(hasMore)
        json.endObject()
    }

    public var estimatedJSONBytes: Int {
        256 + habits.reduce(0) { $0 + 300 + 140 * $1.periods.count } + 62 * (completions.count + skips.count)
            + 150 * lists.count + 420 * tasks.count
    }
}

// MARK: - account.import

/// `account.import {user_id, document, mode}`: writes a habit-account document for the user in
/// one transaction, after checking all of it (AccountDocument.check, then habit.import_account);
/// idempotent. No backfill here: that is `habit account import --backfill`, for admins.
enum AccountImport: DatabaseMethod {
    static let name = "account.import"
    static let retry = RetrySafety.always
    static let summary = "Imports a habit-account document for the user (merge: add and update; replace: the user's rows become the document's), all or nothing; importing the same document again changes nothing."
    static let errors: [DomainErrorCode] = [.idConflict, .futureDate, .habitNotActive, .invalidState, .limitExceeded]

    struct Params: Sendable {
        let user: UUID
        let document: AccountDocument.Checked
        let mode: ImportMode
        let warnings: [String]
    }

    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        let user = try params.userID()
        let document = try params.requiredObject("document", description: "A habit-account version 1 document (docs/account-format.schema.json); server-set members are ignored.")
        let mode = try params.requiredString("mode", oneOf: ImportMode.allCases.map(\.rawValue),
                                             description: "merge: upsert the document's rows, keep the others; replace: afterwards the user's rows are exactly the document's.")
        if params.isDescribing {
            return Params(user: user, document: AccountDocument.Checked(json: "{}"), mode: .merge, warnings: [])
        }
        return Params(user: user, document: try AccountDocument.check(.object(document)), mode: ImportMode(rawValue: mode)!, warnings: [])
    }

    static func run(_ params: Params, in context: MethodContext) throws -> ImportReport {
        try AccountRepository(connection: context.connection, settings: context.settings)
            .importDocument(user: params.user, documentJSON: params.document.json, mode: params.mode, warnings: params.warnings)
    }
}

extension ImportReport: MethodResult {
    static let countsSchema = JSONSchema.object([
        ("inserted", JSONSchema.integer(0...Int.max)), ("updated", JSONSchema.integer(0...Int.max)),
        ("deleted", JSONSchema.integer(0...Int.max)), ("unchanged", JSONSchema.integer(0...Int.max)),
    ])
    static let schema = JSONSchema.object([
        ("counts", JSONSchema.described(JSONSchema.object(["profile", "habits", "completions", "skips", "lists", "tasks"].map { ($0, countsSchema) }),
                                        "Rows per kind: inserted, updated (a habit whose periods were rewritten counts as updated), deleted (replace), unchanged.")),
        ("warnings", JSONSchema.described(JSONSchema.array(of: JSONSchema.string()), "What a converted source could not carry over; empty for habit-account documents.")),
    ])

    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.key("counts"); json.beginObject()
        for (kind, counts) in counts {
            json.key(dynamic: kind)
            json.beginObject()
            json.key("inserted"); json.int(counts.inserted)
            json.key("updated"); json.int(counts.updated)
            json.key("deleted"); json.int(counts.deleted)
            json.key("unchanged"); json.int(counts.unchanged)
            json.endObject()
        }
        json.endObject()
        json.key("warnings"); json.array(warnings) { json, warning in json.string(warning) }
        json.endObject()
    }

    public var estimatedJSONBytes: Int { 512 + warnings.reduce(0) { $0 + 16 + $1.utf8.count } }
}

extension JSONWriter {
    /// A key from a fixed set of our own names (the kinds of ImportReport).
    mutating func key(dynamic name: String) {
        switch name {
        case "profile": key("profile")
        case "habits": key("habits")
        case "completions": key("completions")
        case "skips": key("skips")
        case "lists": key("lists")
        default: key("tasks")
        }
    }
}
