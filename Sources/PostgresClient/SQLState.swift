/// A PostgreSQL SQLSTATE code (five characters, see Appendix A of the PostgreSQL manual).
///
/// An open set of constants rather than a closed enum: servers add codes, and callers
/// match on the ones they care about or on the class (the first two characters).
public struct SQLState: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }

    /// The class: the first two characters ("23" = integrity constraint violation).
    public var errorClass: String { String(rawValue.prefix(2)) }

    public func isInClass(_ errorClass: String) -> Bool { self.errorClass == errorClass }

    public var description: String { rawValue }

    // Class 08 — connection exception
    public static let connectionException: SQLState = "08000"
    public static let connectionDoesNotExist: SQLState = "08003"
    public static let connectionFailure: SQLState = "08006"
    // Class 22 — data exception
    public static let dataException: SQLState = "22000"
    public static let invalidDatetimeFormat: SQLState = "22007"
    public static let divisionByZero: SQLState = "22012"
    public static let datetimeFieldOverflow: SQLState = "22008"
    public static let invalidParameterValue: SQLState = "22023"
    public static let invalidTextRepresentation: SQLState = "22P02"
    public static let stringDataRightTruncation: SQLState = "22001"
    // Class 23 — integrity constraint violation
    public static let integrityConstraintViolation: SQLState = "23000"
    public static let notNullViolation: SQLState = "23502"
    public static let foreignKeyViolation: SQLState = "23503"
    public static let uniqueViolation: SQLState = "23505"
    public static let checkViolation: SQLState = "23514"
    public static let exclusionViolation: SQLState = "23P01"
    // Class 25 — invalid transaction state
    public static let inFailedSQLTransaction: SQLState = "25P02"
    public static let idleInTransactionSessionTimeout: SQLState = "25P03"
    // Class 26 — invalid SQL statement name (e.g. a prepared statement that does not exist)
    public static let invalidSQLStatementName: SQLState = "26000"
    // Class 40 — transaction rollback
    public static let serializationFailure: SQLState = "40001"
    public static let deadlockDetected: SQLState = "40P01"
    // Class 42 — syntax error or access rule violation
    public static let insufficientPrivilege: SQLState = "42501"
    public static let undefinedTable: SQLState = "42P01"
    public static let undefinedFunction: SQLState = "42883"
    public static let undefinedObject: SQLState = "42704"
    public static let duplicateObject: SQLState = "42710"
    public static let duplicateDatabase: SQLState = "42P04"
    public static let duplicatePreparedStatement: SQLState = "42P05"
    // Class 53 — insufficient resources
    public static let tooManyConnections: SQLState = "53300"
    // Class 55 — object not in prerequisite state
    public static let lockNotAvailable: SQLState = "55P03"
    // Class 57 — operator intervention
    public static let queryCanceled: SQLState = "57014"
    public static let adminShutdown: SQLState = "57P01"
    public static let crashShutdown: SQLState = "57P02"
    public static let cannotConnectNow: SQLState = "57P03"
    public static let idleSessionTimeout: SQLState = "57P05"
    // Class HB — the habit service's own (sql/, documented in docs/schema.md)
    /// A user already has `habit.row_limits`' most rows in a table (sql/functions/rows.sql).
    public static let rowLimitExceeded: SQLState = "HB001"
    /// A create's client-supplied id is another row's: other fields, or another user's (sql/functions/habits.sql).
    public static let idConflict: SQLState = "HB002"
    /// Completing after the user's today, or skipping more than 366 days ahead; DETAIL is the
    /// user's today as YYYY-MM-DD (sql/functions/history.sql).
    public static let futureDate: SQLState = "HB003"
    /// Completing or skipping a habit that is not on that day (sql/functions/history.sql, habit.habit_days_at).
    public static let habitNotActive: SQLState = "HB004"
    /// A day both done and skipped (sql/functions/history.sql).
    public static let doneAndSkipped: SQLState = "HB005"
    /// `habit.backfill` set by a role that is not habit_admin (sql/functions/history.sql).
    public static let backfillNotAllowed: SQLState = "HB006"
    /// An at-most habit's day marked done while its check-ins exceed the target (sql/triggers/habit_completions.sql, sql/0031).
    public static let overTarget: SQLState = "HB007"
    /// A weekly target's week marked met on a day after the one it was met on; DETAIL is that
    /// day as YYYY-MM-DD (functions/checkins.sql, habit.week_toggle, sql/0033).
    public static let weekTargetMet: SQLState = "HB008"
    /// `habit.import_account` refused a document: COLUMN = the JSON path, DETAIL = the reason
    /// (sql/functions/accounts.sql).
    public static let importRefused: SQLState = "HB010"
    /// A reminder sender's bad window, limit, lease or firing id: COLUMN = the parameter,
    /// DETAIL = the reason (sql/functions/reminders.sql).
    public static let invalidReminderRequest: SQLState = "HB011"
    // Class P0 — PL/pgSQL
    public static let raiseException: SQLState = "P0001"
}
