import ArgumentParser
import Foundation
import HabitWorker
import Logging

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
              habit report calendar --user UUID --from 2026-01-01 --to 2026-12-31 --out year.svg
            Every command reads DATABASE_URL (a postgres:// URL or libpq conninfo) unless given --database-url.
            """,
        version: version,
        subcommands: [
            VersionCommand.self,
            MigrateCommand.self,
            ServeCommand.self,
            DatabaseCommand.self,
            WeeklyCountsCommand.self,
            ScoreCheckpointsCommand.self,
            ReportCommand.self,
            RemindersCommand.self,
            AccountCommand.self,
            DevCommand.self,
            HealthCommand.self,
        ]
    )

    /// ArgumentParser's `main`, except that `habit serve`'s usage errors (a malformed flag or
    /// variable, exit 64) are one log line in serve's log format, like everything else it writes
    /// on stderr: a supervisor collecting JSON logs gets a JSON line saying which setting is wrong.
    static func main() {
        // First, before reading any setting: `habit serve`'s SIGTERM/SIGINT handlers, so a
        // signal at any moment from here on drains and exits 0 as documented (it used to be
        // installed in `run()`, after parsing: a SIGTERM in the first ~10 ms killed the worker
        // outright, issue 30). Every command unblocks the two signals, in case its spawner
        // held them back until now (`ShutdownSignals`).
        if CommandLine.arguments.dropFirst().first == "serve" {
            ShutdownSignals.install()
        } else {
            ShutdownSignals.unblock()
        }
        let arguments = Array(CommandLine.arguments.dropFirst())
        do {
            var command = try parseAsRoot(arguments)
            try command.run()
        } catch {
            if arguments.first == "serve", !(error is ExitCode), exitCode(for: error) == .validationFailure,
               ServeCommand.logFormat(arguments: Array(arguments.dropFirst())) == .json {
                let logger = Logger(label: "habit.serve") { StderrLogHandler(label: $0, level: .info, format: .json) }
                logger.error("invalid setting: \(message(for: error))", metadata: ["exit_code": "64"])
                Foundation.exit(ExitCode.validationFailure.rawValue)
            }
            exit(withError: error)
        }
    }
}

struct VersionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "version", abstract: "Print the version.")

    func run() throws {
        print("habit \(Habit.version)")
    }
}

/// `habit health --socket PATH`: asks a worker's health socket (`habit serve --health-socket`)
/// and prints its status line. For probes: exit 0 when the worker answers `ok`, 1 when it
/// answers `degraded` (alive, but its database is unreachable: not ready), 2 when nothing
/// answers (dead). `--live` exits 0 for any answer (a liveness probe must not restart a worker
/// because its database is down).
struct HealthCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "health",
        abstract: "Ask a worker's --health-socket: exit 0 ok, 1 degraded, 2 no answer."
    )

    @Option(help: ArgumentHelp("The worker's --health-socket (env HABIT_HEALTH_SOCKET).", valueName: "path"))
    var socket: String?

    @Flag(help: "Liveness: exit 0 for any answer, degraded included.")
    var live = false

    @Option(help: ArgumentHelp("Seconds to wait for the answer.", valueName: "s"))
    var timeout = 5

    func run() throws {
        guard let path = socket ?? Environment.string("HABIT_HEALTH_SOCKET") else {
            throw ValidationError("--socket or HABIT_HEALTH_SOCKET is required")
        }
        let line: String
        do {
            line = try HealthSocket.query(path, timeoutSeconds: max(1, timeout))
        } catch {
            FileHandle.standardError.write(Data("habit: no answer: \(error)\n".utf8))
            throw ExitCode(2)
        }
        print(line)
        if !live, !line.hasPrefix(#"{"status":"ok""#) { throw ExitCode(1) }
    }
}
