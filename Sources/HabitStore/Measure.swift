import Foundation
import PostgresClient

// Measurable habits, check-ins and notes (sql/migrations/0029; docs/protocol.md, "Habit").

/// How a habit's days are recorded (habit_templates.kind): fixed when the habit is created.
public enum HabitKind: String, Sendable, CaseIterable {
    /// Done or not; a target above 1 counts check-ins ("8 times").
    case boolean
    /// A value a day (the sum of its check-ins) against a target, in a unit.
    case measurable
}

/// Whether a day's value must reach the target or stay under it.
public enum TargetType: String, Sendable, CaseIterable {
    case atLeast = "at_least"
    case atMost = "at_most"
}

/// What the target is per.
public enum TargetPeriod: String, Sendable, CaseIterable {
    case day, week
}

/// An exact decimal of at most 9 integer and 3 fraction digits, as the database's numeric
/// columns hold them (sql/0029) and the protocol writes them: a string such as "2.5", never a
/// binary floating-point number. `text` is normalized: no leading zeros, no trailing fraction
/// zeros, no lone point ("05.50" → "5.5", "3.000" → "3").
public struct DecimalValue: Hashable, Sendable, CustomStringConvertible, Comparable {
    public let text: String
    public var description: String { text }

    /// The largest value a column takes: 999999999.999.
    public static let maximum = DecimalValue(normalizing: "999999999.999")!
    public static let zero = DecimalValue(normalizing: "0")!
    public static let one = DecimalValue(normalizing: "1")!

    /// nil unless `text` is digits with an optional point and at most 3 fraction digits, and at
    /// most `maximum` (signs, exponents and white space are not decimals here): an input value.
    public init?(normalizing text: String) {
        self.init(normalizing: text, integerDigits: 9)
    }

    /// As `init(normalizing:)` with up to `integerDigits` integer digits: a day's total may pass
    /// `maximum` (100 check-ins of it), and is answered exactly all the same.
    init?(normalizing text: String, integerDigits: Int) {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let integer = parts[0], fraction = parts.count > 1 ? parts[1] : ""
        guard !integer.isEmpty, integer.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
              parts.count == 1 || !fraction.isEmpty, fraction.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        var whole = String(integer.drop { $0 == "0" })
        if whole.isEmpty { whole = "0" }
        var part = String(fraction)
        while part.hasSuffix("0") { part.removeLast() }
        guard whole.count <= integerDigits, part.count <= 3 else { return nil }
        self.text = part.isEmpty ? whole : whole + "." + part
    }

    /// The value in thousandths (exact: up to 15 integer digits fit an Int64).
    public var thousandths: Int64 {
        let parts = text.split(separator: ".", maxSplits: 1)
        let fraction = parts.count > 1 ? String(parts[1]) + String(repeating: "0", count: 3 - parts[1].count) : "000"
        return Int64(parts[0])! * 1000 + Int64(fraction)!
    }

    public init(thousandths: Int64) {
        let whole = thousandths / 1000, part = thousandths % 1000
        let fraction = String(part).count < 3 ? String(repeating: "0", count: 3 - String(part).count) + String(part) : String(part)
        self.init(normalizing: part == 0 ? String(whole) : "\(whole).\(fraction)", integerDigits: 15)!
    }

    public var isWhole: Bool { !text.contains(".") }

    public static func < (lhs: DecimalValue, rhs: DecimalValue) -> Bool { lhs.thousandths < rhs.thousandths }

    /// A numeric the database sent (trailing zeros of its scale dropped).
    init(_ numeric: PostgresNumeric) throws {
        guard let value = DecimalValue(normalizing: numeric.text, integerDigits: 15) else {
            throw PostgresError(kind: .decoding, message: "numeric \(numeric.text) is not a decimal of this service")
        }
        self = value
    }
}

/// A habit's kind and target (habit_templates.kind, unit, target, target_type, target_period).
public struct HabitMeasure: Sendable, Equatable {
    public var kind: HabitKind
    /// A measurable habit's unit (1–30 characters), or nil; a boolean habit has none (it counts times).
    public var unit: String?
    public var target: DecimalValue
    public var targetType: TargetType
    public var targetPeriod: TargetPeriod

    public init(kind: HabitKind = .boolean, unit: String? = nil, target: DecimalValue = .one,
                targetType: TargetType = .atLeast, targetPeriod: TargetPeriod = .day) {
        self.kind = kind
        self.unit = unit
        self.target = target
        self.targetType = targetType
        self.targetPeriod = targetPeriod
    }

    /// The default: a boolean habit done once a day.
    public static let boolean = HabitMeasure()

    /// Decodes kind, unit, target, target_type, target_period, in this order from column `first`.
    init(row: Row, at first: Int) throws {
        // The columns' CHECK constraints hold the values to these sets.
        guard let kind = HabitKind(rawValue: try row.decode(String.self, at: first)),
              let targetType = TargetType(rawValue: try row.decode(String.self, at: first + 3)),
              let targetPeriod = TargetPeriod(rawValue: try row.decode(String.self, at: first + 4)) else {
            throw PostgresError(kind: .decoding, message: "unknown habit kind or target in \(row.columnNames)")
        }
        self.init(kind: kind, unit: try row.decode(String?.self, at: first + 1),
                  target: try DecimalValue(row.decode(PostgresNumeric.self, at: first + 2)),
                  targetType: targetType, targetPeriod: targetPeriod)
    }

}

/// One check-in (public.habit_checkins).
public struct Checkin: Sendable, Equatable {
    public var id: UUID
    public var templateID: UUID
    public var date: CalendarDate
    public var value: DecimalValue
    /// The local time of day, "HH:MM" or "HH:MM:SS", when the client gave one.
    public var time: String?
    public var clientID: String?
    public var createdAt: PostgresTimestamp
}

/// A habit's day after a check-in write: its value (the check-ins' sum; the target for a
/// completion without check-ins), how many check-ins, and its state.
public struct DayValue: Sendable, Equatable {
    public var value: DecimalValue
    public var checkins: Int
    public var state: DayState
    /// A weekly target's (sql/0033): the check-ins' sum of the user's week holding the day.
    public var weekValue: DecimalValue? = nil
}

/// What `checkins.add` did.
public struct CheckinAdded: Sendable, Equatable {
    public var id: UUID
    /// False when a retried client id found its check-in.
    public var created: Bool
    public var day: DayValue
}

/// What `checkins.remove` did: the check-in's habit and day, and the day now.
public struct CheckinRemoved: Sendable, Equatable {
    public var templateID: UUID
    public var date: CalendarDate
    public var day: DayValue
}

/// What `completions.set` with a value did.
public struct DayValueChange: Sendable, Equatable {
    public var day: DayValue
    public var changed: Bool
}
