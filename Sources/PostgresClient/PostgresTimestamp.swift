import Foundation

/// An instant (PostgreSQL `timestamptz`) with PostgreSQL's microsecond precision.
///
/// Exchanged in binary (microseconds since 2000-01-01 00:00:00 UTC), so neither the
/// process's nor the session's time zone can alter it. Formatting is always RFC 3339 in UTC.
public struct PostgresTimestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Microseconds since 2000-01-01T00:00:00Z.
    public let microsecondsSincePostgresEpoch: Int64

    public init(microsecondsSincePostgresEpoch: Int64) {
        self.microsecondsSincePostgresEpoch = microsecondsSincePostgresEpoch
    }

    static let unixToPostgresMicroseconds: Int64 = 946_684_800_000_000

    public init(microsecondsSinceUnixEpoch: Int64) {
        self.microsecondsSincePostgresEpoch = microsecondsSinceUnixEpoch - Self.unixToPostgresMicroseconds
    }

    public var microsecondsSinceUnixEpoch: Int64 { microsecondsSincePostgresEpoch + Self.unixToPostgresMicroseconds }

    public init(_ date: Date) {
        let micros = (date.timeIntervalSince1970 * 1_000_000).rounded()
        self.init(microsecondsSinceUnixEpoch: Int64(micros))
    }

    public var date: Date { Date(timeIntervalSince1970: Double(microsecondsSinceUnixEpoch) / 1_000_000) }

    /// PostgreSQL's `infinity` / `-infinity`.
    public var isInfinite: Bool {
        microsecondsSincePostgresEpoch == .max || microsecondsSincePostgresEpoch == .min
    }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        lhs.microsecondsSincePostgresEpoch < rhs.microsecondsSincePostgresEpoch
    }

    /// RFC 3339 in UTC: `2026-11-21T23:30:00Z`, with `.ffffff` when there are microseconds.
    public var rfc3339: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(27)
        appendRFC3339(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `rfc3339`'s ASCII bytes, for encoders that build their output in a byte buffer.
    public func appendRFC3339(to bytes: inout [UInt8]) {
        if microsecondsSincePostgresEpoch == .max { return bytes.append(contentsOf: "infinity".utf8) }
        if microsecondsSincePostgresEpoch == .min { return bytes.append(contentsOf: "-infinity".utf8) }
        let micros = microsecondsSinceUnixEpoch
        var seconds = micros / 1_000_000
        var fraction = micros % 1_000_000
        if fraction < 0 { fraction += 1_000_000; seconds -= 1 }
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 { secondOfDay += 86_400; days -= 1 }
        CalendarDate(daysSinceUnixEpoch: Int(days)).appendISO8601(to: &bytes)
        bytes.append(UInt8(ascii: "T"))
        appendDigits(Int(secondOfDay / 3600), width: 2, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        appendDigits(Int(secondOfDay / 60 % 60), width: 2, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        appendDigits(Int(secondOfDay % 60), width: 2, to: &bytes)
        if fraction != 0 {
            bytes.append(UInt8(ascii: "."))
            appendDigits(Int(fraction), width: 6, to: &bytes)
        }
        bytes.append(UInt8(ascii: "Z"))
    }

    public var description: String { rfc3339 }

    /// Parses RFC 3339 (`2026-11-21T23:30:00-08:00`, `…Z`, optional fraction up to
    /// microseconds, `T` or space). The offset is required: a timestamp without one
    /// would be read in some implicit zone, which is exactly what this type avoids.
    public init?(rfc3339 string: String) {
        let bytes = Array(string.utf8)
        var index = 0
        func digits(_ count: Int) -> Int? {
            guard index + count <= bytes.count else { return nil }
            var value = 0
            for _ in 0..<count {
                let byte = bytes[index]
                guard byte >= 48, byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
                index += 1
            }
            return value
        }
        func expect(_ characters: String) -> Bool {
            guard index < bytes.count, characters.utf8.contains(bytes[index]) else { return false }
            index += 1
            return true
        }
        guard let year = digits(4), expect("-"), let month = digits(2), expect("-"), let day = digits(2),
              expect("Tt "), let hour = digits(2), expect(":"), let minute = digits(2), expect(":"),
              let second = digits(2),
              year >= 1, let date = CalendarDate(year: year, month: month, day: day),
              hour < 24, minute < 60, second < 60
        else { return nil }
        var micros: Int64 = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var count = 0
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                if count < 6 { micros = micros * 10 + Int64(bytes[index] - 48) }
                count += 1
                index += 1
            }
            guard count > 0 else { return nil }
            if count < 6 { for _ in count..<6 { micros *= 10 } }
        }
        var offsetSeconds = 0
        guard index < bytes.count else { return nil }
        if bytes[index] == UInt8(ascii: "Z") || bytes[index] == UInt8(ascii: "z") {
            index += 1
        } else {
            let sign: Int
            switch bytes[index] {
            case UInt8(ascii: "+"): sign = 1
            case UInt8(ascii: "-"): sign = -1
            default: return nil
            }
            index += 1
            guard let offsetHours = digits(2), expect(":"), let offsetMinutes = digits(2),
                  offsetHours < 24, offsetMinutes < 60 else { return nil }
            offsetSeconds = sign * (offsetHours * 3600 + offsetMinutes * 60)
        }
        guard index == bytes.count else { return nil }
        let seconds = Int64(date.daysSinceUnixEpoch) * 86_400 + Int64(hour * 3600 + minute * 60 + second)
            - Int64(offsetSeconds)
        self.init(microsecondsSinceUnixEpoch: seconds * 1_000_000 + micros)
    }
}
