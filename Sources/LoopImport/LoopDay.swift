import Foundation

/// A calendar date (proleptic Gregorian), as Loop's CSV writes it (`yyyy-MM-dd`, formatted in
/// UTC from its day timestamps, so it is the user's local date in Loop) and as our documents
/// store completions. Kept as days since 1970-01-01 so ordering and arithmetic are integers.
public struct LoopDay: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let daysSinceUnixEpoch: Int

    public init(daysSinceUnixEpoch: Int) { self.daysSinceUnixEpoch = daysSinceUnixEpoch }

    public init?(year: Int, month: Int, day: Int) {
        guard (1...9999).contains(year), (1...12).contains(month), day >= 1,
              day <= LoopDay.daysInMonth(year: year, month: month) else { return nil }
        // Howard Hinnant's days_from_civil.
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        daysSinceUnixEpoch = era * 146_097 + doe - 719_468
    }

    /// Exactly `YYYY-MM-DD` (what Loop's `yyyy-MM-dd` SimpleDateFormat writes).
    public init?(iso text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-") else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for byte in bytes[range] {
                guard (48...57).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10) else { return nil }
        self.init(year: year, month: month, day: day)
    }

    static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    public var components: (year: Int, month: Int, day: Int) {
        let z = daysSinceUnixEpoch + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    public var description: String {
        let (y, m, d) = components
        func pad(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))"
    }

    public static func < (lhs: LoopDay, rhs: LoopDay) -> Bool { lhs.daysSinceUnixEpoch < rhs.daysSinceUnixEpoch }

    public func adding(days: Int) -> LoopDay { LoopDay(daysSinceUnixEpoch: daysSinceUnixEpoch + days) }

    /// The instant this day starts in `zone`, as RFC 3339 UTC (`2026-11-01T23:00:00Z`; seconds
    /// only, since zone offsets are whole seconds). Where the zone skips midnight (a DST change
    /// at 00:00), the first instant of the day, as PostgreSQL's `D::timestamp AT TIME ZONE` does.
    func startRFC3339(in zone: TimeZone) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let (y, m, d) = components
        // Local noon (the calendar is in `zone`) is inside the day whatever the DST rules;
        // startOfDay then finds the day's first instant.
        // (Never nil for a valid date; UTC midnight is a fallback that cannot crash.)
        let guess = calendar.date(from: DateComponents(year: y, month: m, day: d, hour: 12))
        let start = guess.map { calendar.startOfDay(for: $0) } ?? Date(timeIntervalSince1970: Double(daysSinceUnixEpoch) * 86_400)
        let seconds = Int(start.timeIntervalSince1970.rounded())
        let day = LoopDay(daysSinceUnixEpoch: Int((Double(seconds) / 86_400).rounded(.down)))
        let secondOfDay = seconds - day.daysSinceUnixEpoch * 86_400
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(day)T\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60))Z"
    }
}
