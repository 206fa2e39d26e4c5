import PostgresClient

/// The domain errors of the repositories. Each is a clear case a caller can act on;
/// database errors are mapped from SQLSTATE and constraint names, never from message text.
public enum StoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The row does not exist — or belongs to another user, which is deliberately
    /// indistinguishable so ids of other users are never confirmed.
    case notFound
    /// The date is after "today" in the user's time zone.
    case futureDate(today: CalendarDate)
    /// The habit is deactivated, or not yet activated on that date.
    case habitNotActive
    /// A transition the state machine refuses.
    case invalidState(String)
    /// A bad value; `field` names the input field.
    case invalidInput(field: String, reason: String)
    /// The user already has `habit.row_limits`' most rows in `table` (SQLSTATE HB001).
    case limitExceeded(table: String)
    /// A create's client-supplied id is taken: the user's row with that id has other fields,
    /// or the id is another user's row — deliberately the same error (SQLSTATE HB002, sql/0009).
    case idConflict

    public var description: String {
        switch self {
        case .notFound: "not found"
        case .futureDate(let today): "date is in the future (today is \(today) in the user's time zone)"
        case .habitNotActive: "habit is not active on that date"
        case .invalidState(let reason): "invalid state: \(reason)"
        case .invalidInput(let field, let reason): "invalid \(field): \(reason)"
        case .limitExceeded(let table): "row limit of \(table) reached"
        case .idConflict: "id is taken"
        }
    }
}

extension StoreError {
    /// Maps the database errors that stand for a domain rule; anything else is rethrown as is
    /// (connection loss, timeouts and bugs are the caller's to classify).
    static func mapping(_ error: Error) -> Error {
        guard let postgres = error as? PostgresError, let code = postgres.sqlState else { return error }
        if code.isInClass("23"), let field = constraintFields[postgres.constraint ?? ""] {
            return StoreError.invalidInput(field: field, reason: "violates \(postgres.constraint ?? "a constraint")")
        }
        switch code {
        case .foreignKeyViolation:
            // A completion or task pointing at a habit/list the user does not own.
            return StoreError.notFound
        case .invalidParameterValue:
            // AT TIME ZONE with an unknown zone (only reachable if validation was skipped).
            return StoreError.invalidInput(field: "timezone", reason: "unknown time zone")
        case .rowLimitExceeded:
            return StoreError.limitExceeded(table: postgres.table ?? "")
        case .idConflict:
            return StoreError.idConflict
        default:
            break
        }
        return error
    }

    /// Constraints that guard an input field (CHECK, or the time-zone foreign key).
    static let constraintFields: [String: String] = [
        "habit_templates_name_check": "name",
        "habit_templates_icon_check": "icon",
        "habit_templates_color_check": "color",
        "profiles_timezone_fkey": "timezone",
        "tasks_title_check": "title",
        "tasks_notes_check": "notes",
        "task_lists_name_check": "name",
    ]
}
