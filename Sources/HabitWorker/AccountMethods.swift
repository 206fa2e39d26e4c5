import Foundation
import HabitStore
import JSONRPC
import PostgresClient
import LoopImport

// account.export and account.import: the user's whole account as one "habit-account" document
// (docs/protocol.md "Accounts"; AccountDocument; AccountRepository; sql/functions/accounts.sql).

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
        let limit = try params.optionalInt("limit", range: limits, description: "Most items (the profile, an area, a habit with its periods, a completion, a skip, a list, a task, a check-in, a note, a reminder) in this page (default 1000).") ?? defaultLimit
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
        256 + habits.reduce(0) { $0 + 350 + 140 * $1.periods.count } + 62 * (completions.count + skips.count)
            + 150 * lists.count + 420 * tasks.count + 140 * checkins.count + 80 * notes.count + notes.reduce(0) { $0 + 2 * $1.note.utf8.count }
            + 130 * reminders.count + 2 * areas.reduce(0) { $0 + 80 + $1.name.utf8.count }
    }
}

// MARK: - account.import

/// `account.import {user_id, document, mode}`: writes a habit-account document for the user in
/// one transaction, after checking all of it (AccountDocument.check, then habit.import_account);
/// idempotent. No backfill here: that is `habit account import --backfill`, for admins.
/// `source: "loop"` takes a Loop Habit Tracker CSV export's files instead of `document`: the
/// converter (LoopImport) turns them into a habit-account document in the user's zone, and the
/// import runs exactly as for our own format.
enum AccountImport: DatabaseMethod {
    static let name = "account.import"
    static let retry = RetrySafety.always
    static let summary = "Imports a habit-account document for the user (merge: add and update; replace: the user's rows become the document's), all or nothing; importing the same document again changes nothing. source loop: a Loop Habit Tracker CSV export's files instead."
    static let errors: [DomainErrorCode] = [.idConflict, .futureDate, .habitNotActive, .invalidState, .limitExceeded]
    static let sources = ["habit-account", "loop"]

    enum Source: Sendable {
        case document(AccountDocument.Checked)
        case loop(LoopExport)
    }

    struct Params: Sendable {
        let user: UUID
        let source: Source
        let mode: ImportMode
        /// ids "new": the document's ids replaced by ones derived from the user (another
        /// account's export imports without id_conflict; the same document again changes nothing).
        var newIDs = false
    }

    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        let user = try params.userID()
        let source = try params.optionalString("source", oneOf: sources, description: "habit-account (default): document is our format; loop: files holds a Loop Habit Tracker CSV export.") ?? "habit-account"
        let document = try params.optionalObject("document", description: "source habit-account (required): a habit-account version 1 document (docs/account-format.schema.json); server-set members are ignored.")
        let files = try params.optionalObject("files", description: "source loop (required): the export's files by their path in its zip (Habits.csv, \"001 Run/Checkmarks.csv\", ...), each its text.")
        let mode = try params.requiredString("mode", oneOf: ImportMode.allCases.map(\.rawValue),
                                             description: "merge: upsert the document's rows, keep the others; replace: afterwards the user's rows are exactly the document's.")
        let ids = try params.optionalString("ids", oneOf: ["keep", "new"],
                                            description: "keep (default): the document's ids; new: ids derived from the user and the document's ids, references following (another account's export imports without id_conflict; importing it again changes nothing).") ?? "keep"
        if params.isDescribing {
            return Params(user: user, source: .document(AccountDocument.Checked(json: "{}")), mode: .merge)
        }
        let given = source == "loop" ? ("files", files != nil) : ("document", document != nil)
        let other = source == "loop" ? ("document", document != nil) : ("files", files != nil)
        guard !other.1 else {
            throw .invalidParams(field: other.0, reason: InputFailure.notAllowed, message: "not with source \(source)")
        }
        guard given.1 else { throw .invalidParams(field: given.0, reason: RPCReason.required, message: "missing (source \(source))") }
        if let files {
            var texts: [String: String] = [:]
            for member in files.members {
                guard case .string(let text) = member.value else {
                    throw .invalidParams(field: "files.\(member.key)", reason: RPCReason.wrongType, message: "expected the file's text")
                }
                texts[member.key] = text
            }
            do {
                return Params(user: user, source: .loop(try LoopExport(files: texts)), mode: ImportMode(rawValue: mode)!, newIDs: ids == "new")
            } catch {
                throw error.invalidParams
            }
        }
        return Params(user: user, source: .document(try AccountDocument.check(.object(document!))), mode: ImportMode(rawValue: mode)!,
                      newIDs: ids == "new")
    }

    static func run(_ params: Params, in context: MethodContext) throws -> AccountImportAnswer {
        let repository = AccountRepository(connection: context.connection, settings: context.settings)
        switch params.source {
        case .document(let document):
            return AccountImportAnswer(report: try repository.importDocument(user: params.user, documentJSON: document.json, mode: params.mode,
                                                                             newIDs: params.newIDs),
                                       loop: nil)
        case .loop(let export):
            let converted = try LoopConversion.convert(export, user: params.user, repository: repository)
            let report = try repository.importDocument(user: params.user, documentJSON: converted.document.json, mode: params.mode,
                                                       newIDs: params.newIDs, warnings: converted.warnings)
            return AccountImportAnswer(report: report, loop: converted.report)
        }
    }
}

/// `account.import`'s answer: the import's counts and warnings, and for `source: "loop"` what
/// the converter did (`loop`: counts per kind, the numeric habits left out by name).
struct AccountImportAnswer: MethodResult {
    let report: ImportReport
    let loop: JSONValue?

    static let countsSchema = JSONSchema.object([
        ("inserted", JSONSchema.integer(0...Int.max)), ("updated", JSONSchema.integer(0...Int.max)),
        ("deleted", JSONSchema.integer(0...Int.max)), ("unchanged", JSONSchema.integer(0...Int.max)),
    ])
    static let schema = JSONSchema.object([
        ("counts", JSONSchema.described(JSONSchema.object(AccountRepository.importKinds.map { ($0, countsSchema) }),
                                        "Rows per kind: inserted, updated (a habit whose periods were rewritten counts as updated), deleted (replace), unchanged.")),
        ("warnings", JSONSchema.described(JSONSchema.array(of: JSONSchema.string()), "What a converted source could not carry over; empty for habit-account documents.")),
        ("loop", JSONSchema.described(JSONSchema.object([
            ("counts", JSONSchema.object(["habits", "archived_habits", "completions", "skips", "measurable_habits", "checkins", "notes",
                                          "numeric_habits_not_imported",
                                          "checkmarks_without_row", "future_checkmarks_dropped", "archived_today_checkmarks_dropped"]
                .map { ($0, JSONSchema.integer(0...Int.max)) })),
            ("numeric_habits_not_imported", JSONSchema.array(of: JSONSchema.string())),
            ("warnings", JSONSchema.array(of: JSONSchema.string())),
        ]), "source loop only: what the converter read (docs/admin.md, \"Importing from Loop Habit Tracker\").")),
    ], optional: ["loop"])

    func write(to json: inout JSONWriter) {
        json.beginObject()
        json.key("counts"); json.beginObject()
        for (kind, counts) in report.counts {
            json.key(dynamic: kind)
            json.beginObject()
            json.key("inserted"); json.int(counts.inserted)
            json.key("updated"); json.int(counts.updated)
            json.key("deleted"); json.int(counts.deleted)
            json.key("unchanged"); json.int(counts.unchanged)
            json.endObject()
        }
        json.endObject()
        json.key("warnings"); json.array(report.warnings) { json, warning in json.string(warning) }
        if let loop { json.key("loop"); json.value(loop) }
        json.endObject()
    }

    var estimatedJSONBytes: Int { 512 + (loop == nil ? 0 : 1_024) + 2 * report.warnings.reduce(0) { $0 + 16 + $1.utf8.count } }
}

/// A Loop export as a checked habit-account document for one user: the user's zone and today
/// come from PostgreSQL (habit.user_time_zone, habit.user_today, habit.user_day_start, habit.user_week_start_isodow), as for every date rule.
public enum LoopConversion {
    public struct Converted: Sendable {
        public let document: AccountDocument.Checked
        /// The converter's warnings, then one per numeric habit (not imported, by name).
        public let warnings: [String]
        /// LoopImportReport.json: counts per kind and the numeric habits' names.
        public let report: JSONValue
    }

    /// `account.import`'s answer as the CLI prints it (`habit account import`).
    public static func answerJSON(report: ImportReport, loop: JSONValue?) -> String {
        String(decoding: JSONWriter.encode { AccountImportAnswer(report: report, loop: loop).write(to: &$0) }.bytes, as: UTF8.self)
    }

    /// Throws RPCError (-32602: the converter's reason with file, line and column, or the
    /// document check's path) or the repository's errors.
    public static func convert(_ export: LoopExport, user: UUID, repository: AccountRepository) throws -> Converted {
        let (zone, today, dayStart, weekStart) = try repository.zoneAndToday(user: user)
        let document: JSONValue, report: LoopImportReport
        do {
            (document, report) = try export.accountDocument(user: user, timeZone: zone, today: LoopDay(daysSinceUnixEpoch: today.daysSinceUnixEpoch),
                                                            dayStartMinutes: dayStart, weekStartISODay: weekStart)
        } catch {
            throw error.invalidParams
        }
        let checked = try AccountDocument.check(document)
        let warnings = report.warnings + report.numericHabitsNotImported.map { "numeric habit not imported: \($0)" }
        return Converted(document: checked, warnings: warnings, report: report.json)
    }
}

extension LoopImportError.Reason: ErrorReason {}

extension LoopImportError {
    /// -32602 naming `files` (or the file inside it), with the reason and the file, line and
    /// column the converter found the problem at.
    public var invalidParams: RPCError {
        var data: JSONObject = ["reason": .string(reason.rawValue), "message": .string(message),
                                "field": .string(file.map { "files.\($0)" } ?? "files")]
        if let file { data["file"] = .string(file) }
        if let line { data["line"] = .int(line) }
        if let column { data["column"] = .int(column) }
        return RPCError(code: .invalidParams, message: "Invalid params", data: .object(data))
    }
}

extension JSONWriter {
    /// A key from a fixed set of our own names (the kinds of ImportReport).
    mutating func key(dynamic name: String) {
        switch name {
        case "profile": key("profile")
        case "areas": key("areas")
        case "habits": key("habits")
        case "completions": key("completions")
        case "skips": key("skips")
        case "lists": key("lists")
        case "tasks": key("tasks")
        case "checkins": key("checkins")
        case "notes": key("notes")
        case "reminders": key("reminders")
        default: preconditionFailure("not a kind of ImportReport: \(name)")
        }
    }
}
