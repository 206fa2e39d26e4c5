import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// `habit account delete` as a spawned command against a real database.
@Suite("deployment: habit account delete")
struct AccountCommandTests {
    static func habit(_ arguments: [String]) throws -> WorkerProcess.CommandResult {
        try WorkerProcess.run(try WorkerProcess.binaryPath(), arguments, environment: WorkerProcess.childEnvironment())
    }

    @Test("needs --yes and a UUID (exit 64, nothing deleted); a role outside habit_admin exits 1; an admin's run prints the counts, a second run zeros")
    func deleteCommand() throws {
        try TestDatabase.with { database in
            let admin = try database.connect()
            let user = UUID(), other = UUID()
            for owner in [user, other] {
                try admin.execute("INSERT INTO habit_templates (user_id, name) VALUES (\(owner), 'Walk')")
                try admin.execute("INSERT INTO tasks (user_id, title, position) VALUES (\(owner), 'Milk', 1)")
            }
            func rows(_ owner: UUID) throws -> Int {
                try admin.queryOne("SELECT (SELECT count(*) FROM habit_templates WHERE user_id = \(owner)) + (SELECT count(*) FROM tasks WHERE user_id = \(owner))")
                    .decode(Int.self, at: 0)
            }
            let base = ["account", "delete", "--database-url", database.url]

            let unconfirmed = try Self.habit(base + ["--user", user.lowercaseString])
            #expect(unconfirmed.status == 64 && unconfirmed.stderr.contains("--yes"), "\(unconfirmed)")
            let notUUID = try Self.habit(base + ["--user", "someone", "--yes"])
            #expect(notUUID.status == 64 && notUUID.stderr.contains("--user must be a UUID"), "\(notUUID)")
            let batch = try Self.habit(["account", "delete", "--database-url", try database.url(overriding: ["user": "habit_batch"]),
                                        "--user", user.lowercaseString, "--yes"])
            #expect(batch.status == 1 && batch.stderr.contains("42501") && batch.stdout.isEmpty, "\(batch)")
            #expect(try rows(user) == 2)

            let deleted = try Self.habit(base + ["--user", user.lowercaseString, "--yes"])
            #expect(deleted.status == 0, "\(deleted)")
            let lines = deleted.stdout.split(separator: "\n").map(String.init)
            #expect(lines.count == 13 && lines.first == "public.profiles 0" && lines.contains("public.habit_templates 1")
                    && lines.contains("public.tasks 1") && lines.last?.hasPrefix("total ") == true, "\(deleted.stdout)")
            #expect(try rows(user) == 0 && rows(other) == 2)

            let again = try Self.habit(base + ["--user", user.uuidString.uppercased(), "--yes"])
            #expect(again.status == 0 && again.stdout.split(separator: "\n").allSatisfy { $0.hasSuffix(" 0") }, "\(again.stdout)")
        }
    }
}
