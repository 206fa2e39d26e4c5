import Foundation
import PostgresClient

// Streaks, rates and the calendar (issue 17). The definitions live in the database
// (sql/functions/streaks.sql: `habit.habit_stats`, `habit.current_streaks`, `habit.stats_calendar`); these
// statements only call them, one statement per request, as the user (`UserScope`), like every
// statement of `HabitRepository`. day.get's streaks are `dayStatement(includeStreaks:)`.
extension HabitRepository {
    /// The most days `statsCalendar` takes at once.
    public static let maxCalendarDays = 366

    /// The streaks, rates and totals of `template` — or, when nil, of every habit on the
    /// reference date, in day.get's order — at `date` (nil: today in the user's zone).
    /// `template` not the user's (or unknown): `notFound`.
    public func stats(user: UUID, template: UUID?, date: CalendarDate?) throws -> StatsReport {
        try scope.run(statsStatement(user: user, template: template, date: date))
    }

    /// `stats`' statement. R is computed once, in the statement, so the result can say which
    /// date it is for; the header row comes back even when no habit matched (LEFT JOIN), and
    /// WITH ORDINALITY keeps the function's order.
    /// A score as the database rounded it (numeric, scale 4): "0.0000" … "1.0000".
    static func score(_ numeric: PostgresNumeric) throws -> String {
        let text = numeric.text
        guard text.count == 6, text.hasPrefix("0.") || text == "1.0000", text.dropFirst(2).allSatisfy(\.isNumber) else {
            throw PostgresError(kind: .decoding, message: "score \(text) is not a decimal in [0, 1] with four places")
        }
        return text
    }

    /// Every habit with Loop's score (habit.habit_scores): folded from the habit's checkpoint
    /// (sql/0038), it costs a few days of events, not the ~14 months it read before.
    public func statsStatement(user: UUID, template: UUID?, date: CalendarDate?) -> UserStatement<StatsReport> {
        UserStatement(user: user, statement: """
            WITH r AS MATERIALIZED (
                SELECT coalesce(\(date)::date, habit.user_today(\(user), NULL)) AS day
            )
            SELECT r.day, s.template_id, s.unit, s.current_length, s.current_start,
                   s.longest_length, s.longest_start, s.longest_end,
                   s.rate_7, s.rate_30, s.rate_365, s.rate_all, s.total_done, s.last_done,
                   v.value_total, v.value_7, v.value_30, sc.score
            FROM r LEFT JOIN LATERAL habit.habit_stats(\(user), \(template)::uuid, r.day) WITH ORDINALITY s ON true
            -- Loop's score (sql/functions/scores.sql).
            LEFT JOIN LATERAL habit.habit_scores(\(user), \(template)::uuid, r.day) sc ON sc.template_id = s.template_id
            -- A habit counted from check-ins (sql/0029): its days' values, each the check-ins'
            -- sum or, done without check-ins (a toggle), habit.done_value; on or before R, and over
            -- the 7 and 30 days ending at R. Grows with the habit's check-ins and completions.
            LEFT JOIN public.habit_templates t ON t.id = s.template_id AND t.user_id = \(user) AND habit.is_counted(t.kind, t.target, t.target_type)
            LEFT JOIN LATERAL (
                SELECT coalesce(sum(d.value), 0) AS value_total,
                       coalesce(sum(d.value) FILTER (WHERE d.day > r.day - 7), 0) AS value_7,
                       coalesce(sum(d.value) FILTER (WHERE d.day > r.day - 30), 0) AS value_30
                FROM (SELECT x.checkin_date AS day, x.value FROM public.habit_checkins x
                      WHERE x.user_id = \(user) AND x.template_id = t.id AND x.checkin_date <= r.day
                      UNION ALL
                      SELECT c.completed_date, habit.done_value(t.target, t.target_type) FROM public.habit_completions c
                      WHERE c.user_id = \(user) AND c.template_id = t.id AND c.completed_date <= r.day
                        AND NOT EXISTS (SELECT 1 FROM public.habit_checkins x
                                        WHERE x.user_id = \(user) AND x.template_id = t.id AND x.checkin_date = c.completed_date)) d
                HAVING t.id IS NOT NULL
            ) v ON true
            ORDER BY s.ordinality
            """) { rows in
            guard let first = rows.first else { throw PostgresError(kind: .unexpectedRowCount, message: "stats query returned no header row") }
            var report = StatsReport(date: try first.decode(CalendarDate.self, at: 0), habits: [])
            for row in rows where !row.isNull(at: 1) {
                let unitText = try row.decode(String.self, at: 2)
                guard let unit = StatsUnit(rawValue: unitText) else {
                    throw PostgresError(kind: .decoding, message: "unknown stats unit \"\(unitText)\"")
                }
                report.habits.append(HabitStats(
                    id: try row.decode(UUID.self, at: 1), unit: unit,
                    currentStreak: CurrentStreak(length: try row.decode(Int.self, at: 3), start: try row.decode(CalendarDate?.self, at: 4)),
                    longestStreak: LongestStreak(length: try row.decode(Int.self, at: 5), start: try row.decode(CalendarDate?.self, at: 6),
                                                 end: try row.decode(CalendarDate?.self, at: 7)),
                    rate7: try row.decode(Double?.self, at: 8), rate30: try row.decode(Double?.self, at: 9),
                    rate365: try row.decode(Double?.self, at: 10), rateAll: try row.decode(Double?.self, at: 11),
                    totalDone: try row.decode(Int.self, at: 12), lastDone: try row.decode(CalendarDate?.self, at: 13),
                    values: try row.isNull(at: 14) ? nil : ValueTotals(
                        total: DecimalValue(row.decode(PostgresNumeric.self, at: 14)),
                        last7: DecimalValue(row.decode(PostgresNumeric.self, at: 15)),
                        last30: DecimalValue(row.decode(PostgresNumeric.self, at: 16))),
                    score: try row.isNull(at: 17) ? nil : Self.score(row.decode(PostgresNumeric.self, at: 17))))
            }
            if template != nil, report.habits.isEmpty { throw StoreError.notFound }
            return report
        }
    }

    /// Per day of `from`…`to` (inclusive, at most `maxCalendarDays`): over the user's habits
    /// (or `template`'s alone) on and due that day, how many are due, done and skipped, and the
    /// level 0–4. `template` not the user's (or unknown): `notFound`, the same answer for both.
    public func statsCalendar(user: UUID, template: UUID?, from: CalendarDate, to: CalendarDate) throws -> StatsCalendar {
        try scope.run(statsCalendarStatement(user: user, template: template, from: from, to: to))
    }

    /// `statsCalendar`'s statement. `habit.stats_calendar` answers zeros for a habit that is
    /// not the user's; the header row says whether it is, and the function runs only then.
    public func statsCalendarStatement(user: UUID, template: UUID?, from: CalendarDate, to: CalendarDate) throws -> UserStatement<StatsCalendar> {
        guard to >= from else {
            throw StoreError.invalidInput(field: "to", reason: .outOfRange, message: "must be on or after from")
        }
        guard from.adding(days: Self.maxCalendarDays - 1) >= to else {
            throw StoreError.invalidInput(field: "to", reason: .outOfRange, message: "the range may hold at most \(Self.maxCalendarDays) days")
        }
        return UserStatement(user: user, statement: """
            WITH found AS MATERIALIZED (
                SELECT \(template)::uuid IS NULL
                       OR EXISTS (SELECT 1 FROM public.habit_templates WHERE id = \(template) AND user_id = \(user)) AS found
            )
            SELECT found.found, c.day, c.due, c.done, c.skipped, c.level, c.value
            FROM found LEFT JOIN LATERAL (
                SELECT * FROM habit.stats_calendar(\(user), \(template)::uuid, \(from), \(to)) WITH ORDINALITY WHERE found.found
            ) c ON true
            ORDER BY c.ordinality
            """) { rows in
            guard let first = rows.first else { throw PostgresError(kind: .unexpectedRowCount, message: "calendar query returned no header row") }
            guard try first.decode(Bool.self, at: 0) else { throw StoreError.notFound }
            let days = try rows.filter { !$0.isNull(at: 1) }.map { row in
                CalendarDay(date: try row.decode(CalendarDate.self, at: 1), due: try row.decode(Int.self, at: 2),
                            done: try row.decode(Int.self, at: 3), skipped: try row.decode(Int.self, at: 4),
                            level: try row.decode(Int.self, at: 5),
                            value: try row.decode(PostgresNumeric?.self, at: 6).map(DecimalValue.init))
            }
            return StatsCalendar(from: from, to: to, days: days)
        }
    }
}
