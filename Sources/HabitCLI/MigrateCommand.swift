import ArgumentParser
import Foundation
import HabitStore
import PostgresClient

struct MigrateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply sql/: the pending versioned migrations, then the changed current-state files.",
        discussion: """
            Each file runs in a transaction and is recorded with its checksum: sql/migrations/NNNN_name.sql \
            once each, in version order; then the current-state files (functions, views, triggers, policies, \
            grants, in that order) that changed since they were applied, all of them after a versioned \
            migration. Re-running is a no-op. Refuses to run when an applied versioned migration was edited, \
            when the database has a migration this build does not know, or when it predates the baseline. \
            Two migrators never collide (advisory lock). Without --database-url/DATABASE_URL, migrates the \
            embedded server (starting it if needed). sql/ is --migrations-dir, else HABIT_MIGRATIONS_DIR, \
            else a sql/ folder beside the binary or in the working directory, else the copy of sql/ built \
            into the binary: it works from any directory.
            """
    )

    @OptionGroup var database: DatabaseOptions

    @Flag(help: "Only list the files of sql/ (migrations/NNNN_name.sql, then the current-state files) as applied or pending.")
    var status = false

    func run() throws {
        try reportingFailures {
            let location = database.migrationLocation()
            let migrator = try Migrator(location)
            let connection = try database.connect(try database.connectionURL(embedded: \.adminConnectionString), applicationName: "habit-migrate")
            defer { connection.close() }
            if status {
                for file in try migrator.status(connection) {
                    print("\(file.pending ? "pending" : "applied") \(file.path)")
                }
                return
            }
            let report = try migrator.migrate(connection)
            FileHandle.standardError.write(Data("""
                habit: applied \(report.applied.count) migration(s) and \(report.appliedFiles.count) current-state file(s) \
                from \(location); schema version \(report.schemaVersion)

                """.utf8))
        }
    }
}
