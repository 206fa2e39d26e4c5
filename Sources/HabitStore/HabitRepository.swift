import Foundation
import PostgresClient

/// The habits of the Habbit app, per user. Every method takes the acting user and touches
/// only that user's rows twice over: each statement filters by `user_id`, and runs under
/// that user's claims with row-level security forced (see `UserScope`).
///
/// Not thread-safe: one repository per connection, used by one thread at a time.
public final class HabitRepository {
    let scope: UserScope
    var connection: Connection { scope.connection }

    public init(connection: Connection, settings: StoreSettings = StoreSettings()) {
        scope = UserScope(connection: connection, settings: settings)
    }

    // MARK: - Profile

    public func profile(user: UUID) throws -> Profile {
        let zone = try scope.query(as: user, "SELECT timezone FROM public.profiles WHERE user_id = \(user)").first?
            .decode(String.self, at: 0)
        return Profile(userID: user, timeZone: zone ?? "UTC")
    }

    public func setTimeZone(user: UUID, timeZone: String) throws -> Profile {
        try validateTimeZone(timeZone)
        let rows = try scope.query(as: user, """
            INSERT INTO public.profiles (user_id, timezone) VALUES (\(user), \(timeZone))
            ON CONFLICT (user_id) DO UPDATE SET timezone = EXCLUDED.timezone
            RETURNING timezone
            """)
        return Profile(userID: user, timeZone: try rows[0].decode(String.self, at: 0))
    }

    // MARK: - Habits

    public func createHabit(user: UUID, _ draft: HabitDraft) throws -> Habit {
        let name = try Validation.habitName(draft.name)
        let icon = try draft.icon.map(Validation.icon)
        let color = try draft.color.map(Validation.color)
        let sortOrder = try draft.sortOrder.map { try Validation.sortOrder($0) }
        return try Habit(row: scope.query(as: user, """
            INSERT INTO public.habit_templates (user_id, name, icon, color, activated_at, sort_order)
            VALUES (\(user), \(name), \(icon), \(color), coalesce(\(draft.activatedAt), now()),
                    coalesce(\(sortOrder), (SELECT least(coalesce(max(sort_order), 0)::bigint + 1, 2147483647)
                                            FROM public.habit_templates WHERE user_id = \(user))))
            RETURNING \(unsafeSQL: Habit.columns)
            """)[0])
    }

    public func updateHabit(user: UUID, id: UUID, _ changes: HabitChanges) throws -> Habit {
        let name = try changes.name.map(Validation.habitName)
        let icon = try changes.icon.map { try $0.map(Validation.icon) }
        let color = try changes.color.map { try $0.map(Validation.color) }
        let sortOrder = try changes.sortOrder.map { try $0.map { try Validation.sortOrder($0) } }
        // One statement for any combination of fields: a flag per optional field says
        // whether to replace it (possibly with NULL).
        let rows = try scope.query(as: user, """
            UPDATE public.habit_templates SET
                name = coalesce(\(name), name),
                icon = CASE WHEN \(icon != nil) THEN \(icon ?? nil) ELSE icon END,
                color = CASE WHEN \(color != nil) THEN \(color ?? nil) ELSE color END,
                sort_order = CASE WHEN \(sortOrder != nil) THEN \(sortOrder.flatMap { $0 }.map(Int32.init)) ELSE sort_order END
            WHERE id = \(id) AND user_id = \(user)
            RETURNING \(unsafeSQL: Habit.columns)
            """)
        guard let row = rows.first else { throw StoreError.notFound }
        return try Habit(row: row)
    }

    /// Deactivates a habit (idempotent: deactivating twice keeps the first deactivated_at).
    public func deactivateHabit(user: UUID, id: UUID) throws -> Habit {
        try setActive(user: user, id: id, active: false)
    }

    /// Reactivates a habit. `activated_at` keeps its original value, so the habit shows on
    /// the days since it was first activated (history of inactive spans is not kept).
    public func activateHabit(user: UUID, id: UUID) throws -> Habit {
        try setActive(user: user, id: id, active: true)
    }

    private func setActive(user: UUID, id: UUID, active: Bool) throws -> Habit {
        let rows = try scope.query(as: user, """
            UPDATE public.habit_templates SET
                is_active = \(active),
                deactivated_at = CASE WHEN \(active) THEN NULL ELSE coalesce(deactivated_at, now()) END
            WHERE id = \(id) AND user_id = \(user)
            RETURNING \(unsafeSQL: Habit.columns)
            """)
        guard let row = rows.first else { throw StoreError.notFound }
        return try Habit(row: row)
    }

    /// Deletes a habit and, by ON DELETE CASCADE, all its completions. Deleting a habit that
    /// does not exist (or no longer exists) is `notFound`.
    public func deleteHabit(user: UUID, id: UUID) throws {
        let deleted = try scope.execute(as: user, "DELETE FROM public.habit_templates WHERE id = \(id) AND user_id = \(user)")
        guard deleted == 1 else { throw StoreError.notFound }
    }

    public func listHabits(user: UUID, includeInactive: Bool = false,
                           page: PageRequest<HabitSortKey> = PageRequest()) throws -> Page<Habit> {
        // sort_order NULLS LAST as a row comparison: (sort_order IS NULL, coalesce(sort_order, 0)).
        let after = HabitSortKey.bounds(page.after)
        return Page(fetched: try scope.query(as: user, """
            SELECT \(unsafeSQL: Habit.columns) FROM public.habit_templates
            WHERE user_id = \(user) AND (is_active OR \(includeInactive))
              AND (sort_order IS NULL, coalesce(sort_order, 0)::bigint, created_at, id)
                  > (\(after.nullOrder), \(after.order), \(after.createdAt), \(after.id))
            ORDER BY sort_order IS NULL, sort_order, created_at, id
            LIMIT \(page.fetchLimit)
            """).map { try Habit(row: $0) }, request: page)
    }

    // MARK: - A day

    /// Active habits whose activation day, in the user's time zone, is on or before `date`,
    /// ordered by sort_order, then created_at.
    public func activeTemplates(user: UUID, on date: CalendarDate, timeZone: String? = nil) throws -> [Habit] {
        try day(user: user, date: date, timeZone: timeZone).habits
    }

    /// The user's template ids completed on `date`.
    public func completedTemplateIDs(user: UUID, on date: CalendarDate) throws -> Set<UUID> {
        Set(try scope.query(as: user, """
            SELECT template_id FROM public.habit_completions
            WHERE user_id = \(user) AND completed_date = \(date)
            """).map { try $0.decode(UUID.self, at: 0) })
    }

    /// Everything the daily view needs, in one statement: today in the user's zone, the
    /// completed ids and the active habits.
    public func day(user: UUID, date: CalendarDate, timeZone: String? = nil) throws -> DayView {
        try scope.run(dayStatement(user: user, date: date, timeZone: timeZone))
    }

    /// `day`'s statement, for running several requests in one round trip (`UserScope.queries`).
    public func dayStatement(user: UUID, date: CalendarDate, timeZone: String? = nil) throws -> UserStatement<DayView> {
        try validateTimeZone(timeZone)
        return UserStatement(user: user, statement: """
            WITH zone AS (SELECT habit.user_time_zone(\(user), \(timeZone)) AS tz),
            header AS (
                SELECT habit.local_date(now(), zone.tz) AS today,
                       ARRAY(SELECT c.template_id FROM public.habit_completions c
                             WHERE c.user_id = \(user) AND c.completed_date = \(date)) AS completed
                FROM zone
            )
            SELECT header.today, header.completed, t.*
            FROM header LEFT JOIN LATERAL (
                SELECT \(unsafeSQL: Habit.columns)
                FROM public.habit_templates h, zone
                WHERE h.user_id = \(user) AND h.is_active
                  AND habit.local_date(h.activated_at, zone.tz) <= \(date)
            ) t ON true
            ORDER BY t.sort_order NULLS LAST, t.created_at, t.id
            """) { rows in
            guard let first = rows.first else { throw PostgresError(kind: .unexpectedRowCount, message: "day query returned no header row") }
            // Columns: today, completed, then Habit.columns (all NULL when no habit matched).
            let habits = try rows.filter { !$0.isNull(at: 2) }.map { try Habit(row: $0, at: 2) }
            return DayView(
                date: date,
                today: try first.decode(CalendarDate.self, at: 0),
                habits: habits,
                completed: Set(try first.decode([UUID].self, at: 1))
            )
        }
    }

    // MARK: - Completions

    /// Sets whether `template` is completed on `date`. Idempotent — setting the current state
    /// again changes nothing and is no error — so a gateway can retry it safely.
    /// Completing needs an active habit activated on or before `date`; both directions refuse
    /// future dates.
    public func setCompletion(user: UUID, template: UUID, date: CalendarDate, completed: Bool,
                              timeZone: String? = nil) throws -> CompletionChange {
        try scope.run(setCompletionStatement(user: user, template: template, date: date, completed: completed, timeZone: timeZone))
    }

    /// `setCompletion`'s statement, for running several requests in one round trip.
    public func setCompletionStatement(user: UUID, template: UUID, date: CalendarDate, completed: Bool,
                                       timeZone: String? = nil) throws -> UserStatement<CompletionChange> {
        try validateTimeZone(timeZone)
        // One statement, one round trip: read the habit's state and write only when every
        // rule holds, so a refused request commits nothing. ON CONFLICT DO NOTHING makes
        // concurrent inserts of the same key harmless.
        return UserStatement(user: user, statement: """
            WITH zone AS (SELECT habit.user_time_zone(\(user), \(timeZone)) AS tz),
            habit AS (
                SELECT t.id, t.is_active,
                       habit.local_date(t.activated_at, zone.tz) AS first_day,
                       habit.local_date(now(), zone.tz) AS today
                FROM public.habit_templates t, zone
                WHERE t.id = \(template) AND t.user_id = \(user)
            ),
            inserted AS (
                INSERT INTO public.habit_completions (user_id, template_id, completed_date)
                SELECT \(user), habit.id, \(date) FROM habit
                WHERE \(completed) AND \(date) <= habit.today AND habit.is_active AND habit.first_day <= \(date)
                ON CONFLICT (user_id, template_id, completed_date) DO NOTHING
                RETURNING 1
            ),
            deleted AS (
                DELETE FROM public.habit_completions c USING habit
                WHERE NOT \(completed) AND \(date) <= habit.today
                  AND c.user_id = \(user) AND c.template_id = habit.id AND c.completed_date = \(date)
                RETURNING 1
            )
            SELECT habit.id IS NOT NULL AS found, habit.is_active, habit.first_day, habit.today,
                   (SELECT count(*) FROM inserted) + (SELECT count(*) FROM deleted) AS changed
            FROM (SELECT 1) AS one LEFT JOIN habit ON true
            """) { rows in
            guard let row = rows.first else { throw PostgresError(kind: .unexpectedRowCount, message: "completion statement returned no row") }
            guard try row.decode(Bool.self, "found") else { throw StoreError.notFound }
            let today = try row.decode(CalendarDate.self, "today")
            guard date <= today else { throw StoreError.futureDate(today: today) }
            if completed {
                let active = try row.decode(Bool.self, "is_active")
                let firstDay = try row.decode(CalendarDate.self, "first_day")
                guard active, firstDay <= date else { throw StoreError.habitNotActive }
            }
            return CompletionChange(completed: completed, changed: try row.decode(Int.self, "changed") > 0)
        }
    }

    /// Flips the completion of `template` on `date` and returns the new state. Toggles of
    /// one habit are serialized by a row lock on the habit, so concurrent toggles each flip
    /// once (none is lost, none fails on the unique key).
    static let toggleAttempts = 5

    public func toggleCompletion(user: UUID, template: UUID, date: CalendarDate, timeZone: String? = nil) throws -> Bool {
        try validateTimeZone(timeZone)
        return try scope.transaction(as: user) { connection in
            // Statement 1 takes the lock. The completion is read by statement 2, whose
            // snapshot starts after the lock was granted and so sees the previous toggle.
            let habit = try connection.queryOptional("""
                WITH zone AS (SELECT habit.user_time_zone(\(user), \(timeZone)) AS tz)
                SELECT t.is_active, habit.local_date(t.activated_at, zone.tz) AS first_day,
                       habit.local_date(now(), zone.tz) AS today
                FROM public.habit_templates t, zone
                WHERE t.id = \(template) AND t.user_id = \(user)
                FOR NO KEY UPDATE OF t
                """)
            guard let habit else { throw StoreError.notFound }
            let today = try habit.decode(CalendarDate.self, "today")
            guard date <= today else { throw StoreError.futureDate(today: today) }
            let mayComplete = try habit.decode(Bool.self, "is_active") && habit.decode(CalendarDate.self, "first_day") <= date
            // A concurrent setCompletion (which takes no lock) may commit a row this
            // statement's snapshot cannot see: the insert then meets the conflict and does
            // nothing. Each retry is a new statement with a newer snapshot that sees the row.
            for _ in 0..<Self.toggleAttempts {
                let row = try connection.queryOne("""
                    WITH deleted AS (
                        DELETE FROM public.habit_completions
                        WHERE user_id = \(user) AND template_id = \(template) AND completed_date = \(date)
                        RETURNING 1
                    ),
                    inserted AS (
                        INSERT INTO public.habit_completions (user_id, template_id, completed_date)
                        SELECT \(user), \(template), \(date)
                        WHERE \(mayComplete) AND NOT EXISTS (SELECT 1 FROM deleted)
                        ON CONFLICT (user_id, template_id, completed_date) DO NOTHING
                        RETURNING 1
                    )
                    SELECT EXISTS (SELECT 1 FROM deleted) AS removed, EXISTS (SELECT 1 FROM inserted) AS added
                    """)
                if try row.decode(Bool.self, "added") { return true }
                if try row.decode(Bool.self, "removed") { return false }
                guard mayComplete else { throw StoreError.habitNotActive }
            }
            throw PostgresError(kind: .server, message: "toggle kept conflicting with concurrent writes", sqlState: .serializationFailure)
        }
    }

    /// The seven days of the week containing `date`: per day, completions of habits active
    /// that day and the number of such habits (the week strip's dots).
    public func weekCounts(user: UUID, containing date: CalendarDate, weekStart: WeekStart,
                           timeZone: String? = nil) throws -> [DayCount] {
        try validateTimeZone(timeZone)
        let first = weekStart.weekStart(containing: date)
        return try scope.query(as: user, """
            WITH zone AS (SELECT habit.user_time_zone(\(user), \(timeZone)) AS tz),
            days AS (SELECT \(first) + offset_days AS day FROM generate_series(0, 6) AS offset_days),
            habits AS (
                SELECT h.id, habit.local_date(h.activated_at, zone.tz) AS first_day
                FROM public.habit_templates h, zone
                WHERE h.user_id = \(user) AND h.is_active
            )
            SELECT days.day,
                   (SELECT count(*) FROM public.habit_completions c JOIN habits ON habits.id = c.template_id
                    WHERE c.user_id = \(user) AND c.completed_date = days.day AND habits.first_day <= days.day) AS completed,
                   (SELECT count(*) FROM habits WHERE habits.first_day <= days.day) AS active
            FROM days ORDER BY days.day
            """).map { row in
            DayCount(date: try row.decode(CalendarDate.self, "day"),
                     completed: try row.decode(Int.self, "completed"),
                     active: try row.decode(Int.self, "active"))
        }
    }

    // MARK: - Validation

    func validateTimeZone(_ zone: String?) throws {
        guard let zone else { return }
        guard try TimeZoneNames.shared.isValid(zone, using: connection) else {
            throw StoreError.invalidInput(field: "timezone", reason: "not a time zone PostgreSQL knows (pg_timezone_names)")
        }
    }
}
