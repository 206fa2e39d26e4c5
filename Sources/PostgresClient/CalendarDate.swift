/// A calendar date (PostgreSQL `date`): year, month, day — no time, no time zone.
///
/// It is exchanged with the server in binary form (days since 2000-01-01), so it can never
/// shift with the process's or the session's time zone. Years are astronomical
/// (0 = 1 BC), covering PostgreSQL's whole range.
public struct CalendarDate: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let year: Int
    public let month: Int
    public let day: Int

    /// Returns nil unless the triple names a real day of the proleptic Gregorian calendar.
    public init?(year: Int, month: Int, day: Int) {
        guard (1...12).contains(month), day >= 1, day <= CalendarDate.daysIn(month: month, year: year) else {
            return nil
        }
        self.year = year
        self.month = month
        self.day = day
    }

    /// Parses strict `YYYY-MM-DD` (four-digit year 0001–9999), the API's date format.
    public init?(iso8601 string: String) {
        let bytes = Array(string.utf8)
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-") else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for index in range {
                let byte = bytes[index]
                guard byte >= 48, byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), year >= 1 else {
            return nil
        }
        self.init(year: year, month: month, day: day)
    }

    /// Days since 1970-01-01 (negative before).
    public init(daysSinceUnixEpoch days: Int) {
        // Howard Hinnant's civil_from_days: exact for the whole proleptic Gregorian calendar.
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        self.year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        self.month = month
        self.day = day
    }

    public var daysSinceUnixEpoch: Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let shiftedMonth = (month + 9) % 12
        let dayOfYear = (153 * shiftedMonth + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// PostgreSQL's date epoch, 2000-01-01, is day 10957 of the Unix epoch.
    static let postgresEpochOffset = 10_957

    public func adding(days: Int) -> CalendarDate {
        CalendarDate(daysSinceUnixEpoch: daysSinceUnixEpoch + days)
    }

    public func days(until other: CalendarDate) -> Int { other.daysSinceUnixEpoch - daysSinceUnixEpoch }

    /// ISO weekday: Monday = 1 … Sunday = 7.
    public var isoWeekday: Int {
        let mondayBased = (daysSinceUnixEpoch + 3) % 7 // 1970-01-01 was a Thursday
        return (mondayBased < 0 ? mondayBased + 7 : mondayBased) + 1
    }

    public static func < (lhs: CalendarDate, rhs: CalendarDate) -> Bool {
        (lhs.year, lhs.month, lhs.day) < (rhs.year, rhs.month, rhs.day)
    }

    /// `YYYY-MM-DD`; years outside 0…9999 keep their sign and all their digits.
    public var description: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(10)
        appendISO8601(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }


    static func isLeap(_ year: Int) -> Bool { (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
