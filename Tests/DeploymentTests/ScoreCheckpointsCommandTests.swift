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
}
