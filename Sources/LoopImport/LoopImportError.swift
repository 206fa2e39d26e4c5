import JSONRPC

/// Why a Loop export was refused: a closed set of snake_case reasons (the `data.reason` of
/// `account.import` with `source: "loop"`), with the file and, for CSV, the 1-based line and
/// column of the offending character or field.
public struct LoopImportError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Reason: String, Sendable, CaseIterable {
        // zip
        case zipTruncated = "zip_truncated"
        case zipBadSignature = "zip_bad_signature"
        case zipUnsupported = "zip_unsupported"              // zip64, encryption, a method other than stored/deflate, multi-disk
        case zipEntryTooLarge = "zip_entry_too_large"
        case zipTooLarge = "zip_too_large"                   // too many entries or too many bytes in all
        case zipBadPath = "zip_bad_path"                     // absolute, `..`, backslash, NUL, not UTF-8
        case zipDuplicateEntry = "zip_duplicate_entry"
        case zipCorrupt = "zip_corrupt"                      // inflate failed, sizes or CRC-32 disagree
        // CSV
        case invalidUTF8 = "invalid_utf8"
        case csvUnterminatedQuote = "csv_unterminated_quote"
        case csvBadQuote = "csv_bad_quote"                   // a quote inside an unquoted field, or text after a closing quote
        case csvTooLarge = "csv_too_large"
        // Loop's files
        case missingHabitsFile = "missing_habits_file"
        case missingColumn = "missing_column"
        case wrongColumnCount = "wrong_column_count"
        case invalidPosition = "invalid_position"
        case duplicatePosition = "duplicate_position"
        case invalidHabitType = "invalid_habit_type"
        case invalidFrequency = "invalid_frequency"
        case invalidArchived = "invalid_archived"
        case unknownHabitFolder = "unknown_habit_folder"
        case duplicateHabitFolder = "duplicate_habit_folder"
        case invalidDate = "invalid_date"
        case duplicateDate = "duplicate_date"
        case invalidCheckmarkValue = "invalid_checkmark_value"
        case tooManyHabits = "too_many_habits"
        case tooManyCheckmarks = "too_many_checkmarks"
        // the converter's inputs
        case invalidTimezone = "invalid_timezone"
    }

    public var reason: Reason
    public var message: String
    /// The file inside the export (`Habits.csv`, `001 Run/Checkmarks.csv`), or nil for the zip itself.
    public var file: String?
    public var line: Int?
    public var column: Int?

    public init(_ reason: Reason, _ message: String, file: String? = nil, line: Int? = nil, column: Int? = nil) {
        self.reason = reason
        self.message = message
        self.file = file
        self.line = line
        self.column = column
    }

    /// `{"reason", "message", "file", "line", "column"}` (absent members null): the `data` of
    /// the JSON-RPC error `account.import` answers for a Loop export it cannot read.
    public var errorData: JSONValue {
        .object(JSONObject([
            ("reason", .string(reason.rawValue)),
            ("message", .string(message)),
            ("file", file.map { .string($0) } ?? .null),
            ("line", line.map { .int($0) } ?? .null),
            ("column", column.map { .int($0) } ?? .null),
        ]))
    }

    public var description: String {
        var place = file ?? "zip"
        if let line { place += ":\(line)" }
        if let column { place += ":\(column)" }
        return "\(place): \(message) (\(reason.rawValue))"
    }
}
