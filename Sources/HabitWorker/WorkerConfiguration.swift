import HabitStore
import PostgresClient

/// Everything `habit serve` can be told; defaults are documented in docs/operations.md.
public struct WorkerConfiguration: Sendable {
    /// libpq conninfo or URL the worker connects with (ideally as `habit_worker`).
    public var connectionString: String
    /// Database connections, each driven by its own thread: the number of requests that
    /// run against PostgreSQL at the same time. 4 measured fastest for reads on two cores
    /// shared with PostgreSQL (docs/performance.md, "The pool size").
    public var poolSize: Int = 4
    /// Most queued `SingleStatementMethod` requests (day.get) one connection sends in one round
    /// trip, each in its own transaction. 1 sends every request alone.
    public var maxRequestsPerRoundTrip: Int = 16
    /// Requests accepted but not yet answered; past it the worker stops reading stdin
    /// until responses go out (backpressure instead of unbounded memory).
    public var maxInFlight: Int = 256
    /// `statement_timeout` applied to every statement of a request (ms).
    public var statementTimeoutMilliseconds: Int = 5_000
    /// Longest accepted request line in bytes (newline excluded).
    public var maxLineBytes: Int = 1_048_576
    /// Most elements in one batch; a larger batch is answered with one -32600 and none of it
    /// runs. Bounds what one line can cost: every response of a batch is held until the last.
    public var maxBatchElements: Int = 1_000
    /// Largest response in bytes (newline excluded); a larger result is answered with reason
    /// `response_too_large` instead, and a batch's results share it (`BatchResponse`).
    public var maxResponseBytes: Int = 8 * 1_048_576
    /// Maximum JSON nesting depth of a request.
    public var maxJSONDepth: Int = 64
    /// libpq connect_timeout (s): how long a request waits for a server that is down.
    public var connectTimeoutSeconds: Int = 3
    /// After a failed connection attempt, requests answer database_unavailable at once
    /// for this long instead of each waiting for a new attempt (ms).
    public var reconnectBackoffMilliseconds: Int = 500

    /// `--sync-retention-days`: how long tombstones and sync.push replay records are kept, and
    /// so how old a sync cursor may be (older: `cursor_expired`).
    public var syncRetentionDays: Int = 90

    /// Named or unnamed statements (`PreparedStatementMode`): `auto` prepares each statement
    /// once per connection and falls back to unnamed statements behind a transaction pooler
    /// that loses them (pgbouncer < 1.21), with one warning in the log.
    public var preparedStatements: PreparedStatementMode = .auto

    /// `--listen-url`: where the change listener LISTENs (`ChangeListener`); a session is
    /// needed, so not a transaction pooler. nil: `connectionString`.
    public var listenConnectionString: String?

    /// `--health-socket`: a unix socket answering one JSON status line per connection, from
    /// its own thread, whatever the load (`HealthSocket`). nil: none.
    public var healthSocketPath: String?

    /// Called by the pool after a failed connection attempt, at most one thread at a time: the
    /// embedded server's `start()` when it is not running (`habit db stop`), returning true
    /// when it started it; the pool then tries once more at once. nil with a configured URL:
    /// somebody else runs that server.
    public var startServerIfStopped: (@Sendable () throws -> Bool)?

    public init(connectionString: String) {
        self.connectionString = connectionString
    }

    var storeSettings: StoreSettings { StoreSettings(statementTimeoutMilliseconds: statementTimeoutMilliseconds) }
    var syncRetention: Duration { .seconds(syncRetentionDays * 86_400) }
}
