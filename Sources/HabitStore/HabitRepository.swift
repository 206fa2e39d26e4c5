import Foundation
import PostgresClient

/// The habits of the Habbit app, per user. Every method takes the acting user and touches
/// only that user's rows twice over: each statement filters by `user_id`, and runs under
/// that user's claims with row-level security forced (see `UserScope`).
///
/// Each method of one statement is one round trip: BEGIN, the user's settings, the statement
/// and COMMIT in one pipeline (`UserScope.query`/`run`/`execute`); the toggle too
/// (`habit.toggle_day` locks, reads and writes in one statement). The rules the statements
/// apply live in the database (sql/functions/history.sql: `habit.day_habits`/`habit.habit_days_at`,
/// which habits are on a day and due; `habit.set_day_state`, `habit.toggle_day` and
/// `habit.set_skips`, which write through the tables' triggers and so raise their SQLSTATEs
/// (`habit.check_day`, sql/triggers/), mapped by `StoreError.mapping`); `refuse` maps refusals to
/// errors. The same triggers keep the rules for every other writer.
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
        // habit.user_time_zone holds the rule: the profile's zone, else UTC; the week starts
        // on the profile's day, else Monday; the day at the profile's start, else midnight.
        let row = try scope.query(as: user, """
            SELECT habit.user_time_zone(\(user), NULL),
                   coalesce((SELECT p.week_start FROM public.profiles p WHERE p.user_id = \(user)), 'monday'),
                   left(habit.user_day_start(\(user))::text, 5)
            """).single()
        return try Self.profile(user: user, row)
    }

    /// Creates or changes the user's profile: the fields given (nil keeps the stored value, or
    /// the default for a new profile: UTC, Monday, days from 00:00). `dayStartsAt`: "HH:MM".
    public func setProfile(user: UUID, timeZone: String?, weekStart: WeekStart? = nil, dayStartsAt: String? = nil) throws -> Profile {
        try Validation.timeZone(timeZone, using: connection)
        // The day's start as minutes, made a time by make_time (IMMUTABLE): Citus refuses a
        // STABLE function, such as text's cast to time, in an upsert's DO UPDATE SET.
        let minutes: Int32? = try dayStartsAt.map { text in
            let parts = text.split(separator: ":")
            guard parts.count == 2, let hours = Int32(parts[0]), let minutes = Int32(parts[1]), (0..<24).contains(hours), (0..<60).contains(minutes) else {
                throw StoreError.invalidInput(field: "day_starts_at", reason: .invalidTime, message: "expected a local time of day \"HH:MM\"")
            }
            return hours * 60 + minutes
        }
        let row = try scope.query(as: user, """
            INSERT INTO public.profiles (user_id, timezone, week_start, day_starts_at)
            VALUES (\(user), coalesce(\(timeZone), 'UTC'), coalesce(\(weekStart?.rawValue), 'monday'),
                    coalesce(make_time(\(minutes)::int / 60, \(minutes)::int % 60, 0), '00:00'))
            ON CONFLICT (user_id) DO UPDATE SET
                timezone = coalesce(\(timeZone), profiles.timezone),
                week_start = coalesce(\(weekStart?.rawValue), profiles.week_start),
                day_starts_at = coalesce(make_time(\(minutes)::int / 60, \(minutes)::int % 60, 0), profiles.day_starts_at)
            RETURNING \(unsafeSQL: Self.profileColumns)
            """).single()
        return try Self.profile(user: user, row)
    }

    public func setTimeZone(user: UUID, timeZone: String) throws -> Profile {
        try setProfile(user: user, timeZone: timeZone)
    }

    /// The columns `profile(user:_:)` reads, in its order (the sync pull and the export read
    /// them the same way). The day's start as "HH:MM" by IMMUTABLE functions only (the time's
    /// text, cut): Citus refuses a STABLE one such as to_char in an INSERT's RETURNING.
    static let profileColumns = "timezone, week_start, left(day_starts_at::text, 5)"

    /// A profile from `profileColumns`.
    static func profile(user: UUID, _ row: Row) throws -> Profile {
        let weekStart = try row.decode(String.self, at: 1)
        guard let start = WeekStart(rawValue: weekStart) else {
            throw PostgresError(kind: .decoding, message: "unknown week start \"\(weekStart)\"")
        }
        return Profile(userID: user, timeZone: try row.decode(String.self, at: 0), weekStart: start,
                       dayStartsAt: try row.decode(String.self, at: 2))
    }

    // MARK: - Habits

    /// Creates a habit. With `draft.id`, safe to retry: when the user already has a habit with
    /// that id and the same fields (schedule included), that habit is returned as it is now;
    /// other fields, or an id of another user's row, is `idConflict` (the rule is
    /// `habit.create_habit`, sql/functions/habits.sql). The habit's first period
    /// starts at `activatedAt` with the schedule (the insert's trigger).
    public func createHabit(user: UUID, _ draft: HabitDraft) throws -> Habit {
        let name = try Validation.habitName(draft.name)
        let icon = try draft.icon.map(Validation.icon)
        let color = try draft.color.map(Validation.color)
        let sortOrder = try draft.sortOrder.map { Int32(try Validation.sortOrder($0)) }
        let schedule = try (draft.schedule ?? .daily).validated()
        let measure = try Validation.measure(draft.measure)
        return try Habit(row: scope.query(as: user, """
            SELECT \(unsafeSQL: Habit.columns)
            FROM habit.create_habit(\(user), \(draft.id), \(name), \(icon), \(color), \(draft.activatedAt), \(sortOrder),
                                    \(schedule.jsonb),
                                    jsonb_strip_nulls(jsonb_build_object('kind', \(measure.kind.rawValue)::text, 'unit', \(measure.unit)::text,
                                        'target', \(measure.target.text)::text, 'target_type', \(measure.targetType.rawValue)::text,
                                        'target_period', \(measure.targetPeriod.rawValue)::text)),
                                    \(draft.areaID)::uuid)
            """).single())
    }

    public func updateHabit(user: UUID, id: UUID, _ changes: HabitChanges) throws -> Habit {
        let name = try changes.name.map(Validation.habitName)
        let icon = try changes.icon.map { try $0.map(Validation.icon) }
        let color = try changes.color.map { try $0.map(Validation.color) }
        let sortOrder = try changes.sortOrder.map { try $0.map { try Validation.sortOrder($0) } }
        let schedule = try changes.schedule.map { schedule throws(StoreError) in try schedule.validated() }
        let unit = try changes.unit.map { try $0.map(Validation.unit) }
        // One statement for any combination of fields: a flag per optional field says
        // whether to replace it (possibly with NULL). A new schedule fires the history
        // trigger (the open period ends now, one starts with it); the same schedule does not.
        let rows = try scope.query(as: user, """
            UPDATE public.habit_templates SET
                name = coalesce(\(name), name),
                icon = CASE WHEN \(icon != nil) THEN \(icon ?? nil) ELSE icon END,
                color = CASE WHEN \(color != nil) THEN \(color ?? nil) ELSE color END,
                sort_order = CASE WHEN \(sortOrder != nil) THEN \(sortOrder.flatMap { $0 }.map(Int32.init)) ELSE sort_order END,
                schedule = coalesce(\(schedule?.jsonb), schedule),
                kind = coalesce(\(changes.kind?.rawValue)::text, kind),
                unit = CASE WHEN \(unit != nil) THEN \(unit ?? nil)::text ELSE unit END,
                target = coalesce(\(changes.target?.text)::numeric, target),
                target_type = coalesce(\(changes.targetType?.rawValue)::text, target_type),
                target_period = coalesce(\(changes.targetPeriod?.rawValue)::text, target_period),
                area_id = CASE WHEN \(changes.areaID != nil) THEN \(changes.areaID ?? nil)::uuid ELSE area_id END
            WHERE id = \(id) AND user_id = \(user)
            RETURNING \(unsafeSQL: Habit.columns)
            """)
        return try Habit(row: rows.found())
    }

    /// Deactivates a habit: its history trigger (sql/triggers/habit_templates.sql) closes its
    /// open period at now() and sets deactivated_at (idempotent: deactivating twice changes
    /// nothing).
    public func deactivateHabit(user: UUID, id: UUID) throws -> Habit {
        try setActive(user: user, id: id, active: false)
    }

    /// Reactivates a habit: its history trigger (sql/triggers/habit_templates.sql) opens a
    /// period at now(); `activated_at` keeps the start of the first period, and the days
    /// between stay inactive.
    public func activateHabit(user: UUID, id: UUID) throws -> Habit {
        try setActive(user: user, id: id, active: true)
    }

    /// Archives a habit (sql/0035): hidden from day.get and habits.list's default view; its
    /// period stays open and its history, streaks, sync and export are kept. Archiving twice
    /// keeps the first time; unarchiving clears it.
    public func setArchived(user: UUID, id: UUID, archived: Bool) throws -> Habit {
        let rows = try scope.query(as: user, """
            SELECT \(unsafeSQL: Habit.columns) FROM habit.set_habit_archived(\(user), \(id), \(archived))
            """)
        return try Habit(row: rows.found())
    }

    /// Moves a habit just before `before` or just after `after` (one of them) in the daily
    /// list (habit.move_habit); notFound when either habit is not the user's.
    public func moveHabit(user: UUID, id: UUID, before: UUID?, after: UUID?) throws -> Habit {
        let rows = try scope.query(as: user, """
            SELECT \(unsafeSQL: Habit.columns) FROM habit.move_habit(\(user), \(id), \(before)::uuid, \(after)::uuid)
            """)
        return try Habit(row: rows.found())
    }

    private func setActive(user: UUID, id: UUID, active: Bool) throws -> Habit {
        let rows = try scope.query(as: user, """
            UPDATE public.habit_templates SET is_active = \(active)
            WHERE id = \(id) AND user_id = \(user)
            RETURNING \(unsafeSQL: Habit.columns)
            """)
        return try Habit(row: rows.found())
    }

    /// The habit's periods of activity, oldest first, each with its schedule
    /// (public.habit_periods, written by the triggers of habit_templates). One statement: the habit joined
    /// to its periods, so an unknown id (or another user's, which row-level security hides) is
    /// `notFound` while a habit that never was active has no periods.
    public func history(user: UUID, id: UUID) throws -> HabitHistory {
        try scope.run(historyStatement(user: user, id: id))
    }

    /// `history`'s statement, for running several requests in one round trip.
    public func historyStatement(user: UUID, id: UUID) -> UserStatement<HabitHistory> {
        UserStatement(user: user, statement: """
            SELECT p.started_at, p.ended_at, p.schedule
            FROM public.habit_templates t
            LEFT JOIN public.habit_periods p ON p.user_id = t.user_id AND p.template_id = t.id
            WHERE t.id = \(id) AND t.user_id = \(user)
            ORDER BY p.started_at
            """) { rows in
            guard !rows.isEmpty else { throw StoreError.notFound }
            // A habit without periods: one row of NULLs.
            let periods = try rows.filter { !$0.isNull(at: 0) }.map { row in
                HabitPeriod(startedAt: try row.decode(PostgresTimestamp.self, at: 0),
                            endedAt: try row.decode(PostgresTimestamp?.self, at: 1),
                            schedule: try HabitSchedule(storedJSON: row.decode(JSONB.self, at: 2).text))
            }
            return HabitHistory(id: id, periods: periods)
        }
    }

    /// Deletes a habit and, by ON DELETE CASCADE, all its completions. Deleting a habit that
    /// does not exist (or no longer exists) is `notFound`.
    public func deleteHabit(user: UUID, id: UUID) throws {
        let deleted = try scope.execute(as: user, "DELETE FROM public.habit_templates WHERE id = \(id) AND user_id = \(user)")
        guard deleted == 1 else { throw StoreError.notFound }
    }

    public func listHabits(user: UUID, includeInactive: Bool = false, includeArchived: Bool = false,
                           page: PageRequest<HabitSortKey> = PageRequest()) throws -> Page<Habit> {
        // sort_order NULLS LAST as a row comparison: (sort_order IS NULL, coalesce(sort_order, 0)).
        let after = HabitSortKey.bounds(page.after)
        return Page(fetched: try scope.query(as: user, """
            SELECT \(unsafeSQL: Habit.columns) FROM public.habit_templates
            WHERE user_id = \(user) AND (is_active OR \(includeInactive)) AND (archived_at IS NULL OR \(includeArchived))
              AND (sort_order IS NULL, coalesce(sort_order, 0)::bigint, created_at, id)
                  > (\(after.nullOrder), \(after.order), \(after.createdAt), \(after.id))
            ORDER BY sort_order IS NULL, sort_order, created_at, id
            LIMIT \(page.fetchLimit)
            """).map { try Habit(row: $0) }, request: page)
    }

    // MARK: - A day

    /// The habits on `date` (`habit.habit_days_at`), ordered by sort_order, then created_at.
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

    /// Everything the daily view needs, in one statement: today in the user's zone and the
    /// habits on `date` with whether each is due, done and skipped and the schedule in force
    /// that day (`habit.day_habits`); with `includeStreaks`, each one's current streak at
    /// `date` as well (`habit.current_streak`).
    public func day(user: UUID, date: CalendarDate, timeZone: String? = nil, includeStreaks: Bool = false) throws -> DayView {
        try scope.run(dayStatement(user: user, date: date, timeZone: timeZone, includeStreaks: includeStreaks))
    }

    /// `day`'s statement, for running several requests in one round trip (`UserScope.queries`).
    /// One pass: the profile read once (the request's zone, else the profile's; the week start),
    /// today computed once, and the habits on `date` from the periods that contain it
    /// (`habit.day_habits`: the one-day rule, inlined, no series). With `includeStreaks`, each
    /// listed habit joins `habit.current_streak` (inlined: the habit's state row and one probe of
    /// its runs). Streaks are the profile's (its zone and week), also under a `timeZone` override:
    /// each listed habit gets its streak at `date`.
    /// The week start is `habit.week_start_isodow`'s answer written inline (profiles.week_start
    /// is 'monday' or 'sunday' by its CHECK; no profile: Monday): that function is PL/pgSQL with a
    /// SET clause, and calling it cost a GUC save and restore per request.
    public func dayStatement(user: UUID, date: CalendarDate, timeZone: String? = nil,
                             includeStreaks: Bool = false) throws -> UserStatement<DayView> {
        try Validation.timeZone(timeZone, using: connection)
        // $1 the user, $2 the zone override, $3 the date (Self.daySQL).
        var bindings = Query.Bindings()
        bindings.append(user)
        if let timeZone { bindings.append(timeZone) } else { bindings.appendNull(of: String.postgresType) }
        bindings.append(date)
        let statement = Query(unsafeSQL: includeStreaks ? Self.daySQLWithStreaks : Self.daySQLPlain, bindings: bindings)
        // A generic plan from the first request on: the hottest read must not flip to a custom
        // plan per request (UserStatement.genericPlan; docs/performance.md, "Generic plans").
        return UserStatement(user: user, statement: statement, genericPlan: true) { rows in
            guard let first = rows.first else { throw PostgresError(kind: .unexpectedRowCount, message: "day query returned no header row") }
            // Columns: today, due, done, skipped, then Habit.columns (all NULL when no habit
            // matched), then the day's value and check-ins count (NULL: not counted), the note and
            // the week's value (NULL: not a weekly target), then with streaks current_length,
            // current_start.
            var view = DayView(date: date, today: try first.decode(CalendarDate.self, at: 0), habits: [], completed: [])
            let detailColumn = 4 + Habit.columnNames.count
            let streakColumn = detailColumn + 4
            // The user's areas (ids and names, in order), on one row of the answer only.
            let areaColumn = streakColumn + (includeStreaks ? 2 : 0)
            var areaIDs: [UUID] = [], areaNames: [String] = []
            if includeStreaks { view.currentStreaks = [:] }
            for row in rows where !row.isNull(at: areaColumn) {
                areaIDs = try row.decode([UUID].self, at: areaColumn)
                areaNames = try row.decode([String].self, at: areaColumn + 1)
            }
            for row in rows where !row.isNull(at: 4) {
                let habit = try Habit(row: row, at: 4)
                view.habits.append(habit)
                if try row.decode(Bool.self, at: 1) { view.due.insert(habit.id) }
                if try row.decode(Bool.self, at: 2) { view.completed.insert(habit.id) }
                if try row.decode(Bool.self, at: 3) { view.skipped.insert(habit.id) }
                let count = try row.decode(Int64?.self, at: detailColumn + 1).map(Int.init)
                let value = count == nil ? nil : try DecimalValue(row.decode(PostgresNumeric.self, at: detailColumn))
                view.details[habit.id] = DayDetail(value: value, checkins: count,
                                                   note: try row.decode(String?.self, at: detailColumn + 2),
                                                   weekValue: try row.decode(PostgresNumeric?.self, at: detailColumn + 3).map(DecimalValue.init))
                if includeStreaks {
                    view.currentStreaks?[habit.id] = CurrentStreak(
                        length: try row.decode(Int?.self, at: streakColumn) ?? 0,
                        start: try row.decode(CalendarDate?.self, at: streakColumn + 1))
                }
            }
            view.areas = zip(areaIDs, areaNames).map { id, name in
                let counted = view.habits.filter { $0.areaID == id && view.due.contains($0.id) && !view.skipped.contains($0.id) }
                return AreaDay(id: id, name: name, due: counted.count, done: counted.filter { view.completed.contains($0.id) }.count)
            }
            return view
        }
    }

    /// `dayStatement`'s text, built once per variant (the text and its column lists were built
    /// anew for every request): $1 the user (uuid), $2 the zone override (text), $3 the date.
    private static let daySQLPlain = daySQL(includeStreaks: false)
    private static let daySQLWithStreaks = daySQL(includeStreaks: true)
    private static func daySQL(includeStreaks: Bool) -> String {
        """
        WITH header AS MATERIALIZED (
            SELECT habit.local_day(now(), coalesce($2::text, p.timezone, 'UTC'), coalesce(p.day_starts_at, '00:00')) AS today,
                   areas.ids AS area_ids, areas.names AS area_names,
                   habit.local_day(now(), coalesce(p.timezone, 'UTC'), coalesce(p.day_starts_at, '00:00')) AS profile_today,
                   coalesce($2::text, p.timezone, 'UTC') AS tz, coalesce(p.day_starts_at, '00:00') AS ds,
                   CASE p.week_start WHEN 'sunday' THEN 7 ELSE 1 END AS wk, $3::date AS day
            FROM (SELECT 1) AS one LEFT JOIN public.profiles p ON p.user_id = $1
            -- The user's areas in their order (day.get's areas), sent once: on one row.
            CROSS JOIN LATERAL (SELECT coalesce(array_agg(a.id ORDER BY a.sort_order NULLS LAST, a.created_at, a.id), '{}') AS ids,
                                       coalesce(array_agg(a.name ORDER BY a.sort_order NULLS LAST, a.created_at, a.id), '{}') AS names
                                FROM public.habit_areas a WHERE a.user_id = $1) areas
        )
        SELECT header.today, t.due, t.done, t.skipped, \(Habit.columnList(prefix: "t.")), t.day_value, t.checkin_count, t.note, t.week_value\(includeStreaks ? ", t.current_length, t.current_start" : ""),
               CASE WHEN row_number() OVER () = 1 THEN header.area_ids END, CASE WHEN row_number() OVER () = 1 THEN header.area_names END
        FROM header LEFT JOIN LATERAL (
            -- The schedule in force on that day, not the habit's current one.
            SELECT d.due, d.done, d.skipped,
                   \(Habit.columnList(prefix: "h.", replacing: ["schedule": "d.schedule"])),
                   -- The day's value: its check-ins' sum; done without any, habit.done_value (sql/0031).
                   CASE WHEN ci.checkin_count = 0 AND d.done THEN habit.done_value(h.target, h.target_type)
                        ELSE coalesce(ci.checkin_sum, 0) END AS day_value,
                   ci.checkin_count, n.note, wv.week_value\(includeStreaks ? ", streak.current_length, streak.current_start" : "")
            FROM habit.day_habits($1, header.day, header.today, header.tz, header.wk, header.ds) d
            JOIN public.habit_templates h ON h.id = d.template_id AND h.user_id = $1 AND h.archived_at IS NULL
            -- The day's check-ins, only for a habit counted from them (sql/0029): for the others
            -- a one-time filter (no probe) and no row (HAVING).
            LEFT JOIN LATERAL (SELECT sum(x.value) AS checkin_sum, count(*) AS checkin_count FROM public.habit_checkins x
                               WHERE habit.is_counted(h.kind, h.target, h.target_type)
                                 AND x.user_id = $1 AND x.template_id = h.id AND x.checkin_date = header.day
                               HAVING habit.is_counted(h.kind, h.target, h.target_type)) ci ON true
            LEFT JOIN public.habit_day_notes n ON n.user_id = $1 AND n.template_id = h.id AND n.note_date = header.day
            -- A weekly target's week (sql/0033): its check-ins' sum, for those habits only (a
            -- kept at-most week without any: 0).
            LEFT JOIN LATERAL (SELECT coalesce(sum(x.value), 0) AS week_value FROM public.habit_checkins x
                               WHERE h.target_period = 'week' AND x.user_id = $1 AND x.template_id = h.id
                                 AND x.checkin_date >= habit.week_start(header.day, header.wk)
                                 AND x.checkin_date < habit.week_start(header.day, header.wk) + 7
                               HAVING h.target_period = 'week') wv ON true
            \(includeStreaks ? "LEFT JOIN LATERAL habit.current_streak(h.user_id, h.id, header.day, header.profile_today) streak ON true" : "")
        ) t ON true
        ORDER BY t.sort_order NULLS LAST, t.created_at, t.id
        """
    }

    // MARK: - Completions

    /// Sets whether `template` is completed on `date` (`completed: true` = done, `false` =
    /// none: the completion or a skip removed). Idempotent — setting the current state again
    /// changes nothing and is no error — so a gateway can retry it safely. As `setDayState`,
    /// except that `completed: false` keeps its rule of "not after today".
    public func setCompletion(user: UUID, template: UUID, date: CalendarDate, completed: Bool,
                              timeZone: String? = nil) throws -> CompletionChange {
        try scope.run(setDayStateStatement(user: user, template: template, date: date, state: completed ? .done : .none,
                                           clearAhead: false, timeZone: timeZone))
    }

    /// Sets `template`'s state on `date` to done, skipped or none, removing the other state in
    /// the same transaction (one statement: `habit.set_day_state`, sql/functions/history.sql, which
    /// locks the habit, checks the rules and writes). Idempotent. Refusals are the database's:
    /// HB003 (done after today, skipped or none after today + 366; `futureDate` with the
    /// today of `timeZone`, else the profile's), HB004 (done or skipped on a day the habit is
    /// not on: `habitNotActive`), HB005 from another writer's racing row (`invalidState`).
    public func setDayState(user: UUID, template: UUID, date: CalendarDate, state: DayState,
                            timeZone: String? = nil) throws -> CompletionChange {
        try scope.run(setDayStateStatement(user: user, template: template, date: date, state: state,
                                           clearAhead: true, timeZone: timeZone))
    }

    /// The statement of `setDayState`/`setCompletion`. `clearAhead` false: none refuses dates
    /// after today (completions.set's `completed: false`).
    func setDayStateStatement(user: UUID, template: UUID, date: CalendarDate, state: DayState, clearAhead: Bool,
                              timeZone: String?) throws -> UserStatement<CompletionChange> {
        try Validation.timeZone(timeZone, using: connection)
        return UserStatement(user: user, statement: """
            SELECT s.today, s.changed
            FROM habit.set_day_state(\(user), \(template), \(date), \(state.rawValue), \(timeZone), \(clearAhead)) s
            """) { rows in
            // No row: not the user's habit (or no such habit).
            guard let row = rows.first else { throw StoreError.notFound }
            return CompletionChange(state: state, changed: try row.decode(Bool.self, "changed"))
        }
    }

    /// Skips (`skipped`) or unskips every habit of `user` — or only `template` — on each day
    /// of `from`…`to` (inclusive, at most 366 days), in one statement (`habit.set_skips`,
    /// sql/functions/history.sql). Skipping passes over done days (they stay done) and days a habit
    /// is not on; it refuses a range reaching past today + 366 (`futureDate`). Unskipping
    /// removes the skips of the range. Idempotent. `template` not the user's: `notFound`.
    public func setSkips(user: UUID, template: UUID?, from: CalendarDate, to: CalendarDate, skipped: Bool,
                         timeZone: String? = nil) throws -> SkipRangeChange {
        guard to >= from else {
            throw StoreError.invalidInput(field: "to", reason: .outOfRange, message: "must be on or after from")
        }
        guard from.adding(days: Self.maxSkipRangeDays - 1) >= to else {
            throw StoreError.invalidInput(field: "to", reason: .outOfRange, message: "the range may hold at most \(Self.maxSkipRangeDays) days")
        }
        try Validation.timeZone(timeZone, using: connection)
        let row = try scope.query(as: user, """
            SELECT s.found, s.changed, s.days
            FROM habit.set_skips(\(user), \(template), \(from), \(to), \(skipped), \(timeZone)) s
            """).single()
        guard try row.decode(Bool.self, "found") else { throw StoreError.notFound }
        return SkipRangeChange(changed: try row.decode(Int.self, "changed"), days: try row.decode([CalendarDate].self, "days"))
    }

    /// The most days `setSkips` takes at once (`habit.set_skips` has the same bound).
    public static let maxSkipRangeDays = 366

    /// Flips the completion of `template` on `date` and returns the new state; a skipped day
    /// becomes done (the skip removed). One statement (`habit.toggle_day`): it locks the habit,
    /// so concurrent toggles of one habit each flip once (none is lost, none fails on the unique
    /// key), then sets the day as `setCompletion` would. The rules are the database's: removing
    /// refuses a date after today, completing meets the triggers' HB003/HB004.
    public func toggleCompletion(user: UUID, template: UUID, date: CalendarDate, timeZone: String? = nil) throws -> Bool {
        try Validation.timeZone(timeZone, using: connection)
        let rows = try scope.query(as: user, "SELECT done FROM habit.toggle_day(\(user), \(template), \(date), \(timeZone))")
        return try rows.found().decode(Bool.self, at: 0)
    }

    /// The seven days of the week containing `date` (weeks from `weekStart`, else the user's
    /// profiles.week_start): per day, the habits on that day (`habit.habit_days_at`), how many
    /// of them are done and due, and how many of the due ones are skipped (the week strip's
    /// dots). A skip on a day a habit is not due excuses nothing and is not counted, so
    /// skipped ≤ due, as in habit.stats_calendar and the batch (habit.weekly_counts_of).
    public func weekCounts(user: UUID, containing date: CalendarDate, weekStart: WeekStart? = nil,
                           timeZone: String? = nil) throws -> [DayCount] {
        try weekSummary(user: user, containing: date, weekStart: weekStart, timeZone: timeZone).days
    }

    /// `weekCounts`' days, and the week's value of each habit counted from check-ins that is on
    /// some day of it (`habit.is_counted`: its days' values summed, each its check-ins' sum or,
    /// done without any, `habit.done_value`; 0 for a week without), by id. One statement.
    public func weekSummary(user: UUID, containing date: CalendarDate, weekStart: WeekStart? = nil,
                            timeZone: String? = nil) throws -> (days: [DayCount], values: [(templateID: UUID, value: DecimalValue)]) {
        try Validation.timeZone(timeZone, using: connection)
        let rows = try scope.query(as: user, """
            WITH zone AS MATERIALIZED (
                SELECT habit.user_time_zone(\(user), \(timeZone)) AS tz,
                       habit.week_start(\(date), CASE WHEN \(weekStart?.rawValue)::text IS NULL THEN habit.user_week_start_isodow(\(user))
                                                        ELSE habit.week_start_isodow(\(weekStart?.rawValue)) END) AS first_day
            ),
            days AS (SELECT zone.first_day + offset_days AS day FROM zone, generate_series(0, 6) AS offset_days),
            on_days AS MATERIALIZED (
                SELECT d.template_id, d.day, d.due, d.done, d.skipped
                FROM zone, habit.habit_days_at(\(user), zone.first_day, zone.first_day + 6, habit.user_today(\(user), \(timeZone)), \(timeZone)) d
            ),
            -- The week's value of each counted habit on in it (sql/0029, sql/0031): the batch's
            -- definition (habit.weekly_values: events of the week, its check-ins and its
            -- completions without any, not days) for this user and week; 0 without an entry.
            week_values AS (
                SELECT t.id, coalesce(v.value, 0) AS total
                FROM zone CROSS JOIN public.habit_templates t
                -- (The week's convention is its first day's weekday: Sunday weeks start on day 7.)
                LEFT JOIN habit.weekly_values(zone.first_day, zone.first_day,
                                              CASE WHEN extract(isodow FROM zone.first_day) = 7 THEN 'sunday' ELSE 'monday' END,
                                              \(user)) v ON v.template_id = t.id
                WHERE t.user_id = \(user) AND habit.is_counted(t.kind, t.target, t.target_type)
                  AND t.id IN (SELECT o.template_id FROM on_days o)
            )
            SELECT days.day,
                   count(o.day) FILTER (WHERE o.done) AS completed,
                   count(o.day) AS active,
                   count(o.day) FILTER (WHERE o.due) AS due,
                   count(o.day) FILTER (WHERE o.skipped AND o.due) AS skipped,
                   (SELECT string_agg(w.id::text || '=' || trim_scale(w.total)::text, ',' ORDER BY w.id) FROM week_values w) AS week_values
            FROM days LEFT JOIN on_days o ON o.day = days.day
            GROUP BY days.day ORDER BY days.day
            """)
        let days = try rows.map { row in
            DayCount(date: try row.decode(CalendarDate.self, "day"),
                     completed: try row.decode(Int.self, "completed"),
                     active: try row.decode(Int.self, "active"),
                     due: try row.decode(Int.self, "due"),
                     skipped: try row.decode(Int.self, "skipped"))
        }
        // "<id>=<value>,…" (ids sort as their text: lowercase hex).
        let text = try rows.first?.decode(String?.self, "week_values") ?? nil
        let values = try (text?.split(separator: ",") ?? []).map { pair -> (templateID: UUID, value: DecimalValue) in
            let parts = pair.split(separator: "=")
            guard parts.count == 2, let id = UUID(uuidString: String(parts[0])), let value = DecimalValue(normalizing: String(parts[1]), integerDigits: 15) else {
                throw PostgresError(kind: .decoding, message: "unreadable week value \"\(pair)\"")
            }
            return (id, value)
        }
        return (days, values)
    }
}
