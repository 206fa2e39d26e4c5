import Foundation
import PostgresClient

/// `habit dev seed`: fills a database with a realistic data set in a few set-based
/// statements (no loop per user): users spread over five time zones, `habitsPerUser`
/// habits each activated before the range, and completions on each day of the range with
/// probability `completionRate`. Ids derive from md5 of the indexes, so a seed is
/// reproducible. Needs a role that may write every user's rows (a superuser).
public struct Seeder {
    public var users = 100_000
    public var habitsPerUser = 5
    public var weeks = 20
    public var completionRate = 0.7
    /// Last day with completions (inclusive).
    public var endDate: CalendarDate
    public var randomSeed = 0.42

    public init(endDate: CalendarDate) { self.endDate = endDate }

    public var startDate: CalendarDate { endDate.adding(days: -(weeks * 7) + 1) }

    public struct Report: Sendable { public var habits: Int; public var completions: Int }

    public func run(on connection: Connection) throws -> Report {
        try connection.withTransaction { connection in
            try connection.execute("SELECT setseed(\(randomSeed))")
            // Completions of any dates, as an admin's backfill (sql/functions/history.sql): the rules' date and
            // activity checks are lifted for this transaction (the seeding role is a superuser,
            // hence a member of habit_admin).
            try connection.execute("SELECT set_config('habit.backfill', 'on', true)")
            try connection.execute("""
                INSERT INTO public.profiles (user_id, timezone)
                SELECT md5('seed-user-' || u)::uuid,
                       (ARRAY['UTC', 'America/Los_Angeles', 'Europe/Berlin', 'Asia/Tokyo', 'Pacific/Auckland'])[1 + u % 5]
                FROM generate_series(1, \(users)::int) AS u
                ON CONFLICT (user_id) DO NOTHING
                """)
            let habits = try connection.execute("""
                INSERT INTO public.habit_templates (id, user_id, name, icon, color, activated_at, sort_order)
                SELECT md5('seed-habit-' || u || '-' || h)::uuid, md5('seed-user-' || u)::uuid,
                       'Habit ' || h, 'star.fill', '#3366FF',
                       (\(startDate)::date - 1)::timestamp AT TIME ZONE 'UTC', h
                FROM generate_series(1, \(users)::int) AS u, generate_series(1, \(habitsPerUser)::int) AS h
                ON CONFLICT (id, user_id) DO NOTHING
                """)
            let completions = try connection.execute("""
                INSERT INTO public.habit_completions (user_id, template_id, completed_date)
                SELECT md5('seed-user-' || u)::uuid, md5('seed-habit-' || u || '-' || h)::uuid, \(startDate)::date + d
                FROM generate_series(1, \(users)::int) AS u, generate_series(1, \(habitsPerUser)::int) AS h,
                     generate_series(0, \(weeks * 7 - 1)::int) AS d
                WHERE random() < \(completionRate)
                ON CONFLICT (user_id, template_id, completed_date) DO NOTHING
                """)
            return Report(habits: habits, completions: completions)
        }
    }
}
