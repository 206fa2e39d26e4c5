import ArgumentParser
import Foundation
import HabitStore
import PostgresClient

struct MigrateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply the sql/ migrations (each in a transaction, recorded with its checksum).",
        discussion: """
            Re-running is a no-op. Refuses to run when an applied migration file was edited, or when the \
            database has a migration this build does not know. Two migrators never collide (advisory lock). \
            Without --database-url/DATABASE_URL, migrates the embedded server (starting it if needed).
            """
    )

    @OptionGroup var database: DatabaseOptions

    @Flag(help: "Only list applied and pending migrations.")
    var status = false

    func run() throws {
        try reportingFailures {
            let migrator = try database.migrator()
            let connection = try database.connect(try database.connectionURL(embedded: \.adminConnectionString), applicationName: "habit-migrate")
            defer { connection.close() }
            if status {
                let pending = Set(try migrator.pending(connection).map(\.version))
                for migration in migrator.migrations {
                    print("\(pending.contains(migration.version) ? "pending" : "applied") \(migration.fileName)")
                }
                return
            }
            let report = try migrator.migrate(connection)
            FileHandle.standardError.write(Data("habit: applied \(report.applied.count) migration(s); schema version \(report.schemaVersion)\n".utf8))
        }
    }
}
