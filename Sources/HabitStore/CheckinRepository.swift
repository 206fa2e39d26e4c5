import Foundation
import PostgresClient

// Check-ins, a day's value and notes (sql/functions/checkins.sql). Each method is one statement
// as the user: the functions lock the habit, the tables' triggers keep the rules for every
// writer (HB003 future, HB004 not on the day, HB005 skipped, HB001 past 100 check-ins a day, the
// CHECK constraints), and a day's completion follows its check-ins.

extension HabitRepository {
    /// Adds a check-in of `value` to `template`'s `date` (a skip of that day goes). With
    /// `clientID`, safe to retry: the same id finds its check-in and changes nothing; the same
    /// id with another habit, day, value or time is `idConflict`. `time`: "HH:MM[:SS]", local.
    public func addCheckin(user: UUID, template: UUID, date: CalendarDate, value: DecimalValue, time: String?,
                           clientID: String?, timeZone: String? = nil) throws -> CheckinAdded {
        try Validation.timeZone(timeZone, using: connection)
        let clientID = try clientID.map(Validation.checkinClientID)
        guard value > .zero else { throw StoreError.invalidInput(field: "value", reason: .outOfRange, message: "must be above 0") }
        let rows = try scope.query(as: user, """
            SELECT a.id, a.created, a.value, a.checkins, a.state, habit.week_value(\(user), \(template), \(date))
            FROM habit.add_checkin(\(user), \(template), \(date), \(value.text)::numeric, \(time)::time, \(clientID), \(timeZone)) a
            """)
        guard let row = rows.first else { throw StoreError.notFound }
        return CheckinAdded(id: try row.decode(UUID.self, at: 0), created: try row.decode(Bool.self, at: 1),
                            day: try Self.dayValue(row, at: 2))
    }

    /// Removes one of the user's check-ins; `notFound` when it is not theirs (or gone).
    public func removeCheckin(user: UUID, id: UUID) throws -> CheckinRemoved {
        let rows = try scope.query(as: user, """
            SELECT r.template_id, r.checkin_date, r.value, r.checkins, r.state, habit.week_value(\(user), r.template_id, r.checkin_date)
            FROM habit.remove_checkin(\(user), \(id)) r
            """)
        guard let row = rows.first else { throw StoreError.notFound }
        return CheckinRemoved(templateID: try row.decode(UUID.self, at: 0), date: try row.decode(CalendarDate.self, at: 1),
                              day: try Self.dayValue(row, at: 2))
    }

    /// The check-ins of `template` on `date`, oldest first, and the day; `notFound` when the
    /// habit is not the user's.
    public func checkins(user: UUID, template: UUID, date: CalendarDate) throws -> (checkins: [Checkin], day: DayValue) {
        let rows = try scope.query(as: user, """
            SELECT d.value, d.checkins, d.state, habit.week_value(\(user), \(template), \(date)), i.id, i.value AS checkin_value, to_char(i.at_time, 'HH24:MI:SS') AS at_time,
                   i.client_id, i.created_at
            FROM habit.day_value(\(user), \(template), \(date)) d
            LEFT JOIN public.habit_checkins i
                   ON i.user_id = \(user) AND i.template_id = \(template) AND i.checkin_date = \(date)
            -- A function of OUT parameters answers one row of NULLs for a habit that is not the user's.
            WHERE d.state IS NOT NULL
            ORDER BY i.created_at, i.id
            """)
        guard let first = rows.first else { throw StoreError.notFound }
        let day = try Self.dayValue(first, at: 0)
        var list: [Checkin] = []
        for row in rows where !row.isNull(at: 4) {
            list.append(Checkin(id: try row.decode(UUID.self, at: 4), templateID: template, date: date,
                                value: try DecimalValue(row.decode(PostgresNumeric.self, at: 5)),
                                time: try row.decode(String?.self, at: 6).map(Self.shortTime),
                                clientID: try row.decode(String?.self, at: 7), createdAt: try row.decode(PostgresTimestamp.self, at: 8)))
        }
        return (list, day)
    }

    /// completions.set with a value: the day's total becomes `value` (its check-ins replaced by
    /// one of `value`, none for 0; a skip goes). Idempotent.
    public func setDayValue(user: UUID, template: UUID, date: CalendarDate, value: DecimalValue,
                            timeZone: String? = nil) throws -> DayValueChange {
        try Validation.timeZone(timeZone, using: connection)
        let rows = try scope.query(as: user, """
            SELECT s.value, s.checkins, s.state, habit.week_value(\(user), \(template), \(date)), s.changed
            FROM habit.set_day_value(\(user), \(template), \(date), \(value.text)::numeric, \(timeZone)) s
            """)
        guard let row = rows.first else { throw StoreError.notFound }
        return DayValueChange(day: try Self.dayValue(row, at: 0), changed: try row.decode(Bool.self, at: 4))
    }

    /// notes.set: the note of `template`'s `date`, or none (nil or ""). Whether it changed.
    public func setNote(user: UUID, template: UUID, date: CalendarDate, note: String?) throws -> Bool {
        let note = try note.map(Validation.dayNote)
        let rows = try scope.query(as: user, """
            SELECT n.changed FROM habit.set_day_note(\(user), \(template), \(date), \(note)) n
            """)
        guard let row = rows.first else { throw StoreError.notFound }
        return try row.decode(Bool.self, at: 0)
    }

    /// value, checkins, state and the week's value (NULL: a daily target) from column `first`.
    static func dayValue(_ row: Row, at first: Int) throws -> DayValue {
        guard let state = DayState(rawValue: try row.decode(String.self, at: first + 2)) else {
            throw PostgresError(kind: .decoding, message: "unknown day state")
        }
        return DayValue(value: try DecimalValue(row.decode(PostgresNumeric.self, at: first)),
                        checkins: Int(try row.decode(Int32.self, at: first + 1)), state: state,
                        weekValue: try row.decode(PostgresNumeric?.self, at: first + 3).map(DecimalValue.init))
    }

    /// "07:30:00" → "07:30"; seconds stay when they are not zero.
    static func shortTime(_ text: String) -> String { text.hasSuffix(":00") ? String(text.dropLast(3)) : text }
}
