import ArgumentParser
import Foundation
import HabitStore

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
