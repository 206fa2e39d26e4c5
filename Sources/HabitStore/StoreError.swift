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
    /// A bad value: `field` names the input field, `reason` says what is wrong (a stable code),
    /// `message` says it in prose.
    case invalidInput(field: String, reason: InputFailure, message: String)
    /// The user already has `habit.row_limits`' most rows in `table` (SQLSTATE HB001).
    case limitExceeded(table: String)
    /// A create's client-supplied id is taken: the user's row with that id has other fields,
    /// or the id is another user's row — deliberately the same error (SQLSTATE HB002, sql/functions/habits.sql).
    case idConflict
    /// A sync cursor this service did not write (sql/functions/sync.sql; docs/schema.md, "Sync").
    case invalidCursor
    /// A sync cursor that can no longer be continued: older than the retention, below what was
    /// pruned or reset, or ahead of the user's clock (a restored database). Pull from scratch.
    case cursorExpired
    /// The user's rows changed between two pages of an `account.export` walk: export again
    /// from the first page (`AccountRepository`).
    case exportChanged
    /// `habit.import_account` (sql/functions/accounts.sql) refused the document: `path` is the JSON path of the
    /// member at fault (`document.completions[3].date`), `reason` one of its codes (SQLSTATE
    /// HB010's COLUMN and DETAIL); `today`, for future_date, the user's today (its HINT);
    /// `kept`, when a `merge` would take a habit off a day of one of the user's completions or
    /// skips the document lacks (its TABLE and HINT): that row, and `path` the habit's periods.
    case importRefused(path: String, reason: String, today: CalendarDate?, kept: ImportKeptDay? = nil)

    public var description: String {
        switch self {
        case .notFound: "not found"
        case .futureDate(let today): "date is in the future (today is \(today) in the user's time zone)"
        case .habitNotActive: "habit is not active on that date"
        case .invalidState(let reason): "invalid state: \(reason)"
        case .invalidInput(let field, let reason, let message): "invalid \(field) (\(reason.rawValue)): \(message)"
        case .limitExceeded(let table): "row limit of \(table) reached"
        case .idConflict: "id is taken"
        case .invalidCursor: "invalid sync cursor"
        case .cursorExpired: "sync cursor expired"
        case .exportChanged: "the account changed during the export; export again from the start"
        case .importRefused(let path, let reason, _, _): "import refused at \(path): \(reason)"
        }
    }
}

/// What is wrong with an input value: the stable `data.reason` of -32602 (the worker sends
/// `rawValue`; docs/protocol.md, "Reasons"), shared by the repositories' validation, the
/// constraints they map, and the worker's reading of the service's value types. `field` says
/// where; the message says it in prose.
public enum InputFailure: String, CaseIterable, Sendable {
    /// Not a UUID (`8-4-4-4-12` hex digits).
    case invalidUUID = "invalid_uuid"
    /// Not a calendar date `YYYY-MM-DD` (a real day, years 0001–9999).
    case invalidDate = "invalid_date"
    /// Not an RFC 3339 timestamp with an offset.
    case invalidTimestamp = "invalid_timestamp"
    /// Not a time-zone name PostgreSQL knows.
    case invalidTimeZone = "invalid_timezone"
    /// Not `#RRGGBB`.
    case invalidColor = "invalid_color"
    /// Not an SF Symbol name (`figure.run`).
    case invalidIcon = "invalid_icon"
    /// Text that is empty (or only white space) where some is required.
    case empty
    /// Text longer than the field allows.
    case tooLong = "too_long"
    /// Text with characters the field cannot hold: control characters (names, titles), NUL
    /// (notes), bidirectional control characters (all three, the database's CHECK).
    case invalidCharacters = "invalid_characters"
    /// Text the database's CHECK constraint refused (length or surrounding white space).
    case invalidText = "invalid_text"
    /// A number (or a week) outside what the field can hold.
    case outOfRange = "out_of_range"
    /// A page cursor that is not this listing's `next_cursor`.
    case invalidCursor = "invalid_cursor"
    /// A list that names the same value twice (a weekday in `schedule.days`).
    case duplicateValue = "duplicate_value"
    /// A schedule the database's CHECK (`habit.valid_schedule`) refused; the worker's own
    /// checks answer more precisely first, so this is only seen if a shape slips past them.
    case invalidSchedule = "invalid_schedule"
    /// A param that is not allowed together with the others (e.g. `list_id` with view `inbox`).
    case notAllowed = "not_allowed"
    /// `account.delete`'s `confirm` is not the `user_id` it deletes.
    case confirmationMismatch = "confirmation_mismatch"
    /// An account document whose `format` is not "habit-account" or whose `version` is not 1.
    case unsupportedFormat = "unsupported_format"
    /// An id that names a row which is not there: an account document's row naming a habit,
    /// list or area the document does not hold, or a habit's `area_id` that is not one of the
    /// user's areas.
    case unknownReference = "unknown_reference"
    /// Periods out of order: not oldest first, overlapping, ending before they start, or an open
    /// period that is not the last.
    case invalidOrder = "invalid_order"
    /// An account document with more rows of a kind than one import takes (docs/protocol.md "Accounts").
    case tooMany = "too_many"
    /// Not a decimal string of this service: digits, an optional point and at most 3 fraction
    /// digits, at most 999999999.999 ("2.5"; not 2.5 as a JSON number, "1e3", "-1" or ".5").
    case invalidDecimal = "invalid_decimal"
    /// Not a local time of day "HH:MM" (or "HH:MM:SS").
    case invalidTime = "invalid_time"
    /// A change a habit cannot take: its kind or its target's period, fixed when it is created.
    case notSupported = "not_supported"
    /// A boolean habit's value or target that is not a whole number of times.
    case notWhole = "not_whole"
    /// Not a reminder firing id `<reminder id>/<YYYY-MM-DD>` (reminders.claim, reminders.ack).
    case invalidFiringID = "invalid_firing_id"
}

/// One of the user's completions or skips that an `account.import` `merge` keeps (the document
/// lacks it) and would leave on a day its habit is not on: `kind` `completions` or `skips`.
public struct ImportKeptDay: Equatable, Sendable {
    public let kind: String
    public let date: CalendarDate

    public init(kind: String, date: CalendarDate) {
        self.kind = kind
        self.date = date
    }

    static func kind(ofTable table: String) -> String? {
        switch table {
        case "habit_completions": "completions"
        case "habit_skips": "skips"
        default: nil
        }
    }
}

extension StoreError {
    /// Maps the database errors that stand for a domain rule; anything else is rethrown as is
    /// (connection loss, timeouts and bugs are the caller's to classify).
    static func mapping(_ error: Error) -> Error {
        guard var postgres = error as? PostgresError, let code = postgres.sqlState else { return error }
        postgres.recoverFieldsDroppedByCitus()
        if code.isInClass("23"), let constraint = postgres.constraint, case let (field, reason)? = constraintFields[constraint] {
            return StoreError.invalidInput(field: field, reason: reason, message: constraintMessages[constraint] ?? "violates \(constraint)")
        }
        switch code {
        case .foreignKeyViolation:
            // A completion or task pointing at a habit/list the user does not own.
            return StoreError.notFound
        case .invalidParameterValue:
            // AT TIME ZONE with an unknown zone (only reachable if validation was skipped).
            return StoreError.invalidInput(field: "timezone", reason: .invalidTimeZone, message: "unknown time zone")
        case .rowLimitExceeded:
            return StoreError.limitExceeded(table: postgres.table ?? "")
        case .idConflict:
            return StoreError.idConflict
        case .importRefused:
            // With TABLE set, HINT is the date of the user's row in that table that a merge would
            // leave on a day its habit is not on (sql/functions/accounts.sql); otherwise today.
            let date = postgres.hint.flatMap(CalendarDate.init(iso8601:))
            if let table = postgres.table, let kind = ImportKeptDay.kind(ofTable: table), let date {
                return StoreError.importRefused(path: postgres.column ?? "document", reason: postgres.detail ?? "", today: nil,
                                                kept: ImportKeptDay(kind: kind, date: date))
            }
            return StoreError.importRefused(path: postgres.column ?? "document", reason: postgres.detail ?? "", today: date)
        // The completion and skip rules (sql/functions/history.sql), raised by the tables' triggers for every
        // writer. HB003's DETAIL is the user's today (a documented field, not message text).
        case .futureDate:
            if let detail = postgres.detail, let today = CalendarDate(iso8601: detail) {
                return StoreError.futureDate(today: today)
            }
        case .habitNotActive:
            return StoreError.habitNotActive
        case .invalidReminderRequest:
            // The sender's functions name the parameter and the reason (sql/functions/reminders.sql).
            let reason = postgres.detail.flatMap(InputFailure.init(rawValue:)) ?? .outOfRange
            return StoreError.invalidInput(field: postgres.column ?? "params", reason: reason, message: postgres.message)
        case .doneAndSkipped:
            return StoreError.invalidState("done_and_skipped")
        case .overTarget:
            return StoreError.invalidState("over_target")
        case .weekTargetMet:
            return StoreError.invalidState("week_target_met")
        default:
            break
        }
        return error
    }

    /// Constraints that guard an input field (CHECK, or the time-zone foreign key): the field and
    /// what the constraint refuses. Validation usually refuses the value first, more precisely.
    static let constraintFields: [String: (field: String, reason: InputFailure)] = [
        "habit_templates_name_check": ("name", .invalidText),
        "habit_templates_icon_check": ("icon", .invalidIcon),
        "habit_templates_color_check": ("color", .invalidColor),
        "habit_templates_schedule_check": ("schedule", .invalidSchedule),
        // A bad schedule on an active habit meets this one first: the history trigger (BEFORE
        // UPDATE) writes the new period before the habit's own CHECK is evaluated.
        "habit_periods_schedule_check": ("schedule", .invalidSchedule),
        "profiles_timezone_fkey": ("timezone", .invalidTimeZone),
        "tasks_title_check": ("title", .invalidText),
        "tasks_notes_check": ("notes", .tooLong),
        "task_lists_name_check": ("name", .invalidText),
        // Bidirectional control characters (habit.has_no_bidi_controls, sql/migrations/0019):
        // only the database checks them, so these answer the worker's requests too.
        "habit_templates_name_bidi_check": ("name", .invalidCharacters),
        "task_lists_name_bidi_check": ("name", .invalidCharacters),
        "tasks_title_bidi_check": ("title", .invalidCharacters),
        "tasks_notes_bidi_check": ("notes", .invalidCharacters),
        // The date range (sql/migrations/0021), kept by the tables' BEFORE triggers, which raise
        // 23514 with these names: the worker refuses such a date first, except for an import's
        // or a sync's rows, which reach the database as they are.
        "habit_completions_date_range": ("date", .outOfRange),
        "habit_skips_date_range": ("date", .outOfRange),
        "habit_templates_activated_at_range": ("activated_at", .outOfRange),
        "habit_periods_started_at_range": ("activated_at", .outOfRange),
        // Measurable habits, check-ins and notes (sql/migrations/0029).
        "habit_templates_unit_check": ("unit", .invalidText),
        "habit_templates_target_check": ("target", .outOfRange),
        "habit_templates_boolean_target_check": ("target", .notWhole),
        "habit_templates_boolean_unit_check": ("unit", .notAllowed),
        // Weekly targets (sql/migrations/0033).
        "habit_templates_week_target_schedule": ("schedule", .invalidSchedule),
        "habit_templates_week_target_counted": ("target", .outOfRange),
        "habit_templates_target_period_fixed": ("target_period", .notSupported),
        "habit_templates_kind_fixed": ("kind", .notSupported),
        "habit_checkins_date_range": ("date", .outOfRange),
        "habit_checkins_value_check": ("value", .outOfRange),
        "habit_checkins_boolean_value": ("value", .notWhole),
        "habit_checkins_client_id_check": ("client_id", .invalidText),
        "habit_day_notes_date_range": ("date", .outOfRange),
        "habit_day_notes_note_check": ("note", .tooLong),
        "habit_day_notes_note_bidi_check": ("note", .invalidCharacters),
        "habit_templates_unit_bidi_check": ("unit", .invalidCharacters),
        // Reminders (sql/migrations/0036).
        "habit_reminders_local_time_check": ("time", .invalidTime),
        "habit_reminders_weekdays_check": ("days", .outOfRange),
        // Areas (sql/migrations/0037): a habit's area_id that is not one of the user's areas.
        "habit_templates_area_fkey": ("area_id", .unknownReference),
        "habit_areas_name_check": ("name", .invalidText),
        "habit_areas_name_bidi_check": ("name", .invalidCharacters),
    ]

    /// The prose of the constraints no validation in Swift answers first (the others say
    /// "violates <constraint>"), as the import's refusal says it (sql/functions/accounts.sql).
    static let constraintMessages: [String: String] = [
        "habit_templates_name_bidi_check": "must not contain bidirectional control characters",
        "task_lists_name_bidi_check": "must not contain bidirectional control characters",
        "tasks_title_bidi_check": "must not contain bidirectional control characters",
        "tasks_notes_bidi_check": "must not contain bidirectional control characters",
        "habit_completions_date_range": "must be on or after 1970-01-01",
        "habit_skips_date_range": "must be on or after 1970-01-01",
        "habit_templates_activated_at_range": "must be at or after 1970-01-01T00:00:00Z",
        "habit_periods_started_at_range": "must be at or after 1970-01-01T00:00:00Z",
        "habit_templates_week_target_schedule": "a weekly target's schedule is {\"type\":\"times_per_week\",\"times\":1}",
        "habit_templates_week_target_counted": "a boolean habit's weekly target counts 2 times or more (once a week is the times_per_week schedule)",
        "habit_templates_target_period_fixed": "a habit's target period is fixed when it is created",
        "habit_templates_kind_fixed": "a habit's kind is fixed when it is created",
        "habit_templates_boolean_target_check": "a boolean habit's target is a whole number of times, at most 1000",
        "habit_templates_boolean_unit_check": "a boolean habit counts times and has no unit",
        "habit_checkins_boolean_value": "a boolean habit's check-in counts whole times",
        "habit_checkins_date_range": "must be on or after 1970-01-01",
        "habit_day_notes_date_range": "must be on or after 1970-01-01",
        "habit_day_notes_note_check": "must be 1-1000 characters",
        "habit_day_notes_note_bidi_check": "must not contain bidirectional control characters",
        "habit_templates_unit_bidi_check": "must not contain bidirectional control characters",
    ]
}

extension PostgresError {
    /// A Citus coordinator relays an error raised on a worker node (a shard's trigger, constraint
    /// or our functions there) with its SQLSTATE, message, detail, hint and context only: the
    /// constraint, table and column fields are lost. The messages carry them too, in forms fixed
    /// by PostgreSQL (`… violates check constraint "name"`) or by our functions (HB001 "… rows in
    /// <table>; …", HB010 "<path>: …"), so they are read back from there when the fields are
    /// missing; with the fields present (PostgreSQL) nothing changes. docs/scaling.md, "Running on Citus".
    public mutating func recoverFieldsDroppedByCitus() {
        guard constraint == nil, table == nil, column == nil, let code = sqlState else { return }
        func between(_ prefix: String, _ suffix: String) -> String? {
            guard let start = message.range(of: prefix) else { return nil }
            let rest = message[start.upperBound...]
            guard let end = rest.range(of: suffix) else { return nil }
            let value = String(rest[..<end.lowerBound])
            return value.isEmpty || value.contains(" ") ? nil : value
        }
        if code.isInClass("23") {
            // A shard's constraint is named after the table's with the shard's id appended
            // ("habit_templates_name_check_102008"); none of ours ends in digits.
            constraint = between(" constraint \"", "\"").map { name in
                guard let underscore = name.lastIndex(of: "_"),
                      name[name.index(after: underscore)...].allSatisfy(\.isNumber), name.index(after: underscore) < name.endIndex
                else { return name }
                return String(name[..<underscore])
            }
        } else if code == .rowLimitExceeded {
            table = between(" rows in ", ";")
        } else if code == .importRefused, let separator = message.range(of: ": ") {
            let path = String(message[..<separator.lowerBound])
            if path.hasPrefix("document") { column = path }
        }
    }
}
