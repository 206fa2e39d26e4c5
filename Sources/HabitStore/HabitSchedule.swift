import PostgresClient

/// When a habit is due (docs/protocol.md, "Schedules"; `habit.valid_schedule`, in the baseline, is the
/// rule, a CHECK on `habit_templates.schedule` and `habit_periods.schedule`). Stored as jsonb:
/// `{"type":"daily"}`, `{"type":"weekdays","days":[1,3,5]}`, `{"type":"every_n_days","n":2}`,
/// `{"type":"times_per_week","times":3}`, `{"type":"times_in_days","times":2,"days":3}` (sql/0034).
public enum HabitSchedule: Sendable, Hashable, CustomStringConvertible {
    case daily
    /// ISO weekdays (1 = Monday … 7 = Sunday): non-empty, no duplicates. Stored ascending.
    case weekdays([Int])
    /// Due when the days since the period's first local day are a multiple of n (1…365).
    case everyNDays(Int)
    /// The week (per the user's week start) needs that many completions (1…7).
    case timesPerWeek(Int)
    /// Each block of `days` days from the period's first local day needs `times` completions
    /// (1 ≤ times < days ≤ 365): Loop Habit Tracker's "n times in m days".
    case timesInDays(times: Int, days: Int)

    public static let weekdayRange = 1...7
    public static let intervalRange = 1...365
    public static let timesRange = 1...7
    /// times_in_days' block length.
    public static let blockRange = 2...365
    /// The `type` of each case, in the order the protocol lists them.
    public static let typeNames = ["daily", "weekdays", "every_n_days", "times_per_week", "times_in_days"]

    public var typeName: String {
        switch self {
        case .daily: "daily"
        case .weekdays: "weekdays"
        case .everyNDays: "every_n_days"
        case .timesPerWeek: "times_per_week"
        case .timesInDays: "times_in_days"
        }
    }

    /// The JSON text, `type` first: what the worker writes and the statements bind as jsonb.
    public var description: String {
        switch self {
        case .daily: #"{"type":"daily"}"#
        case .weekdays(let days): #"{"type":"weekdays","days":["# + days.map(String.init).joined(separator: ",") + "]}"
        case .everyNDays(let n): #"{"type":"every_n_days","n":\#(n)}"#
        case .timesPerWeek(let times): #"{"type":"times_per_week","times":\#(times)}"#
        case .timesInDays(let times, let days): #"{"type":"times_in_days","times":\#(times),"days":\#(days)}"#
        }
    }

    var jsonb: JSONB { JSONB(text: description) }

    /// The schedule with the ranges checked and the weekdays sorted, or `invalidInput` naming
    /// the member at fault (`schedule.days[1]`, `schedule.n`, …): the precise answer before the
    /// database's CHECK, which stays the wall for every other writer.
    public func validated() throws(StoreError) -> HabitSchedule {
        switch self {
        case .daily:
            return self
        case .weekdays(let days):
            guard !days.isEmpty else {
                throw .invalidInput(field: "schedule.days", reason: .outOfRange, message: "must list 1 to 7 ISO weekdays")
            }
            for (index, day) in days.enumerated() {
                guard Self.weekdayRange.contains(day) else {
                    throw .invalidInput(field: "schedule.days[\(index)]", reason: .outOfRange, message: "an ISO weekday: 1 (Monday) to 7 (Sunday)")
                }
                guard !days[..<index].contains(day) else {
                    throw .invalidInput(field: "schedule.days[\(index)]", reason: .duplicateValue, message: "weekday \(day) is listed twice")
                }
            }
            return .weekdays(days.sorted())
        case .everyNDays(let n):
            guard Self.intervalRange.contains(n) else {
                throw .invalidInput(field: "schedule.n", reason: .outOfRange, message: "out of range 1...365")
            }
            return self
        case .timesPerWeek(let times):
            guard Self.timesRange.contains(times) else {
                throw .invalidInput(field: "schedule.times", reason: .outOfRange, message: "out of range 1...7")
            }
            return self
        case .timesInDays(let times, let days):
            guard Self.blockRange.contains(days) else {
                throw .invalidInput(field: "schedule.days", reason: .outOfRange, message: "out of range 2...365")
            }
            guard (1..<days).contains(times) else {
                throw .invalidInput(field: "schedule.times", reason: .outOfRange, message: "out of range 1...\(days - 1) (fewer than days; as many is daily)")
            }
            return self
        }
    }

    /// Reads a stored schedule from its jsonb text. The column's CHECK guarantees the shape
    /// (the type plus integers under one known key), so the type is found by its name and the
    /// numbers are the digit runs, without a JSON parser on the hot path of every habit row.
    /// Anything else fails to decode rather than being guessed.
    init(storedJSON text: String) throws {
        let utf8 = Array(text.utf8)
        var numbers: [Int] = []
        var current: Int?
        for byte in utf8 {
            if byte >= 0x30 && byte <= 0x39 {
                current = (current ?? 0) &* 10 &+ Int(byte - 0x30)
                if current! > 1000 { throw PostgresDecodingFailure("schedule number too large: \(text)") }
            } else if let value = current {
                numbers.append(value)
                current = nil
            }
        }
        let decoded: HabitSchedule
        if Self.bytes(utf8, contain: #""times_in_days""#), numbers.count == 2 {
            // jsonb writes keys shortest first: "days" before "times"; the worker's text
            // (description) writes "times" first. Either way the key before each number names it.
            let daysFirst = Self.offset(of: #""days""#, in: utf8)! < Self.offset(of: #""times""#, in: utf8)!
            decoded = .timesInDays(times: daysFirst ? numbers[1] : numbers[0], days: daysFirst ? numbers[0] : numbers[1])
        } else if Self.bytes(utf8, contain: #""weekdays""#) {
            decoded = .weekdays(numbers)
        } else if Self.bytes(utf8, contain: #""every_n_days""#), numbers.count == 1 {
            decoded = .everyNDays(numbers[0])
        } else if Self.bytes(utf8, contain: #""times_per_week""#), numbers.count == 1 {
            decoded = .timesPerWeek(numbers[0])
        } else if Self.bytes(utf8, contain: #""daily""#), numbers.isEmpty {
            decoded = .daily
        } else {
            throw PostgresDecodingFailure("not a schedule: \(text)")
        }
        guard let valid = try? decoded.validated() else { throw PostgresDecodingFailure("not a valid schedule: \(text)") }
        self = valid
    }

    /// Whether `haystack` (a schedule's UTF-8) holds `needle`'s bytes in a row: the names
    /// searched for are ASCII, so this is String.contains for them, without Foundation's
    /// locale-aware search (~5 % of the worker's CPU under day.get: five schedules a request).
    private static func bytes(_ haystack: [UInt8], contain needle: StaticString) -> Bool {
        offset(of: needle, in: haystack) != nil
    }

    private static func offset(of needle: StaticString, in haystack: [UInt8]) -> Int? {
        let pattern = UnsafeBufferPointer(start: needle.utf8Start, count: needle.utf8CodeUnitCount)
        guard !pattern.isEmpty, haystack.count >= pattern.count else { return pattern.isEmpty ? 0 : nil }
        for start in 0...(haystack.count - pattern.count) where haystack[start] == pattern[0] {
            if haystack[start..<(start + pattern.count)].elementsEqual(pattern) { return start }
        }
        return nil
    }
}
