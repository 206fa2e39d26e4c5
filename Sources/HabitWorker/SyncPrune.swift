import Foundation
import Logging
import PostgresClient

/// Forgets what sync no longer needs: tombstones and `sync.push` replay records older than
/// `--sync-retention-days`, and reminder claims as old (`habit.prune_reminder_firings`)
/// (`habit.prune_sync`, which also raises each user's
/// `pruned_through`, so older cursors answer `cursor_expired`). Runs on a thread of its own,
/// at start-up and then hourly, each time on a short-lived connection (no pool slot is held
/// and no request waits); a failure is logged and tried again at the next hour, never fatal.
/// Several workers pruning at once is harmless: the deletes are idempotent.
final class SyncPrune: @unchecked Sendable {
    static let interval: DispatchTimeInterval = .seconds(3_600)

    private let configuration: WorkerConfiguration
    private let logger: Logger
    private let stopped = DispatchSemaphore(value: 0)

    init(configuration: WorkerConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        let thread = Thread { [self] in
            repeat { pruneOnce() } while stopped.wait(timeout: .now() + Self.interval) == .timedOut
        }
        thread.name = "habit-prune"
        thread.start()
    }

    /// Ends the thread after the prune under way, if any, without waiting for it: a worker
    /// stopping must not wait for a connect timeout.
    func stop() {
        stopped.signal()
    }

    private func pruneOnce() {
        do {
            let connection = try Connection(configuration.connectionString, applicationName: "habit-prune",
                                            connectTimeoutSeconds: configuration.connectTimeoutSeconds,
                                            preparedStatements: .off)
            defer { connection.close() }
            let row = try connection.queryOne("""
                SELECT tombstones, mutations FROM habit.prune_sync(make_interval(days => \(configuration.syncRetentionDays)::int))
                """)
            let (tombstones, mutations) = (try row.decode(Int64.self, at: 0), try row.decode(Int64.self, at: 1))
            // Reminder claims past the same retention (sql/0036): a sender's window older than
            // that would list their firings again.
            let firings = try connection.queryOne("""
                SELECT habit.prune_reminder_firings(make_interval(days => \(configuration.syncRetentionDays)::int))
                """).decode(Int64.self, at: 0)
            logger.info("sync pruned", metadata: ["tombstones": "\(tombstones)", "mutations": "\(mutations)",
                                                  "reminder_firings": "\(firings)",
                                                  "retention_days": "\(configuration.syncRetentionDays)"])
        } catch {
            logger.warning("sync prune failed", metadata: ["error": "\(error)"])
        }
    }
}
