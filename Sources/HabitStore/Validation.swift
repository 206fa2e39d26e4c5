import Foundation
import PostgresClient

/// Input rules shared by the repositories. The database enforces the same rules with CHECK
/// constraints; checking here first gives a precise error naming the field.
enum Validation {
    static func habitName(_ raw: String) throws -> String {
        try trimmedText(raw, field: "name", maxLength: 100)
    }

    static func trimmedText(_ raw: String, field: String, maxLength: Int) throws -> String {
        let text = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { throw StoreError.invalidInput(field: field, reason: .empty, message: "must not be empty") }
        // PostgreSQL's char_length counts code points; so does this.
        guard text.unicodeScalars.count <= maxLength else {
            throw StoreError.invalidInput(field: field, reason: .tooLong, message: "must be at most \(maxLength) characters")
        }
        guard !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw StoreError.invalidInput(field: field, reason: .invalidCharacters, message: "must not contain control characters")
        }
        return text
    }

    /// An SF Symbol name: lowercase words of letters and digits joined by dots (`figure.run`).
    static func icon(_ raw: String) throws -> String {
        let parts = raw.split(separator: ".", omittingEmptySubsequences: false)
        let valid = raw.utf8.count <= 100 && !parts.isEmpty && parts.allSatisfy { part in
            !part.isEmpty && part.utf8.allSatisfy { (97...122).contains($0) || (48...57).contains($0) }
        }
        guard valid else {
            throw StoreError.invalidInput(field: "icon", reason: .invalidIcon, message: "must be an SF Symbol name such as figure.run")
        }
        return raw
    }

    /// `#RRGGBB`, stored uppercase.
    static func color(_ raw: String) throws -> String {
        let bytes = Array(raw.utf8)
        guard bytes.count == 7, bytes[0] == UInt8(ascii: "#"),
              bytes[1...].allSatisfy({ (48...57).contains($0) || (65...70).contains($0) || (97...102).contains($0) })
        else { throw StoreError.invalidInput(field: "color", reason: .invalidColor, message: "must be #RRGGBB") }
        return raw.uppercased()
    }

    /// A time-zone name (a per-request override or a profile's zone) must be one PostgreSQL
    /// knows: habit.time_zones, read once per process (`TimeZoneNames`), so checking costs no
    /// query. nil (no override) passes. Stored zones are also held by profiles_timezone_fkey.
    static func timeZone(_ zone: String?, using connection: Connection) throws {
        guard let zone else { return }
        guard try TimeZoneNames.shared.isValid(zone, using: connection) else {
            throw StoreError.invalidInput(field: "timezone", reason: .invalidTimeZone, message: "not a time zone PostgreSQL knows (pg_timezone_names)")
        }
    }

    static func sortOrder(_ value: Int, field: String = "sort_order") throws -> Int {
        guard let narrowed = Int32(exactly: value) else {
            throw StoreError.invalidInput(field: field, reason: .outOfRange, message: "out of range \(Int32.min)...\(Int32.max)")
        }
        return Int(narrowed)
    }
}

// MARK: - Tasks

extension Validation {
    static func taskTitle(_ raw: String) throws -> String {
        try trimmedText(raw, field: "title", maxLength: 500)
    }

    /// Free text kept as written (line breaks and surrounding spaces included), at most
    /// 10 000 code points like tasks_notes_check. NUL cannot be stored in PostgreSQL text.
    static func taskNotes(_ raw: String) throws -> String {
        guard raw.unicodeScalars.count <= 10_000 else {
            throw StoreError.invalidInput(field: "notes", reason: .tooLong, message: "must be at most 10000 characters")
        }
        guard !raw.unicodeScalars.contains("\u{0}") else {
            throw StoreError.invalidInput(field: "notes", reason: .invalidCharacters, message: "must not contain NUL characters")
        }
        return raw
    }

    static func listName(_ raw: String) throws -> String {
        try trimmedText(raw, field: "name", maxLength: 100)
    }

    /// A task position: any 32-bit integer (tasks.position is an integer column).
    static func taskPosition(_ value: Int) throws -> Int32 {
        Int32(try sortOrder(value, field: "position"))
    }
}

// MARK: - Measurable habits, check-ins and notes (sql/0029)

extension Validation {
    /// A measurable habit's unit: trimmed, 1–30 characters, no control characters.
    static func unit(_ raw: String) throws -> String {
        try trimmedText(raw, field: "unit", maxLength: 30)
    }

    /// A kind and target the database takes: a boolean habit's target whole (at most 1000) and
    /// without a unit; the target above 0. A weekly target's rules (its schedule, a boolean one's
    /// count above 1) are the database's CHECKs alone (sql/0033).
    static func measure(_ measure: HabitMeasure) throws -> HabitMeasure {
        var measure = measure
        measure.unit = try measure.unit.map(unit)
        if measure.kind == .boolean {
            if measure.unit != nil {
                throw StoreError.invalidInput(field: "unit", reason: .notAllowed, message: "a boolean habit counts times and has no unit")
            }
            guard measure.target.isWhole, measure.target.thousandths <= 1_000_000 else {
                throw StoreError.invalidInput(field: "target", reason: .notWhole, message: "a boolean habit's target is a whole number of times, 1 to 1000")
            }
        }
        guard measure.target > .zero else {
            throw StoreError.invalidInput(field: "target", reason: .outOfRange, message: "must be above 0")
        }
        return measure
    }

    /// A day's note: kept as written, at most 1000 code points (habit_day_notes_note_check).
    static func dayNote(_ raw: String) throws -> String {
        guard raw.unicodeScalars.count <= 1000 else {
            throw StoreError.invalidInput(field: "note", reason: .tooLong, message: "must be at most 1000 characters")
        }
        guard !raw.unicodeScalars.contains("\u{0}") else {
            throw StoreError.invalidInput(field: "note", reason: .invalidCharacters, message: "must not contain NUL characters")
        }
        return raw
    }

    /// A check-in's client id: 1–100 characters, no white space or control characters.
    static func checkinClientID(_ raw: String) throws -> String {
        guard !raw.isEmpty, raw.unicodeScalars.count <= 100,
              !raw.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F }) else {
            throw StoreError.invalidInput(field: "client_id", reason: .invalidText, message: "must be 1-100 characters without white space")
        }
        return raw
    }
}
