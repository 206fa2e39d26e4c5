import Foundation
import HabitBatch
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Runs the job (with `values`, its `--values` run) into a temporary file and returns what it wrote.
func output(of job: WeeklyCountsJob, on connection: Connection, values: Bool = false) throws -> String {
    let path = NSTemporaryDirectory() + "weekly-\(UUID().uuidString)"
    let descriptor = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0o600)
    defer { unlink(path) }
    if values {
        try job.runValues(on: connection, output: OutputSink(descriptor: descriptor))
    } else {
        try job.run(on: connection, output: OutputSink(descriptor: descriptor))
    }
    close(descriptor)
    return try String(contentsOfFile: path, encoding: .utf8)
}

func day(_ text: String) -> CalendarDate { CalendarDate(iso8601: text)! }

/// Hand-made fixtures with known answers. Users are named by fixed UUIDs so the output's
/// order (by user_id) is known.
struct WeeklyFixture {
    static let alice = UUID(uuidString: "00000000-0000-0000-0000-00000000000a")! // Los Angeles
    static let bob = UUID(uuidString: "00000000-0000-0000-0000-00000000000b")!   // Auckland
    static let carol = UUID(uuidString: "00000000-0000-0000-0000-00000000000c")! // profile, no habits

    /// alice (America/Los_Angeles):
    ///   run  — activated 2020-12-30 20:00 PST (Wed 30 Dec local; already Thu 31 in UTC)
    ///   read — activated 2020-12-01, deactivated 2021-01-01 10:00 PST (Fri 1 Jan local)
    ///   completions: run 30 Dec, 31 Dec, 2 Jan; read 29 Dec, 31 Dec
    /// bob (Pacific/Auckland):
    ///   walk — activated 2021-01-03 00:30 NZDT = 2021-01-02 11:30Z (Sun 3 Jan local, Sat 2 Jan UTC)
    ///   completions: 3 Jan, 4 Jan
    /// carol: a profile in Europe/Paris, no habits.
    static func load(_ connection: Connection) throws {
        // Days in the past: since issue 16 a closed period is on only on past days, so the
        // answers would change with the clock if the fixture were in the future. Every
        // completion is on a day its habit is on (the completion trigger accepts them).
        try connection.executeScript(unsafeSQL: """
            INSERT INTO profiles (user_id, timezone) VALUES
                ('\(alice)', 'America/Los_Angeles'), ('\(bob)', 'Pacific/Auckland'), ('\(carol)', 'Europe/Paris');
            INSERT INTO habit_templates (id, user_id, name, activated_at, is_active, deactivated_at) VALUES
                ('10000000-0000-0000-0000-000000000001', '\(alice)', 'run', '2020-12-30 20:00-08', true, NULL),
                ('10000000-0000-0000-0000-000000000002', '\(alice)', 'read', '2020-12-01 12:00-08', false, '2021-01-01 10:00-08'),
                ('20000000-0000-0000-0000-000000000001', '\(bob)', 'walk', '2021-01-02 11:30Z', true, NULL);
            INSERT INTO habit_completions (user_id, template_id, completed_date) VALUES
                ('\(alice)', '10000000-0000-0000-0000-000000000001', '2020-12-30'),
                ('\(alice)', '10000000-0000-0000-0000-000000000001', '2020-12-31'),
                ('\(alice)', '10000000-0000-0000-0000-000000000001', '2021-01-02'),
                ('\(alice)', '10000000-0000-0000-0000-000000000002', '2020-12-29'),
                ('\(alice)', '10000000-0000-0000-0000-000000000002', '2020-12-31'),
                ('\(bob)', '20000000-0000-0000-0000-000000000001', '2021-01-03'),
                ('\(bob)', '20000000-0000-0000-0000-000000000001', '2021-01-04');
            """)
    }
}

@Suite struct WeeklyCountsTests {
    /// Monday weeks across the year end: 2020-12-28 opens ISO week 53 of 2020.
    @Test func mondayWeeksAcrossYearEnd() throws {
        try TestDatabase.with { database throws in
            let admin = try database.connect()
            try WeeklyFixture.load(admin)
            let job = WeeklyCountsJob(from: day("2020-12-30"), to: day("2021-01-05"))
            let csv = try output(of: job, on: try database.connect(user: "habit_batch"))
            #expect(csv == """
                user_id,week_start,completions,days_with_completion,active_habit_days,due_habit_days,skipped_habit_days,completion_rate
                00000000-0000-0000-0000-00000000000a,2020-12-28,5,4,10,10,0,0.5000
                00000000-0000-0000-0000-00000000000a,2021-01-04,0,0,7,7,0,0.0000
                00000000-0000-0000-0000-00000000000b,2020-12-28,1,1,1,1,0,1.0000
                00000000-0000-0000-0000-00000000000b,2021-01-04,1,1,7,7,0,0.1429
                00000000-0000-0000-0000-00000000000c,2020-12-28,0,0,0,0,0,
                00000000-0000-0000-0000-00000000000c,2021-01-04,0,0,0,0,0,

                """)
            // alice, week of 28 Dec: read is active Mon 28 … Fri 1 Jan (5 days: the local
            // deactivation day counts), run Wed 30 … Sun 3 (5 days from its local activation
            // day; in UTC it would start on Thu 31) → 10 habit-days, 5 completions on 4 days.
            // bob's walk starts at 00:30 on Sunday 3 Jan in Auckland, still Saturday 2 Jan in
            // UTC: one habit-day in the first week, not two.
        }
    }

    @Test func sundayWeeks() throws {
        try TestDatabase.with { database throws in
            let admin = try database.connect()
            try WeeklyFixture.load(admin)
            var job = WeeklyCountsJob(from: day("2021-01-03"), to: day("2021-01-03"))
            job.weekStart = .sunday
            job.user = WeeklyFixture.bob
            let csv = try output(of: job, on: try database.connect(user: "habit_batch"))
            // Sunday 3 Jan starts its own week; bob's walk is active all 7 days from Sunday.
            #expect(csv == """
                user_id,week_start,completions,days_with_completion,active_habit_days,due_habit_days,skipped_habit_days,completion_rate
                00000000-0000-0000-0000-00000000000b,2021-01-03,2,2,7,7,0,0.2857

                """)
        }
    }

    @Test func jsonAndTableFormatsCarryTheSameRows() throws {
        try TestDatabase.with { database throws in
            try WeeklyFixture.load(try database.connect())
            var job = WeeklyCountsJob(from: day("2020-12-28"), to: day("2021-01-03"))
            job.user = WeeklyFixture.alice
            job.format = .json
            let json = try output(of: job, on: try database.connect(user: "habit_batch"))
            let lines = json.split(separator: "\n")
            #expect(lines.count == 1)
            let object = try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any]
            #expect(object?["user_id"] as? String == "00000000-0000-0000-0000-00000000000a")
            #expect(object?["week_start"] as? String == "2020-12-28")
            #expect(object?["completions"] as? Int == 5)
            #expect(object?["active_habit_days"] as? Int == 10)
            #expect(object?["due_habit_days"] as? Int == 10)
            #expect(object?["skipped_habit_days"] as? Int == 0)
            #expect((object?["completion_rate"] as? Double).map { abs($0 - 0.5) < 1e-9 } == true)
            job.format = .table
            let table = try output(of: job, on: try database.connect(user: "habit_batch"))
            #expect(table.split(separator: "\n").count == 3)
            #expect(table.contains("00000000-0000-0000-0000-00000000000a | 2020-12-28 |           5 |"))
            #expect(table.split(separator: "\n").first.map { $0.contains("due_habit_days") && $0.contains("skipped_habit_days") } == true)
            #expect(table.split(separator: "\n").last?.hasSuffix("|             10 |                  0 |          0.5000") == true,
                    "\(table)")
        }
    }

    /// dave (UTC, weeks starting on Sunday), all three habits on since December 2020 except N:
    ///   T  times_per_week 2; done Sun 3, Mon 4, Thu 7 Jan: his week of Sun 3 meets the target
    ///      on Mon 4, so T is due Sun 3 and Mon 4 only (Thu 7 is done but not due); Sun 10
    ///      opens his next week, due again.
    ///   W  weekdays Mon/Wed/Fri; done Mon 4, Fri 8, Sat 9 (on, not due); skipped Tue 5 (not
    ///      due) and Wed 6 (due).
    ///   N  daily from Wed 6 Jan 12:00Z; backfilled: done Mon 4 and skipped Tue 5, before it
    ///      was on; done Thu 7.
    /// SET LOCAL in an explicit transaction rather than set_config(…, true): on a Citus
    /// coordinator only the former reaches the workers, where the tables' triggers run.
    static func loadDave(_ connection: Connection) throws {
        try connection.withTransaction(prelude: ["SET LOCAL habit.backfill = 'on'"]) { connection in try connection.executeScript(unsafeSQL: """
            INSERT INTO profiles (user_id, timezone, week_start) VALUES ('\(dave)', 'UTC', 'sunday');
            INSERT INTO habit_templates (id, user_id, name, activated_at, is_active, schedule) VALUES
                ('d0000000-0000-0000-0000-000000000001', '\(dave)', 'T', '2020-12-01 00:00Z', true, '{"type":"times_per_week","times":2}'),
                ('d0000000-0000-0000-0000-000000000002', '\(dave)', 'W', '2020-12-01 00:00Z', true, '{"type":"weekdays","days":[1,3,5]}'),
                ('d0000000-0000-0000-0000-000000000003', '\(dave)', 'N', '2021-01-06 12:00Z', true, '{"type":"daily"}');
            INSERT INTO habit_completions (user_id, template_id, completed_date) VALUES
                ('\(dave)', 'd0000000-0000-0000-0000-000000000001', '2021-01-03'),
                ('\(dave)', 'd0000000-0000-0000-0000-000000000001', '2021-01-04'),
                ('\(dave)', 'd0000000-0000-0000-0000-000000000001', '2021-01-07'),
                ('\(dave)', 'd0000000-0000-0000-0000-000000000002', '2021-01-04'),
                ('\(dave)', 'd0000000-0000-0000-0000-000000000002', '2021-01-08'),
                ('\(dave)', 'd0000000-0000-0000-0000-000000000002', '2021-01-09'),
                ('\(dave)', 'd0000000-0000-0000-0000-000000000003', '2021-01-04'),
                ('\(dave)', 'd0000000-0000-0000-0000-000000000003', '2021-01-07');
            INSERT INTO habit_skips (user_id, template_id, skipped_date) VALUES
                ('\(dave)', 'd0000000-0000-0000-0000-000000000002', '2021-01-05'),
                ('\(dave)', 'd0000000-0000-0000-0000-000000000002', '2021-01-06'),
                ('\(dave)', 'd0000000-0000-0000-0000-000000000003', '2021-01-05');
            """) }
    }
    static let dave = UUID(uuidString: "00000000-0000-0000-0000-00000000000d")!

    /// Due and skipped habit-days and the rate over due days, derived by hand (see loadDave).
    /// T's target is met in dave's Sunday week whatever week the run groups by.
    ///   Monday run, week Mon 4 – Sun 10:
    ///     T on 7, due Mon 4 and Sun 10 = 2, done 2 (Mon 4, Thu 7), done on due days 1
    ///     W on 7, due 3, skipped due 1 (Wed 6; the skip of Tue 5, not due, excuses nothing
    ///       and is not counted), done 3, done on due days 2 (Mon 4, Fri 8)
    ///     N on Wed 6 – Sun 10 = 5, due 5, done 2 (Mon 4 before it was on, Thu 7), on due days 1;
    ///       its skip of Tue 5 is not on a day it is on: not counted
    ///     → 7 completions on 4 days (4, 7, 8, 9), 19 on, 10 due, 1 skipped,
    ///       rate (1 + 2 + 1) / (10 − 1 skipped due) = 0.4444
    ///   Sunday run, week Sun 3 – Sat 9:
    ///     T on 7, due Sun 3 and Mon 4 = 2, done 3, on due days 2
    ///     W as above: on 7, due 3, skipped due 1, done 3, on due days 2
    ///     N on Wed 6 – Sat 9 = 4, due 4, done 2, on due days 1
    ///     → 8 completions on 5 days (3, 4, 7, 8, 9), 18 on, 9 due, 1 skipped,
    ///       rate (2 + 2 + 1) / (9 − 1) = 0.6250
    /// Counting T's target in the run's Monday week instead would make it due Mon 4 – Thu 7.
    @Test func dueSkippedAndTheRateOverDueDays() throws {
        try TestDatabase.with { database throws in
            try Self.loadDave(try database.connect())
            let batch = try database.connect(user: "habit_batch")
            var job = WeeklyCountsJob(from: day("2021-01-04"), to: day("2021-01-10"))
            job.user = Self.dave
            #expect(try output(of: job, on: batch).split(separator: "\n").dropFirst().map(String.init)
                    == ["00000000-0000-0000-0000-00000000000d,2021-01-04,7,4,19,10,1,0.4444"])
            job.weekStart = .sunday
            job.from = day("2021-01-03")
            job.to = day("2021-01-09")
            #expect(try output(of: job, on: batch).split(separator: "\n").dropFirst().map(String.init)
                    == ["00000000-0000-0000-0000-00000000000d,2021-01-03,8,5,18,9,1,0.6250"])
            // The stored row carries the same columns.
            #expect(try job.runStore(on: batch).written == 1)
            let stored = try database.connect().queryOne("""
                SELECT concat_ws(',', completions, days_with_completion, active_habit_days, due_habit_days, skipped_habit_days, completion_rate)
                FROM weekly_completion_counts WHERE user_id = \(Self.dave)
                """).decode(String.self, at: 0)
            #expect(stored == "8,5,18,9,1,0.6250")
        }
    }

    /// The job's CSV equals a brute-force computation: every user × every day of the range,
    /// habit by habit, with local dates computed on their own.
    @Test(arguments: [WeekStart.monday, .sunday])
    func independentComputationAgrees(weekStart: WeekStart) throws {
        try TestDatabase.with { database throws in
            let admin = try database.connect()
            try WeeklyFixture.load(admin)
            // Some generated users on top of the fixture.
            // The generated completions fall on any day, also where a habit is not on: an
            // admin's backfill (sql/0010) lifts the completion trigger's checks.
            try admin.withTransaction(prelude: ["SET LOCAL habit.backfill = 'on'"]) { admin in try admin.executeScript(unsafeSQL: """
                INSERT INTO profiles (user_id, timezone)
                SELECT md5('u' || u)::uuid, (ARRAY['Asia/Tokyo', 'America/New_York', 'UTC'])[1 + u % 3] FROM generate_series(1, 30) u;
                INSERT INTO habit_templates (id, user_id, name, activated_at, is_active, deactivated_at)
                SELECT md5('t' || u || h)::uuid, md5('u' || u)::uuid, 'h' || h,
                       '2020-12-20 00:00Z'::timestamptz + (u * 7 + h * 13) * interval '3 hours',
                       h % 3 <> 0,
                       CASE WHEN h % 3 = 0 THEN '2021-01-02 00:00Z'::timestamptz + (u * 5) * interval '2 hours' END
                FROM generate_series(1, 30) u, generate_series(1, 4) h;
                INSERT INTO habit_completions (user_id, template_id, completed_date)
                SELECT md5('u' || u)::uuid, md5('t' || u || h)::uuid, '2020-12-20'::date + d
                FROM generate_series(1, 30) u, generate_series(1, 4) h, generate_series(0, 30) d
                WHERE (u + h + d) % 3 = 0;
                """) }
            var job = WeeklyCountsJob(from: day("2020-12-22"), to: day("2021-01-13"))
            job.weekStart = weekStart
            let csv = try output(of: job, on: try database.connect(user: "habit_batch"))
            let startDow = Int32(weekStart == .monday ? 1 : 0)
            // One user per statement: a Citus coordinator plans this brute force only when every
            // table is filtered by the same user (one shard).
            let everyone = try admin.query("SELECT user_id FROM habit_templates UNION SELECT user_id FROM profiles ORDER BY 1")
                .map { try $0.decode(UUID.self, at: 0) }
            let expected = try everyone.flatMap { user in try admin.query("""
                WITH days AS (
                    SELECT d::date AS day FROM generate_series(
                        (SELECT '2020-12-22'::date - ((extract(dow FROM '2020-12-22'::date)::int - \(startDow) + 7) % 7)),
                        (SELECT '2021-01-13'::date - ((extract(dow FROM '2021-01-13'::date)::int - \(startDow) + 7) % 7)) + 6,
                        interval '1 day') d
                ),
                users AS (SELECT \(user)::uuid AS user_id),
                per_day AS (
                    SELECT u.user_id, days.day,
                           days.day - ((extract(dow FROM days.day)::int - \(startDow) + 7) % 7) AS week_start,
                           (SELECT count(*) FROM habit_completions c WHERE c.user_id = \(user) AND c.completed_date = days.day) AS done,
                           -- The issue's rule for past days, from the seed columns (one period
                           -- [activated_at, deactivated_at) per habit, none when empty): on D when
                           -- it starts on or before local D and has not ended by D 00:00 local.
                           (SELECT count(*) FROM habit_templates t JOIN profiles p ON p.user_id = t.user_id
                            WHERE t.user_id = \(user) AND p.user_id = \(user)
                              AND (t.deactivated_at IS NULL OR t.deactivated_at > t.activated_at)
                              AND (t.activated_at AT TIME ZONE p.timezone)::date <= days.day
                              AND (t.deactivated_at IS NULL OR t.deactivated_at > (days.day::timestamp AT TIME ZONE p.timezone))) AS active,
                           -- The completions of habits on that day (all daily: on = due), the
                           -- rate's numerator; completions on other days count only in `done`.
                           (SELECT count(*) FROM habit_templates t JOIN profiles p ON p.user_id = t.user_id
                            JOIN habit_completions c ON c.user_id = t.user_id AND c.template_id = t.id AND c.completed_date = days.day
                            WHERE t.user_id = \(user) AND p.user_id = \(user)
                              AND (t.deactivated_at IS NULL OR t.deactivated_at > t.activated_at)
                              AND (t.activated_at AT TIME ZONE p.timezone)::date <= days.day
                              AND (t.deactivated_at IS NULL OR t.deactivated_at > (days.day::timestamp AT TIME ZONE p.timezone))) AS done_on
                    FROM users u, days
                )
                -- Every habit is daily and nothing is skipped: due = active, skipped = 0, and
                -- the rate is the completions of habits on ÷ the habit-days on.
                SELECT user_id::text || ',' || week_start || ',' || sum(done) || ',' || count(*) FILTER (WHERE done > 0) || ','
                       || sum(active) || ',' || sum(active) || ',0,'
                       || coalesce(round(sum(done_on)::numeric / nullif(sum(active), 0), 4)::text, '')
                FROM per_day GROUP BY user_id, week_start ORDER BY user_id, week_start
                """).map { try $0.decode(String.self, at: 0) } }
            let lines = csv.split(separator: "\n").dropFirst().map(String.init)
            #expect(lines.count == expected.count)
            #expect(lines == expected)
        }
    }

    @Test func emptyRangeGivesZeros() throws {
        try TestDatabase.with { database throws in
            try WeeklyFixture.load(try database.connect())
            var job = WeeklyCountsJob(from: day("2020-03-02"), to: day("2020-03-08"))
            job.user = WeeklyFixture.alice
            let csv = try output(of: job, on: try database.connect(user: "habit_batch"))
            #expect(csv.split(separator: "\n").dropFirst().map(String.init) == ["00000000-0000-0000-0000-00000000000a,2020-03-02,0,0,0,0,0,"])
            // A database with no users at all: just the header.
            // DELETE, not TRUNCATE: on Citus 13.2.2 a TRUNCATE of these tables together crashes a
            // worker node at COMMIT PREPARED (docs/scaling.md); the cascades clear the rest.
            try database.connect().execute("DELETE FROM habit_templates")
            try database.connect().execute("DELETE FROM profiles")
            let empty = try output(of: WeeklyCountsJob(from: day("2021-01-01"), to: day("2021-01-31")), on: try database.connect(user: "habit_batch"))
            #expect(empty == "user_id,week_start,completions,days_with_completion,active_habit_days,due_habit_days,skipped_habit_days,completion_rate\n")
        }
    }

    @Test func storeTwiceGivesIdenticalRows() throws {
        try TestDatabase.with { database throws in
            let admin = try database.connect()
            try WeeklyFixture.load(admin)
            let batch = try database.connect(user: "habit_batch")
            let job = WeeklyCountsJob(from: day("2020-12-28"), to: day("2021-01-10"))
            let first = try job.runStore(on: batch)
            #expect(first.written == 6)
            func snapshot() throws -> [String] {
                try admin.query("SELECT t::text FROM weekly_completion_counts t ORDER BY user_id, week_start").map { try $0.decode(String.self, at: 0) }
            }
            let before = try snapshot()
            #expect(try job.runStore(on: batch).written == 0)
            #expect(try snapshot() == before) // computed_at included: unchanged rows are not rewritten
            // A change is picked up by the next run.
            try admin.execute("DELETE FROM habit_completions WHERE user_id = \(WeeklyFixture.bob) AND completed_date = '2021-01-04'")
            #expect(try job.runStore(on: batch).written == 1)
            let stored = try admin.query("SELECT week_start, completions FROM weekly_completion_counts WHERE user_id = \(WeeklyFixture.bob) ORDER BY week_start")
            #expect(try stored.map { try $0.decode(Int.self, at: 1) } == [1, 0])
            // The stored rows equal the printed ones.
            let csv = try output(of: job, on: batch)
            let printed = csv.split(separator: "\n").dropFirst().map(String.init)
            let table = try admin.query("""
                SELECT concat_ws(',', user_id, week_start, completions, days_with_completion, active_habit_days,
                                 due_habit_days, skipped_habit_days, coalesce(completion_rate::text, ''))
                FROM weekly_completion_counts ORDER BY user_id, week_start
                """).map { try $0.decode(String.self, at: 0) }
            #expect(printed == table)
        }
    }

    /// Least privilege: the job's role reads every user's rows but writes only summaries.
    @Test func batchRoleCannotWriteUserTables() throws {
        try TestDatabase.with { database throws in
            try WeeklyFixture.load(try database.connect())
            let batch = try database.connect(user: "habit_batch")
            let error = try #require(throws: PostgresError.self) {
                try batch.execute("DELETE FROM habit_completions")
            }
            #expect(error.sqlState == .insufficientPrivilege)
            let superuser = try batch.queryOne("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").decode(Bool.self, at: 0)
            #expect(!superuser)
        }
    }

    /// The admin schema is for habit_admin; the app's role cannot reach it.
    @Test func adminViewsAreClosedToAuthenticated() throws {
        try TestDatabase.with { database throws in
            let admin = try database.connect()
            try WeeklyFixture.load(admin)
            let scope = UserScope(connection: try database.connect(user: "habit_worker"))
            for sql in ["SELECT * FROM admin.habits_overview", "SELECT * FROM admin.user_activity", "SELECT * FROM admin.daily_totals",
                        "SELECT * FROM admin.inactive_users(1)", "SELECT * FROM admin.user_week('\(WeeklyFixture.alice)')"] {
                let denied = try #require(throws: PostgresError.self) {
                    try scope.transaction(as: WeeklyFixture.alice) { connection in try connection.query(Query(unsafeSQL: sql)) }
                }
                #expect(denied.sqlState == .insufficientPrivilege, "\(sql)")
            }
            try admin.withTransaction(prelude: ["SET LOCAL ROLE habit_admin"]) { connection throws in
                #expect(try connection.queryOne("SELECT count(*) FROM admin.habits_overview").decode(Int.self, at: 0) == 3)
                let week = try connection.query("SELECT day, active_habits, completed, completed_habits FROM admin.user_week(\(WeeklyFixture.alice), '2020-12-31')")
                #expect(week.count == 7)
                #expect(try week[3].decode(CalendarDate.self, at: 0) == day("2020-12-31"))
                #expect(try week[3].decode(Int.self, at: 2) == 2)
                #expect(try week[3].decode(String.self, at: 3) == "read, run")
                let totals = try connection.queryOne("SELECT completions, users FROM admin.daily_totals WHERE completed_date = '2020-12-31'")
                #expect(try totals.decode(Int.self, at: 0) == 2 && totals.decode(Int.self, at: 1) == 1)
                let inactive = try connection.query("SELECT user_id FROM admin.inactive_users(3)").map { try $0.decode(UUID.self, at: 0) }
                #expect(inactive.contains(WeeklyFixture.carol)) // never completed anything
            }
        }
    }
}
