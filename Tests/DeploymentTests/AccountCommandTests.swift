import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// `habit account delete` and `habit account import --from loop` as spawned commands against a
/// real database.
@Suite("deployment: habit account delete and import --from loop")
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
            #expect(lines.count == 19 && lines.first == "public.profiles 0" && lines.contains("public.habit_templates 1")
                    && lines.contains("public.tasks 1") && lines.last?.hasPrefix("total ") == true, "\(deleted.stdout)")
            #expect(try rows(user) == 0 && rows(other) == 2)

            let again = try Self.habit(base + ["--user", user.uuidString.uppercased(), "--yes"])
            #expect(again.status == 0 && again.stdout.split(separator: "\n").allSatisfy { $0.hasSuffix(" 0") }, "\(again.stdout)")
        }
    }

    @Test("import --from loop FILE.zip (deflated by python3's zipfile, as a phone's zip would be): the habit, its completion and skip, the report; again: unchanged; not a zip: exit 1, nothing written")
    func importFromLoopZip() throws {
        try TestDatabase.with { database in
            let admin = try database.connect()
            let user = UUID()
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("loop-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let zip = directory.appendingPathComponent("Loop Habits CSV 2020-01-03.zip").path
            let files = [
                "Habits.csv": "Position,Name,Type,Question,Description,FrequencyNumerator,FrequencyDenominator,Color,Unit,Target Type,Target Value,Archived?\n"
                    + "001,Read,YES_NO,,,1,1,#1976D2,,,,false\n002,Weight,NUMERICAL,,,1,30,#D32F2F,kg,AT_LEAST,70,false\n",
                "001 Read/Checkmarks.csv": "Date,Value,Notes\n2020-01-02,YES_MANUAL,\n2020-01-01,SKIP,\n",
            ]
            let json = String(decoding: try JSONSerialization.data(withJSONObject: files), as: UTF8.self)
            let zipped = try WorkerProcess.run("/usr/bin/python3", ["-c", """
                import json, sys, zipfile
                with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
                    for name, text in json.loads(sys.argv[2]).items(): z.writestr(name, text)
                """, zip, json], environment: WorkerProcess.childEnvironment())
            try #require(zipped.status == 0, "\(zipped)")

            let base = ["account", "import", "--database-url", database.url, "--user", user.lowercaseString, "--from", "loop"]
            let first = try Self.habit(base + [zip])
            #expect(first.status == 0 && first.stdout.contains(#""numeric_habits_not_imported":["Weight"]"#), "\(first)")
            let rows = try admin.queryOne("""
                SELECT (SELECT count(*) FROM habit_templates WHERE user_id = \(user))::int, (SELECT count(*) FROM habit_completions WHERE user_id = \(user))::int,
                       (SELECT count(*) FROM habit_skips WHERE user_id = \(user))::int
                """)
            #expect(try [rows.decode(Int.self, at: 0), rows.decode(Int.self, at: 1), rows.decode(Int.self, at: 2)] == [1, 1, 1])
            let again = try Self.habit(base + [zip])
            #expect(again.status == 0 && again.stdout.contains(#""habits":{"inserted":0,"updated":0,"deleted":0,"unchanged":1}"#), "\(again)")

            let notZip = directory.appendingPathComponent("Habits.csv").path
            try Data(files["Habits.csv"]!.utf8).write(to: URL(fileURLWithPath: notZip))
            let refused = try Self.habit(["account", "import", "--database-url", database.url, "--user", UUID().lowercaseString, "--from", "loop", notZip])
            #expect(refused.status == 1 && refused.stderr.contains("zip_"), "\(refused)")
            #expect(try admin.queryOne("SELECT count(*)::int FROM habit_templates").decode(Int.self, at: 0) == 1)
        }
    }
}
