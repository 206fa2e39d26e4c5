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
    /// With a day start (`dayStartMinutes` after midnight, profiles.day_starts_at), the first
    /// instant whose wall-clock time is at or after it on this date: what habit.local_day reads
    /// as this day (a start inside a skipped hour: the end of the gap).
    func startRFC3339(in zone: TimeZone, dayStartMinutes: Int = 0) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let (y, m, d) = components
        let seconds: Int
        if dayStartMinutes == 0 {
            // Local noon (the calendar is in `zone`) is inside the day whatever the DST rules;
            // startOfDay then finds the day's first instant.
            // (Never nil for a valid date; UTC midnight is a fallback that cannot crash.)
            let guess = calendar.date(from: DateComponents(year: y, month: m, day: d, hour: 12))
            let start = guess.map { calendar.startOfDay(for: $0) } ?? Date(timeIntervalSince1970: Double(daysSinceUnixEpoch) * 86_400)
            seconds = Int(start.timeIntervalSince1970.rounded())
        } else {
            // The wall time D + start read with each offset the zone has within a day of it;
            // the earliest reading that shows exactly that wall time, else (a gap) the earliest
            // instant after it whose wall time is past it: the gap's end.
            let wall = daysSinceUnixEpoch * 86_400 + dayStartMinutes * 60
            func offset(_ instant: Int) -> Int { zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(instant))) }
            let offsets = Set((-48...48).map { offset(wall + $0 * 1_800) })
            let readings = offsets.map { wall - $0 }.filter { $0 + offset($0) == wall }
            if let first = readings.min() {
                seconds = first
            } else {
                var instant = offsets.map { wall - $0 }.min()!
                while instant + offset(instant) < wall { instant += 60 }
                seconds = instant
            }
        }
        let day = LoopDay(daysSinceUnixEpoch: Int((Double(seconds) / 86_400).rounded(.down)))
        let secondOfDay = seconds - day.daysSinceUnixEpoch * 86_400
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(day)T\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60))Z"
    }
}
