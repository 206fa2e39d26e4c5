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

struct DatabaseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "db",
        abstract: "Manage the embedded PostgreSQL (start, stop, status, url).",
        subcommands: [Start.self, Stop.self, Status.self, URLCommand.self]
    )

    struct Start: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Start the embedded server and apply migrations.")
        @OptionGroup var database: DatabaseOptions
        func run() throws {
            try reportingFailures {
                print(try database.startEmbeddedServer(migrating: true).adminConnectionString)
            }
        }
    }

    struct Stop: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stop the embedded server (fast shutdown: open transactions roll back).")
        @OptionGroup var database: DatabaseOptions
        func run() throws {
            try reportingFailures { try database.embeddedServer().stop() }
        }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Exit 0 and print 'running' when the embedded server runs; else exit 3.")
        @OptionGroup var database: DatabaseOptions
        func run() throws {
            try reportingFailures {
                let running = try database.embeddedServer().isRunning()
                print(running ? "running" : "stopped")
                if !running { throw ExitCode(3) }
            }
        }
    }

    struct URLCommand: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "url", abstract: "Print the embedded server's superuser conninfo (for psql).")
        @OptionGroup var database: DatabaseOptions
        func run() throws {
            try reportingFailures { print(try database.embeddedServer().adminConnectionString) }
        }
    }
}
