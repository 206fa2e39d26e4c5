import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Issue 29: day.get's statement for a user with 50 habits, run as the worker runs it (the
/// user's settings statement first, in one transaction), is not JIT-compiled — a fresh worker's
/// first day.get calls used to spend 60–260 ms compiling a plan whose cost passed
/// jit_above_cost — and reads no series of days (habit.day_habits: only the periods that
/// contain the date). The control: the same statement with JIT forced on does show JIT, so the
/// test sees it when it is there.
@Suite struct DayPlanTests {
    static let user = UUID(uuidString: "00000000-0000-0000-0000-0000000000e1")!

    /// EXPLAIN ANALYZE of `statement` in a transaction of the user's, after `settings`.
    static func plan(_ scope: UserScope, _ statement: Query, settings: [Query] = []) throws -> String {
        try scope.transaction(as: user) { connection in
            for setting in settings { try connection.execute(setting) }
            return try connection.query(Query(unsafeSQL: "EXPLAIN (ANALYZE, TIMING OFF) " + statement.sql, bindings: statement.bindings))
                .map { try $0.decode(String.self, at: 0) }.joined(separator: "\n")
        }
    }

    @Test(arguments: [false, true])
    func dayGetForFiftyHabitsIsNotCompiled(includeStreaks: Bool) throws {
        try TestDatabase.with { database throws in
            let admin = try database.connect()
            try admin.executeScript(unsafeSQL: """
                INSERT INTO public.profiles (user_id, timezone) VALUES ('\(Self.user)', 'Europe/Berlin');
                INSERT INTO public.habit_templates (user_id, name, activated_at, sort_order, schedule)
                SELECT '\(Self.user)', 'H' || n, now() - interval '3 years', n,
                       CASE n % 3 WHEN 0 THEN '{"type":"daily"}'::jsonb WHEN 1 THEN '{"type":"weekdays","days":[1,3,5]}'
                                  ELSE '{"type":"times_per_week","times":3}' END
                FROM generate_series(1, 50) n;
                SET habit.backfill = 'on';
                INSERT INTO public.habit_completions (user_id, template_id, completed_date)
                SELECT t.user_id, t.id, habit.local_date(now(), 'Europe/Berlin') - d
                FROM public.habit_templates t, generate_series(0, 60) d WHERE t.user_id = '\(Self.user)' AND (d + t.sort_order) % 4 <> 0;
                RESET habit.backfill;
                ANALYZE;
                """)
            let connection = try database.connect()
            let habits = HabitRepository(connection: connection)
            let day = try admin.queryOne("SELECT habit.local_date(now(), 'Europe/Berlin')").decode(CalendarDate.self, at: 0)
            let statement = try habits.dayStatement(user: Self.user, date: day, includeStreaks: includeStreaks).statement
            let scope = UserScope(connection: connection)
            // The custom plan and the generic one (a worker's prepared statement is planned
            // generically after five runs).
            for settings: [Query] in [[], ["SET LOCAL plan_cache_mode = force_generic_plan"]] {
                let plan = try Self.plan(scope, statement, settings: settings)
                #expect(!plan.contains("JIT:"), "\(plan)")
                #expect(!plan.contains("generate_series"), "\(plan)")
            }
            #expect(try habits.day(user: Self.user, date: day, includeStreaks: includeStreaks).habits.count > 30)
            // The control: with JIT on for every plan, EXPLAIN shows it.
            let forced = try Self.plan(scope, statement, settings: ["SET LOCAL jit = on", "SET LOCAL jit_above_cost = 0"])
            #expect(forced.contains("JIT:"), "\(forced)")
        }
    }

    /// The completions a quota habit's due answer counts (its week, or its block of days) are
    /// read by an index range bounded on both sides, in the generic plan too, run as the user:
    /// before, that plan kept the block's start as a filter and read every completion of the
    /// habit before the day, a cost that grew with the habit's history. Checked on the plan's
    /// completions scans: none removes a week's worth of rows or more by filter.
    /// Loop's score from a checkpoint (sql/0038) reads the habit's events after it, not its
    /// history: counted from the index entries the scans of completions, skips and check-ins return
    /// inside the transaction (pg_stat_get_xact_tuples_returned), as the user (row-level security), with custom
    /// and generic plans. Seen failing while the bound was written coalesce(v_from, …) in the
    /// statement: the generic plan kept it as a filter and read all 300 completions.
    @Test func scoreFromACheckpointReadsTheDaysAfterIt() throws {
        try TestDatabase.with { database throws in
            let admin = try database.connect()
            try admin.executeScript(unsafeSQL: """
                INSERT INTO public.profiles (user_id, timezone) VALUES ('\(Self.user)', 'Europe/Berlin');
                INSERT INTO public.habit_templates (user_id, name, activated_at, sort_order, schedule)
                SELECT '\(Self.user)', 'S' || n, now() - interval '2 years', n,
                       CASE n % 2 WHEN 0 THEN '{"type":"daily"}'::jsonb ELSE '{"type":"weekdays","days":[1,3,5]}' END
                FROM generate_series(1, 2) n;
                SET habit.backfill = 'on';
                INSERT INTO public.habit_completions (user_id, template_id, completed_date)
                SELECT t.user_id, t.id, habit.local_date(now(), 'Europe/Berlin') - d
                FROM public.habit_templates t, generate_series(1, 700) d
                WHERE t.user_id = '\(Self.user)' AND d % 2 = 0 AND habit.due_on(t.schedule, (now() - interval '2 years')::date, habit.local_date(now(), 'Europe/Berlin') - d);
                RESET habit.backfill;
                SELECT habit.score_checkpoints_advance('\(Self.user)');
                ANALYZE;
                """)
            #expect(try admin.queryOne("SELECT count(*) FROM habit.score_checkpoints").decode(Int.self, at: 0) == 2)
            let connection = try database.connect()
            let scope = UserScope(connection: connection)
            for settings: [Query] in [[], ["SET LOCAL plan_cache_mode = force_generic_plan"]] {
                let read = try scope.transaction(as: Self.user) { connection -> Int in
                    for setting in settings { try connection.execute(setting) }
                    func entries() throws -> Int {
                        try connection.queryOne("""
                            SELECT coalesce(sum(pg_catalog.pg_stat_get_xact_tuples_returned(i.indexrelid)), 0)::bigint FROM pg_catalog.pg_index i
                            WHERE i.indrelid IN ('public.habit_completions'::regclass, 'public.habit_skips'::regclass, 'public.habit_checkins'::regclass)
                            """).decode(Int.self, at: 0)
                    }
                    // Warm the function's plans (a generic plan is chosen after the fifth run).
                    for _ in 0..<6 { _ = try connection.query("SELECT habit.habit_scores(\(Self.user))") }
                    let before = try entries()
                    _ = try connection.query("SELECT habit.habit_scores(\(Self.user))")
                    return try entries() - before
                }
                // Two habits, each at most ~15 days after its checkpoint: a few dozen entries at most.
                #expect(read < 40, "\(settings): \(read) index entries read for two scores")
            }
        }
    }

    @Test func quotaCountsReadTheirBlockOnly() throws {
        try TestDatabase.with { database throws in
            let admin = try database.connect()
            try admin.executeScript(unsafeSQL: """
                INSERT INTO public.profiles (user_id, timezone) VALUES ('\(Self.user)', 'Europe/Berlin');
                INSERT INTO public.habit_templates (user_id, name, activated_at, sort_order, schedule)
                SELECT '\(Self.user)', 'Q' || n, now() - interval '1 year', n,
                       CASE n % 2 WHEN 0 THEN '{"type":"times_per_week","times":3}'::jsonb ELSE '{"type":"times_in_days","times":2,"days":5}' END
                FROM generate_series(1, 4) n;
                SET habit.backfill = 'on';
                INSERT INTO public.habit_completions (user_id, template_id, completed_date)
                SELECT t.user_id, t.id, habit.local_date(now(), 'Europe/Berlin') - d
                FROM public.habit_templates t, generate_series(1, 300) d WHERE t.user_id = '\(Self.user)' AND d % 3 = 0;
                RESET habit.backfill;
                ANALYZE;
                """)
            let connection = try database.connect()
            let habits = HabitRepository(connection: connection)
            let day = try admin.queryOne("SELECT habit.local_date(now(), 'Europe/Berlin')").decode(CalendarDate.self, at: 0)
            let scope = UserScope(connection: connection)
            for statement in [try habits.dayStatement(user: Self.user, date: day).statement,
                              habits.widgetStatement(user: Self.user, date: day).statement] {
                for settings: [Query] in [[], ["SET LOCAL plan_cache_mode = force_generic_plan"]] {
                    let lines = try Self.plan(scope, statement, settings: settings).split(separator: "\n").map(String.init)
                    var scans = 0
                    for (index, line) in lines.enumerated() where line.contains("on habit_completions") {
                        scans += 1
                        for next in lines[(index + 1)..<min(index + 5, lines.count)] {
                            guard let range = next.range(of: "Rows Removed by Filter: ") else { continue }
                            let removed = Int(next[range.upperBound...].prefix { $0.isNumber }) ?? 0
                            #expect(removed < 7, "\(line)\n\(next)\n\(lines.joined(separator: "\n"))")
                        }
                    }
                    #expect(scans > 0)
                }
            }
        }
    }


    /// day.get's statements and widget.get's run with a generic plan from their first
    /// execution (UserStatement.genericPlan): left to plan_cache_mode = auto, PostgreSQL plans the
    /// first five runs of a prepared statement custom and then keeps doing so whenever the
    /// statistics make the custom plan look cheaper (1.6 ms of planning a request for 0.2 ms of
    /// work, docs/performance.md "Generic plans"). The connection's own pg_prepared_statements
    /// counts the plans, through both ways the worker runs a statement: alone and in a round trip
    /// of several users' (UserScope.queries). The control: a statement not marked gets custom plans.
    @Test func daysReadsArePlannedGenericallyFromTheFirstRequest() throws {
        try TestDatabase.with { database throws in
            let admin = try database.connect()
            try admin.executeScript(unsafeSQL: """
                INSERT INTO public.profiles (user_id, timezone) VALUES ('\(Self.user)', 'Europe/Berlin');
                INSERT INTO public.habit_templates (user_id, name, activated_at, sort_order)
                SELECT '\(Self.user)', 'H' || n, now() - interval '1 year', n FROM generate_series(1, 3) n;
                """)
            let connection = try database.connect()
            let habits = HabitRepository(connection: connection)
            let scope = UserScope(connection: connection)
            let day = try admin.queryOne("SELECT habit.local_date(now(), 'Europe/Berlin')").decode(CalendarDate.self, at: 0)
            for _ in 0..<3 {
                _ = try habits.day(user: Self.user, date: day)
                _ = try habits.day(user: Self.user, date: day, includeStreaks: true)
                _ = try scope.run(habits.widgetStatement(user: Self.user, date: day))
            }
            let marked: [(statement: Query, generic: Bool)] = [
                (try habits.dayStatement(user: Self.user, date: day).statement, try habits.dayStatement(user: Self.user, date: day).genericPlan),
                (habits.widgetStatement(user: Self.user, date: day).statement, habits.widgetStatement(user: Self.user, date: day).genericPlan),
            ]
            for (statement, generic) in marked {
                for result in try scope.queries([(user: Self.user, statement: statement)], genericPlans: [generic]) {
                    _ = try result.get()
                }
            }
            // A statement of the same kind without the mark: PostgreSQL's own choice, custom first.
            for _ in 0..<3 {
                _ = try scope.run(UserStatement(user: Self.user, statement: "SELECT count(*) FROM public.habit_templates WHERE user_id = \(Self.user) AND sort_order > 0") { $0 })
            }
            let plans = try connection.query("""
                SELECT statement, generic_plans, custom_plans FROM pg_catalog.pg_prepared_statements
                WHERE (statement LIKE '%habit.day_habits(%' OR statement LIKE '%sort_order > 0%') AND statement NOT LIKE '%pg_prepared_statements%'
                """).map { (sql: try $0.decode(String.self, at: 0), generic: try $0.decode(Int.self, at: 1), custom: try $0.decode(Int.self, at: 2)) }
            let reads = plans.filter { $0.sql.contains("habit.day_habits(") }
            #expect(reads.count == 3, "day.get plain and with streaks, widget.get: \(plans.map { $0.sql.prefix(60) })")
            for read in reads {
                #expect(read.custom == 0 && read.generic >= 3, "\(read.generic) generic, \(read.custom) custom plans: \(read.sql.prefix(200))")
            }
            let control = plans.filter { $0.sql.contains("sort_order > 0") }
            #expect(control.count == 1 && control.allSatisfy { $0.custom == 3 }, "\(control.map { ($0.generic, $0.custom) })")
        }
    }
}
