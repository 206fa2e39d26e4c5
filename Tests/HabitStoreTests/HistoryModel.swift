import Foundation
import PostgresClient

// The model of issue 16's "Which habits a day shows" and "Schedules", in plain Swift with
// Foundation's time-zone data and no database: the property test (HistoryPropertyTests)
// compares habit.habit_days_at (sql/functions/history.sql) with it. Kept small enough to be read
// against the issue's text line by line.

/// A habit's schedule, as stored in `habit_periods.schedule`.
enum HistorySchedule: Hashable, Sendable, CustomStringConvertible {
    case daily
    /// ISO weekdays (1 = Monday … 7 = Sunday), ascending, without repeats.
    case weekdays([Int])
    case everyNDays(Int)
    case timesPerWeek(Int)
    /// Each block of `days` days from the period's first local day needs `times` completions (sql/0034).
    case timesInDays(times: Int, days: Int)

    /// The JSON the issue defines, e.g. `{"type":"weekdays","days":[1,3,5]}`.
    var json: String {
        switch self {
        case .daily: #"{"type":"daily"}"#
        case .weekdays(let days): #"{"type":"weekdays","days":[\#(days.map(String.init).joined(separator: ","))]}"#
        case .everyNDays(let n): #"{"type":"every_n_days","n":\#(n)}"#
        case .timesPerWeek(let times): #"{"type":"times_per_week","times":\#(times)}"#
        case .timesInDays(let times, let days): #"{"type":"times_in_days","times":\#(times),"days":\#(days)}"#
        }
    }

    /// Reads the JSON back (key order and spacing as PostgreSQL's jsonb prints them do not
    /// matter); nil for anything that is not one of the four shapes.
    init?(json text: String) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
              let type = object["type"] as? String else { return nil }
        switch (type, object.count) {
        case ("daily", 1): self = .daily
        case ("weekdays", 2):
            guard let days = object["days"] as? [Int] else { return nil }
            self = .weekdays(days)
        case ("every_n_days", 2):
            guard let n = object["n"] as? Int else { return nil }
            self = .everyNDays(n)
        case ("times_per_week", 2):
            guard let times = object["times"] as? Int else { return nil }
            self = .timesPerWeek(times)
        case ("times_in_days", 3):
            guard let times = object["times"] as? Int, let days = object["days"] as? Int else { return nil }
            self = .timesInDays(times: times, days: days)
        default: return nil
        }
    }

    var description: String { json }
}

/// One activity period: `[start, end)`, open when `end` is nil. Instants are whole seconds
/// since 1970 (PostgreSQL keeps microseconds; whole seconds round-trip exactly).
struct HistoryPeriod: Hashable, Sendable {
    var start: Int64
    var end: Int64?
    var schedule: HistorySchedule
}

/// What the model (and habit.habit_days_at) says about one habit on one day it is on.
struct HabitDay: Hashable, Sendable, CustomStringConvertible {
    var habit: Int
    var day: CalendarDate
    var due: Bool
    var schedule: HistorySchedule
    /// A completion dated that day.
    var done = false
    /// A skip dated that day.
    var skipped = false

    var description: String { "habit \(habit) \(day) due=\(due) done=\(done) skipped=\(skipped) \(schedule)" }
}

/// Local dates and local midnights in one IANA zone, from Foundation's time-zone data.
struct ZoneClock: Sendable {
    let name: String
    let zone: TimeZone
    /// Seconds after local midnight at which the user's days begin (profiles.day_starts_at).
    let dayStart: Int64

    init(_ name: String, dayStart: Int64 = 0) {
        guard let zone = TimeZone(identifier: name) else { fatalError("Foundation does not know the zone \(name)") }
        self.name = name
        self.zone = zone
        self.dayStart = dayStart
    }

    /// The zone's UTC offset (seconds east) in force at `instant`.
    func offset(at instant: Int64) -> Int64 {
        Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(instant))))
    }

    /// A day start for a generated user (issue 32): midnight in four cases of ten, 03:00 (the
    /// DST hours of Helsinki and Chisinau) in three, 01:30 or 02:30 (inside New York's and
    /// London's repeated or skipped hours), or any minute.
    static func randomDayStart<R: RandomNumberGenerator>(using rng: inout R) -> Int64 {
        switch Int.random(in: 0..<10, using: &rng) {
        case 0..<4: return 0
        case 4..<7: return 3 * 3_600
        case 7: return 5_400
        case 8: return 9_000
        default: return Int64.random(in: 0..<1_440, using: &rng) * 60
        }
    }

    /// The user's day of `instant`: the date of its wall-clock time in the zone minus the day
    /// start (what `habit.local_day` computes; `habit.local_date` at a midnight start).
    func localDate(_ instant: Int64) -> CalendarDate {
        let wall = instant + offset(at: instant) - dayStart
        return CalendarDate(daysSinceUnixEpoch: Int(wall >= 0 ? wall / 86_400 : (wall - 86_399) / 86_400))
    }

    /// The instant of `day` 00:00 in the zone, by PostgreSQL's rule for
    /// `day::timestamp AT TIME ZONE zone` (documentation, appendix B.2 "Handling of Invalid
    /// or Ambiguous Timestamps"): a local time that falls in a jump-forward gap takes the
    /// UTC offset in force just BEFORE the transition (so a skipped midnight becomes the
    /// transition instant itself when the gap starts at midnight, e.g. Havana's 00:00 → 01:00);
    /// a local time that occurs twice (jump back) takes the offset in force just AFTER the
    /// transition, i.e. the later of the two instants. Calendar.startOfDay would pick the
    /// earlier one for a repeated midnight (America/Havana in November), hence this function.
    func midnight(_ day: CalendarDate) -> Int64 {
        reading(wall: Int64(day.daysSinceUnixEpoch) * 86_400)
    }

    /// The instant the user's day `day` begins: its wall time day + dayStart read by
    /// PostgreSQL's rule, as `midnight` reads 00:00 (what `habit.day_begins` computes).
    func dayBegins(_ day: CalendarDate) -> Int64 {
        reading(wall: Int64(day.daysSinceUnixEpoch) * 86_400 + dayStart)
    }

    /// A wall time (seconds since 1970 as if the zone were UTC) read as an instant the way
    /// PostgreSQL reads `timestamp AT TIME ZONE zone`.
    func reading(wall: Int64) -> Int64 {
        // Every offset in force within 30 hours of the wall time (transitions never come
        // twice within half an hour, so sampling each half hour sees them all).
        var offsets = Set<Int64>()
        for step in Int64(-60)...60 { offsets.insert(offset(at: wall + step * 1_800)) }
        // Instants whose local time is exactly the wall time.
        let readings = offsets.map { wall - $0 }.filter { offset(at: $0) == wall - $0 }
        if let latest = readings.max() { return latest } // one reading, or the later of two
        // A gap: reading the wall time with the offset before the transition lands after it,
        // with the offset after the transition before it; PostgreSQL takes the former, which
        // is the later instant.
        return offsets.map { wall - offset(at: wall - $0) }.max()!
    }
}

/// The rules of issue 16 for one user: zone Z, today T, the user's week starting on ISO
/// weekday `weekStart` (profiles.week_start: 1 Monday, 7 Sunday), and per habit (by index) the
/// dates of its completions and skips (rows of any date: a backfill may write them on days the
/// habit is not on).
struct HistoryModel: Sendable {
    let clock: ZoneClock
    let today: CalendarDate
    var weekStart = 1
    var completions: [Set<CalendarDate>] = []
    var skips: [Set<CalendarDate>] = []

    /// The first day of the user's week containing `day`.
    func userWeek(containing day: CalendarDate) -> CalendarDate {
        day.adding(days: -((day.isoWeekday - weekStart + 7) % 7))
    }

    /// The period that makes a habit with `periods` on `day`, or nil when it is not on.
    /// On D there must be a period p with localDate(p.start) ≤ D and
    ///  - D < T: p overlaps the user's day D (open, or ends after D begins in Z: clock.dayBegins);
    ///  - D ≥ T: p is open.
    /// When several do, the latest-starting one is in force.
    func periodInForce(_ periods: [HistoryPeriod], on day: CalendarDate) -> HistoryPeriod? {
        let begins = clock.dayBegins(day)
        return periods.filter { period in
            guard clock.localDate(period.start) <= day else { return false }
            if day < today { return period.end.map { $0 > begins } ?? true }
            return period.end == nil
        }.max { $0.start < $1.start }
    }

    /// Whether `schedule`, in force through `period`, asks for habit `habit` on `day`.
    /// times_per_week: while fewer than `times` completions of the habit (any of its rows,
    /// whatever period or schedule they fell in) are dated in the user's week of `day`
    /// strictly before `day` — so the day of the completion that meets the target is still
    /// due, the days after it in that week are not. times_in_days: the same in the block of
    /// `days` days (counted from the period's first local day) holding `day`.
    func isDue(_ period: HistoryPeriod, habit: Int, on day: CalendarDate) -> Bool {
        switch period.schedule {
        case .daily: true
        case .weekdays(let days): days.contains(day.isoWeekday)
        case .everyNDays(let n): clock.localDate(period.start).days(until: day) % n == 0
        case .timesPerWeek(let times):
            completions(of: habit).filter { $0 >= userWeek(containing: day) && $0 < day }.count < times
        case .timesInDays(let times, let days):
            completions(of: habit).filter { $0 >= day.adding(days: -(clock.localDate(period.start).days(until: day) % days)) && $0 < day }.count < times
        }
    }

    func completions(of habit: Int) -> Set<CalendarDate> { habit < completions.count ? completions[habit] : [] }
    func skips(of habit: Int) -> Set<CalendarDate> { habit < skips.count ? skips[habit] : [] }

    /// Every (habit, day) in `from…to` on which a habit is on, with its due, done and skipped
    /// flags and schedule.
    func habitDays(_ habits: [[HistoryPeriod]], from: CalendarDate, to: CalendarDate) -> Set<HabitDay> {
        var result = Set<HabitDay>()
        var day = from
        while day <= to {
            for (index, periods) in habits.enumerated() {
                if let period = periodInForce(periods, on: day) {
                    result.insert(HabitDay(habit: index, day: day, due: isDue(period, habit: index, on: day), schedule: period.schedule,
                                           done: completions(of: index).contains(day), skipped: skips(of: index).contains(day)))
                }
            }
            day = day.adding(days: 1)
        }
        return result
    }
}
