import HabitStore
import JSONRPC
import PostgresClient

/// The worker's domain error codes (JSON-RPC's server range -32000…-32099). Each carries
/// `data.reason`, the stable string clients match on (one reason per code).
public enum DomainErrorCode: Int, CaseIterable, Sendable {
    case notFound = -32001
    case futureDate = -32002
    case habitNotActive = -32003
    case invalidState = -32004
    case databaseUnavailable = -32010
    case timeout = -32011
    /// Serialization failure or deadlock: the transaction was rolled back, so any method may be retried.
    case conflict = -32012
    /// The user already has as many rows of that kind as allowed (`habit.row_limits`).
    case limitExceeded = -32013
    /// The result would exceed `--max-response-bytes`; nothing of it was sent.
    case responseTooLarge = -32014
    /// A create's client-supplied id is taken: by the user's row with other fields, or by another
    /// user's row (the same answer, so another user's id is never confirmed).
    case idConflict = -32015
    /// The request's `deadline_ms` passed: not run if it was still waiting, cancelled (rolled
    /// back) if it was running. Nothing of it took effect.
    case deadlineExceeded = -32016
    /// A sync cursor older than the retention of tombstones (`--sync-retention-days`), or from
    /// before a reset or a restore: pull again without a cursor.
    case cursorExpired = -32017
    /// A sync.push mutation's `user_id` is not the push's.
    case userMismatch = -32018
    /// A sync.push mutation names a method a push may not carry (sync.*, changes.*, rpc.*, system.*, account.delete).
    case methodNotAllowed = -32019
    /// The user's rows changed between two pages of an `account.export` walk: export again
    /// without a cursor.
    case exportChanged = -32020
    /// The write committed on the server the worker talks to, but a synchronous standby never
    /// confirmed it (the commit's wait was cancelled, `--statement-timeout-ms` after it began):
    /// it may be lost in a failover. Outcome unknown: retry (a create with the same id).
    case commitUnconfirmed = -32021

    public var reason: String {
        switch self {
        case .notFound: "not_found"
        case .futureDate: "future_date"
        case .habitNotActive: "habit_not_active"
        case .invalidState: "invalid_state"
        case .databaseUnavailable: "database_unavailable"
        case .timeout: "timeout"
        case .conflict: "conflict"
        case .limitExceeded: "limit_exceeded"
        case .responseTooLarge: "response_too_large"
        case .idConflict: "id_conflict"
        case .deadlineExceeded: "deadline_exceeded"
        case .cursorExpired: "cursor_expired"
        case .userMismatch: "user_mismatch"
        case .methodNotAllowed: "method_not_allowed"
        case .exportChanged: "export_changed"
        case .commitUnconfirmed: "commit_unconfirmed"
        }
    }

    var message: String {
        switch self {
        case .notFound: "Not found"
        case .futureDate: "Date is in the future"
        case .habitNotActive: "Habit is not active on that date"
        case .invalidState: "Invalid state transition"
        case .databaseUnavailable: "Database unavailable"
        case .timeout: "Statement timeout"
        case .conflict: "Conflict with a concurrent transaction"
        case .limitExceeded: "Row limit exceeded"
        case .responseTooLarge: "Response too large"
        case .idConflict: "Id already used"
        case .deadlineExceeded: "Deadline exceeded"
        case .cursorExpired: "Sync cursor expired"
        case .userMismatch: "user_id differs from the push's"
        case .methodNotAllowed: "Method not allowed in a push"
        case .exportChanged: "Account changed during the export"
        case .commitUnconfirmed: "Commit not confirmed by the standby"
        }
    }

    func error(extra: [(String, JSONValue)] = []) -> RPCError {
        var data = JSONObject([("reason", .string(reason))])
        for (key, value) in extra { data.append(key: key, value: value) }
        return RPCError(code: RPCErrorCode(rawValue: rawValue), message: message, data: .object(data))
    }
}

/// -32602's value reasons are the store's `InputFailure`s (HabitStore does not know JSONRPC).
extension InputFailure: ErrorReason {}

/// Every error the worker sends, by code: its fixed `message`, the `data.reason` codes it can
/// carry, and the other members of its `data` with their schemas. The OpenRPC document's
/// `components/errors` is made from it (each with `x-data-schema`, the JSON Schema of `data`, its
/// `reason` an `enum`), and a test checks that docs/protocol.md ("Reasons") lists the same codes.
struct ErrorCatalogEntry {
    /// The key under `components/errors` (`invalidParams`, `notFound`, …).
    let name: String
    let code: RPCErrorCode
    let message: String
    let reasons: [String]
    /// `data`'s members besides `reason` and `message`, with their schemas; `optional` names those
    /// that are sent only when they apply.
    let members: [(String, JSONValue)]
    let optional: Set<String>
    /// Whether `data.message` (prose) is sent.
    let hasMessage: Bool

    /// The JSON Schema of `data`.
    var dataSchema: JSONValue {
        var properties: [(String, JSONValue)] = [("reason", JSONSchema.string(oneOf: reasons))]
        if hasMessage { properties.append(("message", JSONSchema.described(JSONSchema.string(), "Prose for people and logs; may be reworded. Match on reason."))) }
        return JSONSchema.object(properties + members, optional: optional)
    }
}

enum ErrorCatalog {
    static var entries: [ErrorCatalogEntry] {
        func predefined(_ name: String, _ code: RPCErrorCode, _ message: String, _ extra: [String] = [],
                        members: [(String, JSONValue)], optional: Set<String> = [], hasMessage: Bool = true) -> ErrorCatalogEntry {
            let own = RPCReason.reasons(for: code).map(\.rawValue)
            // `out_of_range` is both RPCReason's and InputFailure's: one code, listed once.
            return ErrorCatalogEntry(name: name, code: code, message: message,
                                     reasons: own + extra.filter { !own.contains($0) },
                                     members: members, optional: optional, hasMessage: hasMessage)
        }
        let string = JSONSchema.string(), integer = JSONSchema.integer(0...Int.max)
        return [
            predefined("parseError", .parseError, "Parse error",
                       members: [("offset", JSONSchema.described(integer, "Byte offset in the line."))]),
            predefined("invalidRequest", .invalidRequest, "Invalid Request",
                       members: [("member", JSONSchema.described(string, "The request member at fault.")),
                                 ("limit", JSONSchema.described(integer, "The limit exceeded (line_too_long, batch_too_large)."))],
                       optional: ["member", "limit"]),
            predefined("methodNotFound", .methodNotFound, "Method not found", members: [("method", string)]),
            predefined("invalidParams", .invalidParams, "Invalid params", InputFailure.allCases.map(\.rawValue),
                       members: [("field", JSONSchema.described(string, "The key (path) inside params at fault."))]),
            predefined("internalError", .internalError, "Internal error", members: [], hasMessage: false),
        ] + DomainErrorCode.allCases.map { code in
            ErrorCatalogEntry(name: "\(code)", code: RPCErrorCode(rawValue: code.rawValue), message: code.message,
                              reasons: [code.reason], members: code.dataMembers, optional: code.optionalDataMembers, hasMessage: false)
        }
    }

    /// Every reason code the worker can send, once each.
    static var allReasons: Set<String> { Set(entries.flatMap(\.reasons)) }
}

extension DomainErrorCode {
    /// `data`'s members besides `reason` (see `error(extra:)` at each use).
    var dataMembers: [(String, JSONValue)] {
        switch self {
        case .futureDate: [("today", JSONSchema.string(format: "date")), Self.fieldMember]
        case .invalidState: [("detail", JSONSchema.string()), Self.fieldMember]
        case .limitExceeded: [("table", JSONSchema.string())]
        case .responseTooLarge: [("limit", JSONSchema.integer(0...Int.max))]
        case .habitNotActive, .idConflict: [Self.fieldMember]
        default: []
        }
    }

    /// `data.field` of an `account.import` refusal: the JSON path of the member at fault.
    static let fieldMember = ("field", JSONSchema.described(JSONSchema.string(), "account.import only: the JSON path of the document's member at fault (document.completions[3].date)."))

    /// The `dataMembers` sent only when they apply.
    var optionalDataMembers: Set<String> {
        switch self {
        case .futureDate, .invalidState, .habitNotActive, .idConflict: ["field"]
        default: []
        }
    }
}

enum ErrorMapping {
    /// Turns whatever a handler threw into the JSON-RPC error the client sees. Unknown
    /// errors become -32603 without detail (the log has the safe description).
    static func rpcError(for error: Error) -> RPCError {
        switch error {
        case let rpc as RPCError:
            return rpc
        case let store as StoreError:
            switch store {
            case .notFound: return DomainErrorCode.notFound.error()
            case .futureDate(let today): return DomainErrorCode.futureDate.error(extra: [("today", .string(today.description))])
            case .habitNotActive: return DomainErrorCode.habitNotActive.error()
            case .invalidState(let reason): return DomainErrorCode.invalidState.error(extra: [("detail", .string(reason))])
            case .invalidInput(let field, let reason, let message): return .invalidParams(field: field, reason: reason, message: message)
            case .limitExceeded(let table): return DomainErrorCode.limitExceeded.error(extra: [("table", .string(table))])
            case .idConflict: return DomainErrorCode.idConflict.error()
            case .invalidCursor: return .invalidParams(field: "cursor", reason: InputFailure.invalidCursor, message: "not a sync cursor")
            case .cursorExpired: return DomainErrorCode.cursorExpired.error()
            case .exportChanged: return DomainErrorCode.exportChanged.error()
            case .importRefused(let path, let reason, let today, let kept): return importRefusal(path: path, reason: reason, today: today, kept: kept)
            }
        case let postgres as PostgresError:
            if postgres.kind == .commitUnconfirmed { return DomainErrorCode.commitUnconfirmed.error() }
            if postgres.isConnectionLost || postgres.sqlState == .tooManyConnections {
                return DomainErrorCode.databaseUnavailable.error()
            }
            if postgres.sqlState == .queryCanceled { return DomainErrorCode.timeout.error() }
            if postgres.isTransactionConflict {
                return DomainErrorCode.conflict.error()
            }
            return .internalError()
        default:
            return .internalError()
        }
    }

    /// habit.import_account's refusals (sql/functions/accounts.sql), each as the error the same
    /// rule gets elsewhere, with `data.field`.
    static func importRefusal(path: String, reason: String, today: CalendarDate?, kept: ImportKeptDay? = nil) -> RPCError {
        let field: (String, JSONValue) = ("field", .string(path))
        switch reason {
        case "id_conflict": return DomainErrorCode.idConflict.error(extra: [field])
        case "future_date": return DomainErrorCode.futureDate.error(extra: [("today", .string(today?.description ?? "")), field])
        case "habit_not_active":
            // A merge that would take the habit (field: its periods) off a day the user keeps
            // a completion or skip on names that row.
            guard let kept else { return DomainErrorCode.habitNotActive.error(extra: [field]) }
            var row = JSONObject()
            row["kind"] = .string(kept.kind)
            row["date"] = .string(kept.date.description)
            return DomainErrorCode.habitNotActive.error(extra: [field, ("kept", .object(row))])
        // The document's own consistency: checked by habit.import_account itself, for the
        // worker and direct callers alike (issue 31 finding 7; AccountDocument keeps only the
        // size caps, so a huge document is refused before it is sent).
        case "too_many": return .invalidParams(field: path, reason: InputFailure.tooMany, message: "more than one import takes (docs/protocol.md, account.import)")
        case "invalid_order": return .invalidParams(field: path, reason: InputFailure.invalidOrder, message: "periods must be oldest first, only the last open, each ending after it starts")
        case "duplicate_value": return .invalidParams(field: path, reason: InputFailure.duplicateValue, message: "a second row with the same key")
        case "unknown_reference": return .invalidParams(field: path, reason: InputFailure.unknownReference, message: "no row of the document has this id")
        case "done_and_skipped": return DomainErrorCode.invalidState.error(extra: [("detail", .string("done_and_skipped")), field])
        case "invalid_timezone": return .invalidParams(field: path, reason: InputFailure.invalidTimeZone, message: "unknown time zone")
        case "out_of_range": return .invalidParams(field: path, reason: InputFailure.outOfRange, message: "before 1970-01-01 (the earliest date the service keeps)")
        case "invalid_characters":
            return .invalidParams(field: path, reason: InputFailure.invalidCharacters, message: "must not contain bidirectional control characters")
        default: return .internalError()
        }
    }
}
