import ArgumentParser
import Foundation

@main
struct Habit: ParsableCommand {
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "habit",
        abstract: "Habit and task service: a JSON-RPC worker over PostgreSQL, plus its admin and batch tools.",
        discussion: """
            Start here:
              habit serve                 serve JSON-RPC on stdin/stdout (embedded database in ./.habit)
              habit migrate               apply sql/ migrations to DATABASE_URL
              habit weekly-counts --from 2026-01-05 --to 2026-03-29
            Every command reads DATABASE_URL (a postgres:// URL or libpq conninfo) unless given --database-url.
            """,
        version: version,
        subcommands: [
            VersionCommand.self,
            MigrateCommand.self,
            ServeCommand.self,
            DatabaseCommand.self,
            WeeklyCountsCommand.self,
            DevCommand.self,
        ]
    )
}

struct VersionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "version", abstract: "Print the version.")

    func run() throws {
        print("habit \(Habit.version)")
    }
}
