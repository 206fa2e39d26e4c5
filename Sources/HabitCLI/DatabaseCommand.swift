import ArgumentParser
import Foundation
import HabitStore

struct DatabaseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "db",
        abstract: "Manage the embedded PostgreSQL (start, stop, status, url), or distribute a database over Citus.",
        subcommands: [Start.self, Stop.self, Status.self, URLCommand.self, Distribute.self]
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

    struct Distribute: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Distribute the migrated schema over a Citus cluster (run on the coordinator after habit migrate).",
            discussion: """
                Every user-owned table is sharded by user_id and co-located with public.profiles; \
                habit.time_zones, habit.row_limits and habit.weekly_counts_state become reference tables; \
                the roles requests switch to (authenticated, anon, service_role, habit_admin) may log in \
                on the workers, where Citus connects as them, and not on the coordinator; the functions, \
                views, triggers, policies and grants are made again so that Citus propagates them. \
                Idempotent: a second run changes nothing, and finishes a run that stopped. Connect as the \
                schema's owner (the role that ran habit migrate), with CREATEROLE. docs/scaling.md, "Running on Citus".
                """
        )
        @OptionGroup var database: DatabaseOptions

        @Option(help: ArgumentHelp("Shards per distributed table for the tables this run distributes (default: Citus's citus.shard_count, 32).", valueName: "n"))
        var shardCount: Int?

        func run() throws {
            try reportingFailures {
                let migrator = try Migrator(database.migrationLocation())
                let connection = try database.connect(try database.connectionURL(embedded: \.adminConnectionString), applicationName: "habit-distribute")
                defer { connection.close() }
                let report = try Distribution.distribute(connection, migrator: migrator, shardCount: shardCount)
                FileHandle.standardError.write(Data("""
                    habit: distributed \(report.tables.count) table(s) (\(report.alreadyDone.count) already were), \
                    LOGIN on the workers for \(report.roles.joined(separator: ", ")), \
                    \(report.files.count) current-state file(s) applied again

                    """.utf8))
            }
        }
    }
}
