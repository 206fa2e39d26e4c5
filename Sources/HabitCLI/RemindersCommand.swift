import ArgumentParser
import Foundation
import HabitStore
import HabitWorker
import PostgresClient

/// `habit reminders due`: the push sender's window from the command line (docs/admin.md,
/// "Reminders"), one JSON object per line, as `reminders.due` answers them.
struct RemindersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reminders",
        abstract: "The reminders a push sender sends.",
        subcommands: [Due.self]
    )

    struct Due: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The reminder firings in [--from, --to) of real time, as JSON lines, earliest first.",
            discussion: """
                The same firings reminders.due answers (docs/protocol.md, "Reminders"): each line is \
                {"firing_id", "user_id", "template_id", "reminder_id", "fire_at", "local_date", \
                "local_time", "habit_day", "name"}. Leaves out firings acknowledged or under a lease, \
                and days the habit is skipped, not due, not on, archived or already done now. Reads; \
                claims nothing. Runs as the connecting role, which needs EXECUTE on \
                habit.reminders_due (habit_worker, service_role, or the owner); without \
                --database-url or DATABASE_URL the embedded server's worker role connects.

                Exit status: 0 listed (possibly nothing); 64 bad arguments; 3 database unreachable or lost; \
                1 any other error. With more firings than --limit, the first --limit are printed \
                and a note goes to stderr.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Option(help: ArgumentHelp("The window's start, an RFC 3339 instant (included).", valueName: "instant"))
        var from: String

        @Option(help: ArgumentHelp("The window's end, an RFC 3339 instant (excluded): after --from, at most 24 hours after it.", valueName: "instant"))
        var to: String

        @Option(help: ArgumentHelp("Most firings to print, 1–10000.", valueName: "n"))
        var limit: Int = 10_000

        func validate() throws {
            guard let start = PostgresTimestamp(rfc3339: from) else { throw ValidationError("--from must be an RFC 3339 instant with an offset, e.g. 2026-03-08T07:00:00Z") }
            guard let end = PostgresTimestamp(rfc3339: to) else { throw ValidationError("--to must be an RFC 3339 instant with an offset, e.g. 2026-03-08T07:01:00Z") }
            guard start < end else { throw ValidationError("--to must be after --from") }
            guard end.microsecondsSincePostgresEpoch - start.microsecondsSincePostgresEpoch <= 86_400_000_000 else {
                throw ValidationError("--from to --to is more than 24 hours; ask window by window")
            }
            guard (1...10_000).contains(limit) else { throw ValidationError("--limit must be 1 to 10000") }
        }

        func run() throws {
            try reportingFailures {
                let connection = try database.connect(try database.connectionURL(embedded: \.workerConnectionString, migrating: true),
                                                      applicationName: "habit-reminders-due")
                defer { connection.close() }
                let (firings, more) = try ReminderSender(connection: connection)
                    .due(from: PostgresTimestamp(rfc3339: from)!, to: PostgresTimestamp(rfc3339: to)!, limit: limit)
                var out = ""
                for firing in firings { out += FiringLine(firing).text + "\n" }
                FileHandle.standardOutput.write(Data(out.utf8))
                if more {
                    FileHandle.standardError.write(Data("habit: more than \(limit) firings in the window; the first \(limit) were printed\n".utf8))
                }
            }
        }
    }
}
