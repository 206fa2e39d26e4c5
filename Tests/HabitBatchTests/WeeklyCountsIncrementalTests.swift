import Foundation
import HabitBatch
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// `habit weekly-counts --store --incremental` (issue 20): after random changes of every kind,
/// made through SQL as the users (as psql or Supabase would: the database marks the dirty
/// days, sql/0015), the stored table of each week convention equals a full recompute
/// (habit.weekly_counts over the range) row for row; and a run after no change writes nothing.
/// HABIT_INCREMENTAL_ROUNDS (default 40) and HABIT_INCREMENTAL_SEED make a long run
/// (scripts/reliability.sh incremental [N]).
@Suite struct WeeklyCountsIncrementalTests {
    static func asUser<Value>(_ user: UUID, on connection: Connection, _ body: (Connection) throws -> Value) throws -> Value {
        // SET LOCAL rather than set_config(…, true): on a Citus coordinator only SET LOCAL reaches
        // the shards (docs/scaling.md, "Running on Citus"); on PostgreSQL the two are the same.
        try connection.withTransaction(prelude: [
            "SET LOCAL ROLE authenticated",
            Query(unsafeSQL: "SET LOCAL request.jwt.claims = '{\"sub\":\"\(user.uuidString.lowercased())\",\"role\":\"authenticated\"}'"),
        ], body)
    }

    static let columns = """
        concat_ws(',', user_id, week_start, completions, days_with_completion, active_habit_days,
                  due_habit_days, skipped_habit_days, completion_rate)
        """

    /// The stored rows of a convention within the weeks of [from, to].
    static func stored(_ admin: Connection, _ job: WeeklyCountsJob) throws -> [String] {
        try admin.query("""
            SELECT \(unsafeSQL: columns) FROM public.weekly_completion_counts
            WHERE week_starts_on = \(job.weekStart.rawValue)
              AND week_start BETWEEN habit.week_start(\(job.from), habit.week_start_isodow(\(job.weekStart.rawValue)))
                                 AND habit.week_start(\(job.to), habit.week_start_isodow(\(job.weekStart.rawValue)))
            ORDER BY user_id, week_start
            """).map { try $0.decode(String.self, at: 0) }
    }

    /// What a full run computes now.
    static func recomputed(_ admin: Connection, _ job: WeeklyCountsJob) throws -> [String] {
        try admin.query("""
            SELECT \(unsafeSQL: columns) FROM habit.weekly_counts(\(job.from), \(job.to), \(job.weekStart.rawValue), NULL)
            ORDER BY user_id, week_start
            """).map { try $0.decode(String.self, at: 0) }
    }

    enum Change: String, CaseIterable {
        case complete, uncomplete, moveCompletion, skip, unskip, schedule, toggleActive, zone, weekStart,
             addHabit, deleteHabit, deleteAccount, backfillPeriod
    }

    static let schedules = [#"{"type":"daily"}"#, #"{"type":"weekdays","days":[1,3,5]}"#,
                            #"{"type":"every_n_days","n":2}"#, #"{"type":"times_per_week","times":3}"#,
                            // A block longer than a week: a completion decides days past its week (sql/0034).
                            #"{"type":"times_in_days","times":2,"days":12}"#]

    /// One random change as `user` through SQL; false when the database refused it (a rule:
    /// a day the habit is not on, a completion that exists, …), which changes nothing.
    static func apply(_ change: Change, user: UUID, on connection: Connection, admin: Connection,
                      using rng: inout SeededGenerator) throws -> Bool {
        let offset = Int.random(in: -40...3, using: &rng)
        let pick = Int.random(in: 0..<1_000, using: &rng)
        let zone = WeeklyCountsHistoryTests.zones.randomElement(using: &rng)!
        let schedule = schedules.randomElement(using: &rng)!
        var sql: Query = ""
        // complete and skip: the row is picked by a read, then inserted with VALUES (on a Citus
        // coordinator an INSERT … SELECT it cannot push down becomes a COPY, which row-level
        // security refuses).
        var insertPicked: (table: String, column: String, pick: Query)? = nil
        // The user by name, not auth.uid(): a Citus coordinator refuses a statement that calls
        // it where its CASE or COALESCE ends up in an UPDATE (docs/scaling.md, "Running on
        // Citus"). The claims still decide what row-level security lets through.
        let me = "'\(user.uuidString.lowercased())'::uuid"
        // The user's habit number `pick` modulo their habits (the SQL picks it).
        let habit = "(SELECT id FROM public.habit_templates WHERE user_id = \(me) ORDER BY id OFFSET \(pick) % greatest(1, (SELECT count(*) FROM public.habit_templates WHERE user_id = \(me))) LIMIT 1)"
        let today = "habit.local_date(now(), habit.user_time_zone(\(me), NULL))"
        // A row on a day of the last 40 the rules allow (on, neither done nor skipped), picked by
        // `offset`, so that such writes apply whatever the random history holds.
        func onAnAllowedDay() -> Query {
            """
            SELECT d.template_id, d.day
            FROM habit.habit_days_at(\(unsafeSQL: me), \(unsafeSQL: today) - 40, \(unsafeSQL: today), \(unsafeSQL: today)) d
            WHERE NOT d.done AND NOT d.skipped
            ORDER BY pg_catalog.md5(d.template_id::text || d.day::text || \(offset)::text) LIMIT 1
            """
        }
        switch change {
        case .complete:
            // Mostly a day the rules allow (as skips below), sometimes any day near today.
            insertPicked = ("habit_completions", "completed_date",
                            offset % 3 == 0 ? "SELECT \(unsafeSQL: habit), \(unsafeSQL: today) + \(offset)::integer" : onAnAllowedDay())
        case .uncomplete:
            sql = "DELETE FROM public.habit_completions WHERE user_id = \(unsafeSQL: me) AND id = (SELECT id FROM public.habit_completions WHERE user_id = \(unsafeSQL: me) ORDER BY id OFFSET \(pick) % greatest(1, (SELECT count(*) FROM public.habit_completions WHERE user_id = \(unsafeSQL: me))) LIMIT 1)"
        case .moveCompletion:
            sql = "UPDATE public.habit_completions SET completed_date = completed_date + \(Int.random(in: -8...8, using: &rng))::integer WHERE user_id = \(unsafeSQL: me) AND id = (SELECT id FROM public.habit_completions WHERE user_id = \(unsafeSQL: me) ORDER BY id OFFSET \(pick) % greatest(1, (SELECT count(*) FROM public.habit_completions WHERE user_id = \(unsafeSQL: me))) LIMIT 1)"
        case .skip:
            insertPicked = ("habit_skips", "skipped_date", onAnAllowedDay())
        case .unskip:
            sql = "DELETE FROM public.habit_skips WHERE user_id = \(unsafeSQL: me) AND (template_id, skipped_date) = (SELECT template_id, skipped_date FROM public.habit_skips WHERE user_id = \(unsafeSQL: me) ORDER BY 1, 2 OFFSET \(pick) % greatest(1, (SELECT count(*) FROM public.habit_skips WHERE user_id = \(unsafeSQL: me))) LIMIT 1)"
        case .schedule:
            sql = "SELECT 1 FROM habit.set_schedule(\(unsafeSQL: habit), \(JSONB(text: schedule)))"
        case .toggleActive:
            // The instant as a value: Citus refuses now() inside the UPDATE's CASE.
            let now = try admin.queryOne("SELECT now()").decode(PostgresTimestamp.self, at: 0)
            sql = "UPDATE public.habit_templates SET is_active = NOT is_active, deactivated_at = CASE WHEN is_active THEN \(now)::timestamptz END, activated_at = CASE WHEN is_active THEN activated_at ELSE \(now)::timestamptz END WHERE user_id = \(unsafeSQL: me) AND id = \(unsafeSQL: habit)"
        case .zone:
            sql = "UPDATE public.profiles SET timezone = \(zone) WHERE user_id = \(unsafeSQL: me)"
        case .weekStart:
            sql = "UPDATE public.profiles SET week_start = CASE WHEN week_start = 'monday' THEN 'sunday' ELSE 'monday' END WHERE user_id = \(unsafeSQL: me)"
        case .addHabit:
            sql = "INSERT INTO public.habit_templates (user_id, name, schedule) VALUES (\(unsafeSQL: me), \("new \(pick)"), \(JSONB(text: schedule)))"
        case .deleteHabit:
            sql = "DELETE FROM public.habit_templates WHERE user_id = \(unsafeSQL: me) AND id = \(unsafeSQL: habit)"
        case .deleteAccount:
            sql = "SELECT count(*) FROM habit.delete_account(\(unsafeSQL: me))"
        case .backfillPeriod:
            // An admin's psql fix of history: a period's start moved a few days (superuser). The
            // new start as a value: Citus refuses timestamptz arithmetic on a column in an UPDATE.
            do {
                guard let period = try admin.query("""
                    SELECT id, started_at - make_interval(days => \(Int.random(in: 1...9, using: &rng))::integer)
                    FROM public.habit_periods WHERE user_id = \(user) ORDER BY started_at LIMIT 1
                    """).first else { return false }
                return try admin.execute("""
                    UPDATE public.habit_periods SET started_at = \(try period.decode(PostgresTimestamp.self, at: 1))
                    WHERE user_id = \(user) AND id = \(try period.decode(UUID.self, at: 0))
                    """) > 0
            } catch is PostgresError { return false }
        }
        do {
            return try asUser(user, on: connection) { connection in
                guard let insertPicked else { return try connection.execute(sql) }
                guard let row = try connection.query(insertPicked.pick).first else { return 0 }
                return try connection.execute("""
                    INSERT INTO public.\(unsafeSQL: insertPicked.table) (user_id, template_id, \(unsafeSQL: insertPicked.column))
                    VALUES (\(user), \(try row.decode(UUID.self, at: 0)), \(try row.decode(CalendarDate.self, at: 1)))
                    """)
            } > 0
        } catch is PostgresError {
            return false
        }
    }

    @Test func incrementalRunsEqualAFullRecompute() throws {
        let environment = ProcessInfo.processInfo.environment
        let rounds = environment["HABIT_INCREMENTAL_ROUNDS"].flatMap(Int.init) ?? 40
        let seed = environment["HABIT_INCREMENTAL_SEED"].flatMap(UInt64.init) ?? 20_20
        try TestDatabase.with { database throws in
            let admin = try database.connect()
            // The comparison's query is prepared once and run every round: a generic plan
            // would not fold its NULL user list (the job forces custom plans, see prelude).
            try admin.execute("SET plan_cache_mode = force_custom_plan")
            // As the job (WeeklyCountsJob.prelude): JIT would compile the comparison's big
            // statement every round, about a second each.
            try admin.execute("SET jit = off")
            let users = try WeeklyCountsHistoryTests.load(admin, users: 14, seed: seed).users
            // Planner statistics, as a live database has: without them the set-based query
            // takes seconds even on a handful of users.
            try admin.execute("ANALYZE")
            let writer = try database.connect()
            let batch = try database.connect(user: "habit_batch")
            let today = try admin.queryOne("SELECT (now() AT TIME ZONE 'UTC')::date").decode(CalendarDate.self, at: 0)
            var monday = WeeklyCountsJob(from: today.adding(days: -50), to: today.adding(days: 14))
            monday.workMemory = "64MB"
            var sunday = monday
            sunday.weekStart = .sunday

            // The first run of each convention computes the range in full.
            for job in [monday, sunday] {
                let first = try job.runIncremental(on: batch)
                #expect(first.fullWeeks >= 9 && first.users == 0, "\(first)")
                #expect(try Self.stored(admin, job) == (try Self.recomputed(admin, job)))
            }

            var rng = SeededGenerator(seed: seed)
            var applied: [Change: Int] = [:]
            var made = 0
            for round in 1...rounds {
                for _ in 0..<Int.random(in: 2...4, using: &rng) {
                    // Every kind once first (so that a short run covers them all, whatever the
                    // date), then at random; account deletions are rarer: each removes a user.
                    var change = made < Change.allCases.count ? Change.allCases[made] : Change.allCases.randomElement(using: &rng)!
                    if made >= Change.allCases.count, change == .deleteAccount, Int.random(in: 0..<10, using: &rng) != 0 { change = .complete }
                    made += 1
                    // A change the rules refuse (a day not on, a duplicate) is tried again on
                    // another user or day, a few times.
                    for _ in 0..<8 {
                        let user = users.randomElement(using: &rng)!
                        if try Self.apply(change, user: user, on: writer, admin: admin, using: &rng) {
                            applied[change, default: 0] += 1
                            break
                        }
                    }
                }
                // Both conventions every other round: marks wait for the convention's next run.
                for job in round % 2 == 0 ? [monday, sunday] : [monday] {
                    _ = try job.runIncremental(on: batch)
                    let stored = try Self.stored(admin, job)
                    let expected = try Self.recomputed(admin, job)
                    #expect(stored == expected, "round \(round), \(job.weekStart), seed \(seed): \(Set(stored).symmetricDifference(expected).sorted())")
                    if stored != expected { return }
                }
            }
            let storedAtEnd = try Self.stored(admin, monday).count
            let usersLeft = try admin.queryOne("SELECT count(DISTINCT user_id) FROM public.habit_templates").decode(Int.self, at: 0)
            print("incremental property: \(rounds) rounds, seed \(seed), changes applied \(applied.values.reduce(0, +)) "
                  + "(\(Change.allCases.map { "\($0.rawValue) \(applied[$0, default: 0])" }.joined(separator: ", "))); "
                  + "at the end \(usersLeft) users with habits, \(storedAtEnd) stored Monday rows")
            if rounds >= 5 {
                let missing = Change.allCases.filter { applied[$0, default: 0] == 0 }
                #expect(missing.isEmpty, "kinds of change never applied: \(missing)")
            }
        }
    }

    /// Nothing changed: the run claims nothing and writes nothing. A change of a profile's
    /// other columns (not zone or week) marks nothing either.
    @Test func aRunAfterNoChangeWritesNothing() throws {
        try TestDatabase.with { database throws in
            let admin = try database.connect()
            let users = try WeeklyCountsHistoryTests.load(admin, users: 6, seed: 7).users
            try admin.execute("ANALYZE")
            let batch = try database.connect(user: "habit_batch")
            let today = try admin.queryOne("SELECT (now() AT TIME ZONE 'UTC')::date").decode(CalendarDate.self, at: 0)
            let job = WeeklyCountsJob(from: today.adding(days: -50), to: today.adding(days: 14))
            #expect(try job.runIncremental(on: batch).fullWeeks > 0)
            #expect(try job.runIncremental(on: batch) == .init(store: .init(written: 0, deleted: 0), users: 0, fullWeeks: 0))
            try admin.execute("UPDATE public.profiles SET updated_at = now() WHERE user_id = \(users[0])")
            #expect(try admin.queryOne("SELECT count(*) FROM habit.weekly_counts_dirty").decode(Int.self, at: 0) == 0)
            // One completion: its user only.
            try admin.execute("SET habit.backfill = 'on'")
            try admin.execute("""
                INSERT INTO public.habit_completions (user_id, template_id, completed_date)
                SELECT t.user_id, t.id, \(today.adding(days: -3)) FROM public.habit_templates t WHERE t.user_id = \(users[1])
                  AND NOT EXISTS (SELECT 1 FROM public.habit_skips k
                                  WHERE k.user_id = t.user_id AND k.template_id = t.id AND k.skipped_date = \(today.adding(days: -3)))
                LIMIT 1
                ON CONFLICT DO NOTHING
                """)
            let after = try job.runIncremental(on: batch)
            #expect(after.users <= 1 && after.fullWeeks == 0, "\(after)")
            #expect(try Self.stored(admin, job) == (try Self.recomputed(admin, job)))
            #expect(try job.runIncremental(on: batch) == .init(store: .init(written: 0, deleted: 0), users: 0, fullWeeks: 0))
        }
    }

    /// A range that moves on (a rolling window) computes its new weeks in full and keeps
    /// the rest incrementally.
    @Test func aMovedRangeComputesItsNewWeeks() throws {
        try TestDatabase.with { database throws in
            let admin = try database.connect()
            _ = try WeeklyCountsHistoryTests.load(admin, users: 5, seed: 11)
            try admin.execute("ANALYZE")
            let batch = try database.connect(user: "habit_batch")
            let today = try admin.queryOne("SELECT (now() AT TIME ZONE 'UTC')::date").decode(CalendarDate.self, at: 0)
            var job = WeeklyCountsJob(from: today.adding(days: -50), to: today.adding(days: -10))
            _ = try job.runIncremental(on: batch)
            job.to = today.adding(days: 14)
            let moved = try job.runIncremental(on: batch)
            #expect(moved.fullWeeks >= 3 && moved.fullWeeks <= 5, "\(moved)")
            #expect(try Self.stored(admin, job) == (try Self.recomputed(admin, job)))
        }
    }
}
