import Foundation
import HabitReports
import HabitStore
import PostgresClient

/// The admin reports' reads (`habit report calendar|weekly`): each runs as `habit_admin`
/// (`SET LOCAL ROLE`, transaction-local), the read-only role of people working in psql, which
/// reads every user's rows and writes nothing — a report needs no more. The connecting role
/// must be a member of habit_admin (the embedded server's superuser is). The rules stay in
/// the database: the calendar's counts and levels are habit.stats_calendar's (sql/functions/streaks.sql),
/// the weekly rates the batch job's stored weekly_completion_counts, and of a week not over
/// habit.habit_days_at's days up to today (sql/functions/history.sql).
public enum AdminReports {
    static let prelude: [Query] = ["SET LOCAL ROLE habit_admin"]

    public struct ReportError: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    static func reportDate(_ date: CalendarDate) -> ReportDate { ReportDate(dayNumber: date.daysSinceUnixEpoch) }

    /// One user's (or one of their habits') calendar over [from, to]: habit.stats_calendar's
    /// due, done, skipped and level per day, laid out in the user's weeks, with the user's today
    /// (now() in their zone, as stats_calendar has it: the days after it are drawn as not yet
    /// known, not as missed). The title names the habit, or the user's habits on in the range
    /// (profiles have no display name); the user's id is the caption. Fails when the user has
    /// neither a habit nor a profile, or the habit is not theirs.
    public static func calendar(on connection: Connection, user: UUID, habit: UUID?, from: CalendarDate, to: CalendarDate) throws -> CalendarHeatmap {
        try connection.withTransaction(prelude: prelude) { connection in
            let facts = try connection.queryOne("""
                WITH zone AS (SELECT habit.user_time_zone(\(user), NULL) AS tz)
                SELECT habit.user_week_start_isodow(\(user)), zone.tz, habit.user_today(\(user), NULL),
                       EXISTS (SELECT 1 FROM public.profiles p WHERE p.user_id = \(user))
                           OR EXISTS (SELECT 1 FROM public.habit_templates t WHERE t.user_id = \(user)),
                       (SELECT t.name FROM public.habit_templates t WHERE t.user_id = \(user) AND t.id = \(habit))
                FROM zone
                """)
            let weekStart = WeekStartDay(isoWeekday: try facts.decode(Int.self, at: 0)) ?? .monday
            let zone = try facts.decode(String.self, at: 1)
            let today = try facts.decode(CalendarDate.self, at: 2)
            guard try facts.decode(Bool.self, at: 3) else {
                throw ReportError("user \(user.lowercaseString) has no habit and no profile")
            }
            let habitName = try facts.decode(String?.self, at: 4)
            if let habit, habitName == nil {
                throw ReportError("habit \(habit.lowercaseString) is not a habit of user \(user.lowercaseString)")
            }
            let days = try connection.query("""
                SELECT s.day, s.due, s.done, s.skipped, s.level
                FROM habit.stats_calendar(\(user), \(habit), \(from), \(to)) s ORDER BY s.day
                """).map { row in
                CalendarHeatmap.Day(date: reportDate(try row.decode(CalendarDate.self, at: 0)),
                                    due: try row.decode(Int.self, at: 1), done: try row.decode(Int.self, at: 2),
                                    skipped: try row.decode(Int.self, at: 3), level: try row.decode(Int.self, at: 4))
            }
            // The habits on on some day of the range (habit.period_on_days, the rule of "on"), in display order.
            let names: [String]
            if let habitName {
                names = [habitName]
            } else {
                names = try connection.query("""
                    SELECT t.name FROM public.habit_templates t
                    WHERE t.user_id = \(user)
                      AND EXISTS (SELECT 1 FROM public.habit_periods p
                                  WHERE p.user_id = t.user_id AND p.template_id = t.id
                                    AND habit.period_on_days(p.started_at, p.ended_at, \(zone), \(today), habit.user_day_start(\(user)))
                                        && daterange(\(from), \(to), '[]'))
                    ORDER BY t.sort_order NULLS LAST, t.created_at, t.id
                    """).map { try $0.decode(String.self, at: 0) }
            }
            let header = CalendarHeatmap.header(habitNames: names, oneHabit: habit != nil, user: user.lowercaseString,
                                                from: reportDate(from), to: reportDate(to), zone: zone, weekStart: weekStart,
                                                today: reportDate(today))
            return CalendarHeatmap(title: header.title, subtitle: header.subtitle, caption: header.caption, days: days,
                                   weekStart: weekStart, today: reportDate(today))
        }
    }

    /// The user base's weeks overlapping [from, to] in the `weekStart` convention: per week the
    /// lower quartile, median and upper quartile of users' completion_rate (users without a
    /// rate — nothing due — left out) and the active users (active_habit_days > 0). Every week
    /// of the range is present; a week without rows has no rates and 0 users.
    ///
    /// A week that is over for a user (its last day before their today) is read from the stored
    /// weekly_completion_counts (`habit weekly-counts --store`). A week that is not over is not:
    /// the batch counts a week's due days whole, so its stored row of the current week counts
    /// the days still to come as due and not done, a fake drop (12 of 21 habit-days due so far
    /// read 12 of 32, 0.375). It is counted here instead over the user's days up to their
    /// today, from habit.habit_days_at (the one definition of on, due, done and skipped the
    /// batch sums too) with the batch's formula: done on due days ÷ (due − skipped due days),
    /// 4 decimals; active when a habit was on. Those weeks are `partial`; weeks wholly after a
    /// user's today have nothing of them. Only users with a period open or ended in the last
    /// nine days can have an on-day in a week not over.
    public static func weekly(on connection: Connection, from: CalendarDate, to: CalendarDate, weekStart: WeekStart) throws -> WeeklyReport {
        try connection.withTransaction(prelude: prelude) { connection in
            let convention = weekStart.rawValue
            var users = 0
            let weeks = try connection.query("""
                WITH bounds AS (
                    SELECT habit.week_start(\(from), habit.week_start_isodow(\(convention))) AS first_week,
                           habit.week_start(\(to), habit.week_start_isodow(\(convention))) AS last_week
                ),
                weeks AS (
                    SELECT b.first_week + 7 * n AS week_start
                    FROM bounds b, generate_series(0, (b.last_week - b.first_week) / 7) AS n
                ),
                stored AS (
                    SELECT c.week_start, c.user_id, c.completion_rate::float8 AS rate, c.active_habit_days > 0 AS active, false AS live
                    FROM weeks w
                    JOIN public.weekly_completion_counts c ON c.week_starts_on = \(convention) AND c.week_start = w.week_start
                    WHERE c.week_start + 7 <= habit.user_today(c.user_id, NULL)
                ),
                recent AS (
                    SELECT u.user_id, habit.user_today(u.user_id, NULL) AS today
                    FROM (SELECT DISTINCT p.user_id FROM public.habit_periods p
                          WHERE p.ended_at IS NULL OR p.ended_at > now() - interval '9 days') u
                ),
                live AS (
                    SELECT w.week_start, r.user_id,
                           CASE WHEN count(*) FILTER (WHERE d.due AND NOT d.skipped) > 0
                                THEN round((count(*) FILTER (WHERE d.due AND d.done))::numeric
                                           / count(*) FILTER (WHERE d.due AND NOT d.skipped), 4)::float8 END AS rate,
                           true AS active, true AS live
                    FROM weeks w
                    JOIN recent r ON w.week_start <= r.today AND w.week_start + 7 > r.today
                    CROSS JOIN LATERAL habit.habit_days_at(r.user_id, w.week_start, least(w.week_start + 6, r.today), r.today) d
                    GROUP BY w.week_start, r.user_id
                ),
                counted AS (SELECT * FROM stored UNION ALL SELECT * FROM live)
                SELECT w.week_start,
                       percentile_cont(0.25) WITHIN GROUP (ORDER BY c.rate),
                       percentile_cont(0.5) WITHIN GROUP (ORDER BY c.rate),
                       percentile_cont(0.75) WITHIN GROUP (ORDER BY c.rate),
                       count(*) FILTER (WHERE c.active),
                       count(DISTINCT c.user_id),
                       coalesce(bool_or(c.live), false)
                FROM weeks w
                LEFT JOIN counted c ON c.week_start = w.week_start
                GROUP BY w.week_start ORDER BY w.week_start
                """).map { row in
                users = max(users, try row.decode(Int.self, at: 5))
                return WeeklyReport.Week(start: reportDate(try row.decode(CalendarDate.self, at: 0)),
                                         lowerQuartile: try row.decode(Double?.self, at: 1), median: try row.decode(Double?.self, at: 2),
                                         upperQuartile: try row.decode(Double?.self, at: 3), activeUsers: try row.decode(Int.self, at: 4),
                                         partial: try row.decode(Bool.self, at: 6))
            }
            let header = WeeklyReport.header(from: reportDate(from), to: reportDate(to), weekStart: weekStart == .monday ? .monday : .sunday,
                                             users: users, partialWeek: weeks.first { $0.partial }?.start)
            return WeeklyReport(title: header.title, subtitle: header.subtitle, weeks: weeks)
        }
    }
}
