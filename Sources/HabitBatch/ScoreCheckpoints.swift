import Foundation
import HabitStore
import PostgresClient

/// The nightly batch of Loop's score checkpoints (`habit score-checkpoints`, sql/0038): for
/// every user with a habit (or one), habit.score_checkpoints_advance puts each habit's
/// checkpoint `lagDays` before the user's today when it is missing, no longer matches the habit,
/// or is `everyDays` older than that. The rule (which habits, what day, the locks against the
/// writers) is the function's; this only walks the users, one transaction each, so a user's
/// habits stay locked for the few milliseconds their checkpoints take.
public struct ScoreCheckpointsJob: Sendable {
    public var user: UUID?
    /// Days before the user's today of a new checkpoint: a late tick on one of them forgets it.
    public var lagDays = 8
    /// How much older than that a checkpoint may get before it is moved: reads fold at most
    /// lagDays + everyDays days of events.
    public var everyDays = 7
    /// Users read per page of the walk.
    public var pageSize = 1000

    public struct Report: Sendable, Equatable {
        public var users = 0
        public var written = 0
        /// Users whose step failed, with the first such error: the run goes on with the
        /// others, and the command exits 1.
        public var failed = 0
        public var firstFailure: String?
    }

    public init(user: UUID? = nil) {
        self.user = user
    }

    /// READ COMMITTED whatever the server's default (habit.score_checkpoints_advance reads the
    /// events after its locks and refuses otherwise), as habit_batch (transaction-local, as the
    /// weekly counts: WeeklyCountsJob.prelude).
    static let prelude: [Query] = ["SET TRANSACTION ISOLATION LEVEL READ COMMITTED", "SELECT set_config('role', 'habit_batch', true)"]

    public func run(on connection: Connection) throws -> Report {
        var report = Report()
        if let user {
            try step(user, on: connection, into: &report)
            return report
        }
        var after: UUID?
        while true {
            let users = try connection.withTransaction(prelude: Self.prelude) { connection in
                try connection.query("""
                    SELECT DISTINCT t.user_id FROM public.habit_templates t
                    WHERE \(after)::uuid IS NULL OR t.user_id > \(after)
                    ORDER BY t.user_id LIMIT \(pageSize)
                    """).map { try $0.decode(UUID.self, at: 0) }
            }
            for user in users {
                try step(user, on: connection, into: &report)
            }
            guard users.count == pageSize, let last = users.last else { return report }
            after = last
        }
    }

    /// One user's step: an error of the server is counted and the run goes on (the step never
    /// waits for a user's lock, so no deadlock or conflict is to be retried); a lost connection
    /// ends the run.
    private func step(_ user: UUID, on connection: Connection, into report: inout Report) throws {
        report.users += 1
        do {
            report.written += try advance(user, on: connection)
        } catch let error as PostgresError where !error.isConnectionLost {
            report.failed += 1
            if report.firstFailure == nil { report.firstFailure = "user \(user.lowercaseString): \(error)" }
        }
    }

    private func advance(_ user: UUID, on connection: Connection) throws -> Int {
        try connection.withTransaction(prelude: Self.prelude) { connection in
            try connection.queryOne("SELECT habit.score_checkpoints_advance(\(user), \(lagDays)::integer, \(everyDays)::integer)").decode(Int.self, at: 0)
        }
    }
}
