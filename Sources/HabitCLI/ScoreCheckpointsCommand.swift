import ArgumentParser
import Foundation
import HabitBatch
import HabitStore
import PostgresClient

/// `habit score-checkpoints`: the nightly batch of Loop's score checkpoints (docs/admin.md,
/// "Score checkpoints").
struct ScoreCheckpointsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "score-checkpoints",
        abstract: "Move Loop's score checkpoints forward (nightly), so score reads fold days, not years.",
        discussion: """
            For every user with a habit (or --user), each habit's checkpoint — its exact score at \
            the end of a past day, from which habits.stats and widget.get fold only the days after \
            it — is put at --lag days before the user's today when it is missing, no longer matches \
            the habit (its schedule, kind, target, or first day in the user's zone and day start \
            changed) or is --every days older than that. A write of a day on or before a \
            checkpoint forgets it (the database's triggers), so scores are right whether this runs \
            or not; without it they cost what they did before (about 14 months of events a read). \
            Run it once a night (cron); a run that finds nothing to move writes nothing.

            Writes, so --database-url is the primary. Runs as the habit_batch role (set \
            transaction-locally), one READ COMMITTED transaction per user, never waiting for a \
            user's write (a habit being written is left to the next run); prints \
            "users=N written=M failed=F" to stderr. A user whose step fails is counted and the run \
            goes on with the others.

            Exit status: 0 done; 64 bad arguments; 3 database unreachable or lost; 1 a user's step \
            failed (the first error is printed) or any other error.
            """
    )

    @OptionGroup var database: DatabaseOptions

    @Option(help: ArgumentHelp("Only this user.", valueName: "uuid"))
    var user: String?

    @Option(help: ArgumentHelp("Days before the user's today of a new checkpoint, 1–366.", valueName: "days"))
    var lag: Int = 8

    @Option(help: ArgumentHelp("How many days older than that a checkpoint may get before it moves, 1–366.", valueName: "days"))
    var every: Int = 7

    func validate() throws {
        if let user, UUID(uuidString: user) == nil || user.utf8.count != 36 {
            throw ValidationError("--user must be a UUID")
        }
        guard (1...366).contains(lag) else { throw ValidationError("--lag must be 1 to 366 days") }
        guard (1...366).contains(every) else { throw ValidationError("--every must be 1 to 366 days") }
    }

    func run() throws {
        try reportingFailures {
            let connection = try database.connect(try database.connectionURL(embedded: \.batchConnectionString, migrating: true),
                                                  applicationName: "habit-score-checkpoints")
            defer { connection.close() }
            var job = ScoreCheckpointsJob(user: user.flatMap(UUID.init(uuidString:)))
            job.lagDays = lag
            job.everyDays = every
            let report = try job.run(on: connection)
            FileHandle.standardError.write(Data("habit: score-checkpoints users=\(report.users) written=\(report.written) failed=\(report.failed)\n".utf8))
            if let failure = report.firstFailure {
                FileHandle.standardError.write(Data("habit: score-checkpoints: \(report.failed) user(s) failed, the first: \(failure)\n".utf8))
                throw ExitCode(1)
            }
        }
    }
}
