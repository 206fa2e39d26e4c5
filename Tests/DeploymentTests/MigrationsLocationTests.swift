import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Issue 13 #5: migrations are found in --migrations-dir, HABIT_MIGRATIONS_DIR, `sql/` beside
/// the executable or `sql/` in the working directory (each a `sql/` holding
/// `migrations/NNNN_*.sql`), never in a parent directory: on a fresh embedded cluster they run
/// as superuser, so a planted `../../sql/migrations/0001_x.sql` must not run. Issue 30 #2:
/// elsewhere, the copy of sql/ built into the binary, so `habit migrate` works from any
/// directory.
@Suite("deployment: where migrations are found")
struct MigrationsLocationTests {
    @Test("without a sql/ folder, habit migrate applies the one built into it; one above the working directory is never used; one in the working directory is")
    func parentDirectoriesAreNotSearched() throws {
        try TestDatabase.with(migrated: false) { database in
            let root = "/tmp/habit-planted-\(UUID().uuidString.prefix(8))"
            let workingDirectory = root + "/a/b"
            try FileManager.default.createDirectory(atPath: workingDirectory, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: root + "/sql/migrations", withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: root) }
            try "CREATE TABLE public.planted_marker ();\n".write(toFile: root + "/sql/migrations/0001_planted.sql", atomically: true, encoding: .utf8)
            try "CREATE TABLE public.planted_function_marker ();\n".write(toFile: root + "/sql/grants.sql", atomically: true, encoding: .utf8)
            let binary = try WorkerProcess.binaryPath()
            func migrate(from directory: String, _ arguments: [String] = []) throws -> WorkerProcess.CommandResult {
                // posix_spawn cannot change directory from Swift: coreutils' env does, then execs habit.
                try WorkerProcess.run("/usr/bin/env", ["--chdir=\(directory)", binary, "migrate", "--database-url", database.url] + arguments,
                                      environment: WorkerProcess.childEnvironment())
            }
            func plantedRan() throws -> Bool {
                let connection = try database.connect()
                defer { connection.close() }
                return try connection.queryOne("""
                    SELECT to_regclass('public.planted_marker') IS NOT NULL OR to_regclass('public.planted_function_marker') IS NOT NULL
                    """).decode(Bool.self, at: 0)
            }

            // From the folder holding sql/, that sql/ is the one (listed, not run).
            let inside = try migrate(from: root, ["--status"])
            #expect(inside.status == 0, "\(inside.stderr)")
            #expect(inside.stdout == "pending migrations/0001_planted.sql\npending grants.sql", "\(inside.stdout)")
            #expect(try !plantedRan())

            // Below it, none is found: the binary's own copy migrates the empty database.
            let sql = try Migrator(directory: TestDatabase.migrationsDirectory)
            let below = try migrate(from: workingDirectory)
            #expect(below.status == 0, "\(below.stderr)")
            #expect(below.stderr.contains("""
                habit: applied \(sql.migrations.count) migration(s) and \(sql.currentStateFiles.count) current-state file(s) \
                from the sql/ built into this binary; schema version \(sql.migrations.last!.version)
                """), "\(below.stderr)")
            #expect(!below.stderr.contains(root + "/sql"), "searched a parent directory: \(below.stderr)")
            #expect(try !plantedRan())
            // The checksums are the files': migrating from them changes nothing.
            let connection = try database.connect()
            defer { connection.close() }
            let report = try sql.migrate(connection)
            #expect(report.applied.isEmpty && report.appliedFiles.isEmpty, "\(report)")

            // An override that holds no migrations fails; it never falls back to the copy.
            let wrong = try migrate(from: workingDirectory, ["--migrations-dir", root + "/nowhere"])
            #expect(wrong.status != 0, "\(wrong.stderr)")
            #expect(wrong.stderr.contains("\(root)/nowhere holds no migrations/NNNN_name.sql"), "\(wrong.stderr)")
            #expect(try !plantedRan())
        }
    }
}
