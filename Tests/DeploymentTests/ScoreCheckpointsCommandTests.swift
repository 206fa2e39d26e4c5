import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// `habit score-checkpoints` (sql/0038) as a spawned command against a real database: the
/// nightly batch of Loop's score checkpoints.
@Suite("deployment: habit score-checkpoints")
struct ScoreCheckpointsCommandTests {
    static func habit(_ arguments: [String]) throws -> WorkerProcess.CommandResult {
        try WorkerProcess.run(try WorkerProcess.binaryPath(), arguments, environment: WorkerProcess.childEnvironment())
    }

    @Test("writes each habit's checkpoint at today − lag, then nothing; the scores unchanged; --user; a past write forgets; bad arguments 64; a role outside habit_batch 1")
    func batch() throws {
        try TestDatabase.with { database in
            let admin = try database.connect()
            let users = [UUID(), UUID()]
            var habits: [UUID] = []
            for user in users {
                let habit = try admin.queryOne("""
                    INSERT INTO habit_templates (user_id, name, activated_at) VALUES (\(user), 'Walk', now() - interval '90 days') RETURNING id
                    """).decode(UUID.self, at: 0)
                habits.append(habit)
                try admin.execute("""
                    INSERT INTO habit_completions (user_id, template_id, completed_date)
                    SELECT \(user), \(habit), d::date FROM generate_series(habit.user_today(\(user), NULL) - 80, habit.user_today(\(user), NULL) - 1, interval '3 days') d
                    """)
            }
            func scores() throws -> [String] {
                try users.map { user in
                    try admin.queryOne("SELECT score::text FROM habit.habit_scores(\(user))").decode(String.self, at: 0)
                }
            }
            func checkpoints() throws -> Int {
                try admin.queryOne("SELECT count(*) FROM habit.score_checkpoints").decode(Int.self, at: 0)
            }
            let before = try scores()
            let base = ["score-checkpoints", "--database-url", database.url]

            for bad in [["--lag", "0"], ["--every", "400"], ["--user", "someone"]] {
                let refused = try Self.habit(base + bad)
                #expect(refused.status == 64, "\(bad): \(refused)")
            }
            let worker = try Self.habit(["score-checkpoints", "--database-url", try database.url(overriding: ["user": "habit_worker"])])
            #expect(worker.status == 1 && worker.stderr.contains("42501"), "\(worker)")
            #expect(try checkpoints() == 0)

            let one = try Self.habit(base + ["--user", users[0].lowercaseString])
            #expect(one.status == 0 && one.stderr.contains("users=1 written=1"), "\(one)")
            let all = try Self.habit(base)
            #expect(all.status == 0 && all.stderr.contains("users=2 written=1"), "\(all)")
            let again = try Self.habit(base)
            #expect(again.status == 0 && again.stderr.contains("users=2 written=0"), "\(again)")
            let wrong = try admin.queryOne("""
                SELECT count(*) FROM habit.score_checkpoints c
                WHERE c.as_of <> habit.user_today(c.user_id, NULL) - 8 OR c.template_id NOT IN (\(habits[0]), \(habits[1]))
                """).decode(Int.self, at: 0)
            #expect(try checkpoints() == 2 && wrong == 0)
            #expect(try scores() == before)

            // A write of a day after the checkpoint keeps it; one before forgets it, and the score follows.
            try admin.execute("INSERT INTO habit_completions (user_id, template_id, completed_date) VALUES (\(users[0]), \(habits[0]), habit.user_today(\(users[0]), NULL))")
            #expect(try checkpoints() == 2)
            let withToday = try scores()
            try admin.execute("INSERT INTO habit_completions (user_id, template_id, completed_date) VALUES (\(users[1]), \(habits[1]), habit.user_today(\(users[1]), NULL) - 21)")
            #expect(try checkpoints() == 1)
            let rewritten = try Self.habit(base)
            #expect(rewritten.status == 0 && rewritten.stderr.contains("users=2 written=1"), "\(rewritten)")
            let after = try scores()
            try admin.execute("DELETE FROM habit.score_checkpoints")
            #expect(try scores() == after && after[0] == withToday[0] && after[1] != before[1])
        }
    }

    @Test("habit.score_checkpoints_advance: an at-most habit kept every day (a walk landing a step past 1) is stored as 1; REPEATABLE READ refused (25000); a habit a write holds is skipped, without waiting")
    func advanceEdges() throws {
        try TestDatabase.with { database in
            let admin = try database.connect()
            let user = UUID()
            let sugar = try admin.queryOne("""
                INSERT INTO habit_templates (user_id, name, kind, target, target_type, unit, schedule, activated_at)
                VALUES (\(user), 'Sugar', 'measurable', 5, 'at_most', 'g', '{"type":"times_per_week","times":3}', now() - interval '100 days') RETURNING id
                """).decode(UUID.self, at: 0)
            let walk = try admin.queryOne("INSERT INTO habit_templates (user_id, name) VALUES (\(user), 'Walk') RETURNING id").decode(UUID.self, at: 0)
            // Today read first, then written as a value: on a Citus coordinator an INSERT … SELECT
            // into a distributed table cannot call a function that reads one (08006).
            let today = try admin.queryOne("SELECT habit.user_today(\(user), NULL)").decode(CalendarDate.self, at: 0)
            try admin.execute("""
                INSERT INTO habit_completions (user_id, template_id, completed_date)
                SELECT \(user), \(sugar), \(today)::date - d FROM generate_series(0, 99) d
                """)
            // 48 days back the exact walk gives 1.0000000000000002 (the score's CHECK refused it).
            for lag in [46, 48, 49, 51] {
                try admin.execute("DELETE FROM habit.score_checkpoints")
                let written = try admin.queryOne("SELECT habit.score_checkpoints_advance(\(user), \(lag)::integer, 7)").decode(Int.self, at: 0)
                let score = try admin.queryOne("SELECT score FROM habit.score_checkpoints WHERE template_id = \(sugar)").decode(Double.self, at: 0)
                #expect(written == 1 && score == 1.0, "lag \(lag): \(written) written, score \(score)")
            }
            try admin.execute("DELETE FROM habit.score_checkpoints")
            let refused = #expect(throws: PostgresError.self) {
                try admin.withTransaction(prelude: ["SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"]) { connection in
                    _ = try connection.queryOne("SELECT habit.score_checkpoints_advance(\(user), 1, 7)")
                }
            }
            #expect(refused?.sqlState?.rawValue == "25000", "\(String(describing: refused))")

            // A write holding Sugar (its trigger's lock): the batch writes Walk's and leaves Sugar
            // to the next run. A lock_timeout turns waiting, were it to wait, into a failure.
            try admin.execute("UPDATE habit_templates SET activated_at = now() - interval '30 days' WHERE id = \(walk)")
            let writer = try database.connect()
            try writer.execute("BEGIN")
            try writer.execute("SELECT 1 FROM habit_templates WHERE user_id = \(user) AND id = \(sugar) FOR NO KEY UPDATE")
            let batch = try database.connect()
            try batch.execute("SET lock_timeout = '5s'")
            #expect(try batch.queryOne("SELECT habit.score_checkpoints_advance(\(user), 1, 7)").decode(Int.self, at: 0) == 1)
            #expect(try admin.queryOne("SELECT count(*) FROM habit.score_checkpoints WHERE template_id = \(walk)").decode(Int.self, at: 0) == 1)
            try writer.execute("COMMIT")
            #expect(try batch.queryOne("SELECT habit.score_checkpoints_advance(\(user), 1, 7)").decode(Int.self, at: 0) == 1)
            #expect(try admin.queryOne("SELECT count(*) FROM habit.score_checkpoints WHERE user_id = \(user)").decode(Int.self, at: 0) == 2)
        }
    }
}
