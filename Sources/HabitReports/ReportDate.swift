/// A calendar date (proleptic Gregorian, no time, no zone) as the pictures need it: a day
/// number to lay out columns, the weekday, the month for labels. Kept here so that this module
/// needs nothing beyond Foundation; callers convert from their own date type.
public struct ReportDate: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Days since 1970-01-01.
    public let dayNumber: Int

    public init(dayNumber: Int) { self.dayNumber = dayNumber }

    /// nil for an impossible date (2026-02-30).
    public init?(year: Int, month: Int, day: Int) {
        guard (1...12).contains(month), day >= 1, day <= Self.daysIn(month: month, year: year) else { return nil }
        // Howard Hinnant's days_from_civil.
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        dayNumber = era * 146_097 + doe - 719_468
    }

    /// "YYYY-MM-DD".
    public init?(iso8601 text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]) else { return nil }
        self.init(year: year, month: month, day: day)
    }

    public var components: (year: Int, month: Int, day: Int) {
        // Howard Hinnant's civil_from_days.
        let z = dayNumber + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// 1 = Monday … 7 = Sunday.
    public var isoWeekday: Int {
        let weekday = (dayNumber + 3) % 7 // 1970-01-01 was a Thursday (ISO 4)
        return (weekday < 0 ? weekday + 7 : weekday) + 1
    }

    public func adding(days: Int) -> ReportDate { ReportDate(dayNumber: dayNumber + days) }

    /// The first day of the week holding this date, for weeks starting on ISO weekday `start`.
    public func weekStart(_ start: WeekStartDay) -> ReportDate {
        adding(days: -((isoWeekday - start.isoWeekday + 7) % 7))
    }

    public var description: String {
        let (year, month, day) = components
        func pad(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))"
    }

    public static func < (lhs: ReportDate, rhs: ReportDate) -> Bool { lhs.dayNumber < rhs.dayNumber }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    static let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    static let weekdayNames = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]

    /// "Mar 2".
    var shortLabel: String {
        let (_, month, day) = components
        return "\(Self.monthNames[month - 1]) \(day)"
    }
}

/// The first day of a user's week (profiles.week_start; weekly_completion_counts.week_starts_on).
public enum WeekStartDay: String, Sendable, CaseIterable {
    case monday, sunday

    public var isoWeekday: Int { self == .monday ? 1 : 7 }

    public init?(isoWeekday: Int) {
        switch isoWeekday {
        case 1: self = .monday
        case 7: self = .sunday
        default: return nil
        }
    }
}
