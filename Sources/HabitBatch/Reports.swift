import Foundation
import HabitReports
import HabitStore
import PostgresClient

/// The admin reports' reads (`habit report calendar|weekly`): each runs as `habit_admin`
/// (`SET LOCAL ROLE`, transaction-local), the read-only role of people working in psql, which
/// reads every user's rows and writes nothing — a report needs no more. The connecting role
/// must be a member of habit_admin (the embedded server's superuser is). The rules stay in
/// the database: the calendar's counts and levels are habit.stats_calendar's (sql/functions/streaks.sql),
/// the weekly rates the batch job's stored weekly_completion_counts.
public enum AdminReports {
    static let prelude: [Query] = ["SET LOCAL ROLE habit_admin"]

    public struct ReportError: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    static func reportDate(_ date: CalendarDate) -> ReportDate { ReportDate(dayNumber: date.daysSinceUnixEpoch) }

    /// One user's (or one of their habits') calendar over [from, to]: habit.stats_calendar's
    /// due, done, skipped and level per day, laid out in the user's weeks. Fails when the user
    /// has neither a habit nor a profile, or the habit is not theirs.
    public static func calendar(on connection: Connection, user: UUID, habit: UUID?, from: CalendarDate, to: CalendarDate) throws -> CalendarHeatmap {
        try connection.withTransaction(prelude: prelude) { connection in
            let facts = try connection.queryOne("""
                SELECT habit.user_week_start_isodow(\(user)),
                       coalesce((SELECT p.timezone FROM public.profiles p WHERE p.user_id = \(user)), 'UTC'),
                       EXISTS (SELECT 1 FROM public.profiles p WHERE p.user_id = \(user))
                           OR EXISTS (SELECT 1 FROM public.habit_templates t WHERE t.user_id = \(user)),
                       (SELECT t.name FROM public.habit_templates t WHERE t.user_id = \(user) AND t.id = \(habit))
                """)
            let weekStart = WeekStartDay(isoWeekday: try facts.decode(Int.self, at: 0)) ?? .monday
            let zone = try facts.decode(String.self, at: 1)
            guard try facts.decode(Bool.self, at: 2) else {
                throw ReportError("user \(user.lowercaseString) has no habit and no profile")
            }
            let habitName = try facts.decode(String?.self, at: 3)
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
            let title = habitName.map { "Habit calendar: \($0)" } ?? "Habit calendar: all habits"
            let subtitle = "user \(user.lowercaseString) · \(from) to \(to) · \(zone) · weeks start on \(weekStart == .monday ? "Monday" : "Sunday")"
            return CalendarHeatmap(title: title, subtitle: subtitle, days: days, weekStart: weekStart)
        }
    }

    /// The user base's weeks overlapping [from, to] in the `weekStart` convention, from the
    /// stored weekly_completion_counts (`habit weekly-counts --store`): per week the lower
    /// quartile, median and upper quartile of users' completion_rate (users without a rate
    /// — nothing due — left out) and the active users (a row with active_habit_days > 0).
    /// Every week of the range is present; a week without stored rows has no rates and 0 users.
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
                )
                SELECT w.week_start,
                       percentile_cont(0.25) WITHIN GROUP (ORDER BY c.completion_rate::float8),
                       percentile_cont(0.5) WITHIN GROUP (ORDER BY c.completion_rate::float8),
                       percentile_cont(0.75) WITHIN GROUP (ORDER BY c.completion_rate::float8),
                       count(*) FILTER (WHERE c.active_habit_days > 0),
                       count(DISTINCT c.user_id)
                FROM weeks w
                LEFT JOIN public.weekly_completion_counts c ON c.week_starts_on = \(convention) AND c.week_start = w.week_start
                GROUP BY w.week_start ORDER BY w.week_start
                """).map { row in
                users = max(users, try row.decode(Int.self, at: 5))
                return WeeklyReport.Week(start: reportDate(try row.decode(CalendarDate.self, at: 0)),
                                         lowerQuartile: try row.decode(Double?.self, at: 1), median: try row.decode(Double?.self, at: 2),
                                         upperQuartile: try row.decode(Double?.self, at: 3), activeUsers: try row.decode(Int.self, at: 4))
            }
            return WeeklyReport(
                title: "Weekly completion rate of all users",
                subtitle: "weeks starting on \(weekStart == .monday ? "Monday" : "Sunday"), \(from) to \(to) · stored counts of habit weekly-counts --store"
                    + " · up to \(users) users a week",
                weeks: weeks)
        }
    }
}
