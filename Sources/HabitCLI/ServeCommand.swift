import ArgumentParser
import Foundation
import HabitStore
import HabitWorker
import Logging
import PostgresClient

extension Logger.Level: @retroactive ExpressibleByArgument {}
extension StderrLogHandler.Format: ExpressibleByArgument {}

struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve JSON-RPC 2.0 on stdin/stdout, one message per line.",
        discussion: """
            stdout carries only protocol messages; logs go to stderr. EOF on stdin, SIGTERM or SIGINT: \
            finish and answer the requests in flight, then exit 0.

            Without --database-url/DATABASE_URL the worker starts (or reuses) a private PostgreSQL in \
            --data-dir, applies the migrations and connects as the habit_worker role. With a URL it \
            connects there and applies migrations only with --migrate.

            Every option can also be set by the environment variable named in its help. \
            Protocol: docs/protocol.md. Operations: docs/operations.md.
            """
    )

    @OptionGroup var database: DatabaseOptions

    @Flag(help: "Apply pending migrations before serving (env HABIT_MIGRATE=1/true/on). Always done for the embedded server.")
    var migrate = false

    @Option(help: ArgumentHelp("Database connections; the worker runs one thread more (env HABIT_POOL_SIZE, default 4).", valueName: "n"))
    var poolSize: Int?

    @Option(help: ArgumentHelp("Requests accepted but not yet answered before stdin stops being read (env HABIT_MAX_IN_FLIGHT, default 256).", valueName: "n"))
    var maxInFlight: Int?

    @Option(name: .customLong("statement-timeout-ms"),
            help: ArgumentHelp("statement_timeout for each statement; past it the request answers reason \"timeout\" (env HABIT_STATEMENT_TIMEOUT_MS, default 5000).", valueName: "ms"))
    var statementTimeout: Int?

    @Option(help: ArgumentHelp("Longest accepted request line in bytes (env HABIT_MAX_LINE_BYTES, default 1048576).", valueName: "bytes"))
    var maxLineBytes: Int?

    @Option(name: .customLong("max-batch"),
            help: ArgumentHelp("Most elements in one JSON-RPC batch; a larger batch gets one -32600 and none of it runs (env HABIT_MAX_BATCH, default 1000).", valueName: "n"))
    var maxBatch: Int?

    @Option(name: .customLong("max-response-bytes"),
            help: ArgumentHelp("Largest response in bytes (newline excluded); a larger result answers reason \"response_too_large\", and so do a batch's results past it (env HABIT_MAX_RESPONSE_BYTES, default 8388608).", valueName: "bytes"))
    var maxResponseBytes: Int?

    @Option(name: .customLong("max-per-round-trip"),
            help: ArgumentHelp("Most queued day.get requests one connection sends in one round trip, each in its own transaction; 1 sends each alone (env HABIT_MAX_PER_ROUND_TRIP, default 16).", valueName: "n"))
    var maxPerRoundTrip: Int?

    @Option(name: .customLong("connect-timeout"),
            help: ArgumentHelp("Seconds to wait for PostgreSQL when connecting (env HABIT_CONNECT_TIMEOUT, default 3).", valueName: "s"))
    var connectTimeout: Int?

    @Option(name: .customLong("listen-url"),
            help: ArgumentHelp("Where the change listener polls subscribed users' clocks (changes.subscribe): a server or any pool, a transaction pooler too (env HABIT_LISTEN_URL, default the database URL).", valueName: "url"))
    var listenURL: String?

    @Option(help: ArgumentHelp("Least severe log level written to stderr (env HABIT_LOG_LEVEL, default info).", valueName: "level"))
    var logLevel: Logger.Level?

    @Option(help: ArgumentHelp("Log lines as one JSON object each, or as text (env HABIT_LOG_FORMAT, default json).", valueName: "format"))
    var logFormat: StderrLogHandler.Format?

    @Option(name: .customLong("health-socket"),
            help: ArgumentHelp("Unix socket (mode 0600) that answers each connection with one JSON status line, whatever the load; probe it with `habit health --socket PATH` (env HABIT_HEALTH_SOCKET, default none).", valueName: "path"))
    var healthSocket: String?

    @Option(name: .customLong("sync-retention-days"),
            help: ArgumentHelp("Days tombstones and sync.push replay records are kept; an older sync cursor answers reason \"cursor_expired\" (env HABIT_SYNC_RETENTION_DAYS, default 90).", valueName: "days"))
    var syncRetentionDays: Int?

    /// Every setting, resolved by `validate()` from its flag, else its environment variable,
    /// else its default (the defaults are `WorkerConfiguration`'s).
    private(set) var settings = Settings()

    struct Settings {
        var migrate = false
        var logLevel = Logger.Level.info
        var logFormat = StderrLogHandler.Format.json
        /// All the worker is told but its connection string, which `run()` learns (it may
        /// first have to start the embedded server).
        var worker = WorkerConfiguration(connectionString: "")
    }

    /// Only the flags are parsed; `settings` is filled in by `validate()`.
    private enum CodingKeys: String, CodingKey {
        case database, migrate, poolSize, maxInFlight, statementTimeout, maxLineBytes, maxBatch, maxResponseBytes,
             maxPerRoundTrip, connectTimeout, logLevel, logFormat, healthSocket
        case syncRetentionDays
        case listenURL
    }

    mutating func validate() throws {
        var worker = WorkerConfiguration(connectionString: "")
        worker.poolSize = try Setting.number(poolSize, flag: "--pool-size", variable: "HABIT_POOL_SIZE", default: worker.poolSize)
        worker.maxInFlight = try Setting.number(maxInFlight, flag: "--max-in-flight", variable: "HABIT_MAX_IN_FLIGHT",
                                                default: worker.maxInFlight)
        worker.statementTimeoutMilliseconds = try Setting.number(statementTimeout, flag: "--statement-timeout-ms",
                                                                 variable: "HABIT_STATEMENT_TIMEOUT_MS",
                                                                 default: worker.statementTimeoutMilliseconds, minimum: 0)
        worker.maxLineBytes = try Setting.number(maxLineBytes, flag: "--max-line-bytes", variable: "HABIT_MAX_LINE_BYTES",
                                                 default: worker.maxLineBytes)
        worker.maxBatchElements = try Setting.number(maxBatch, flag: "--max-batch", variable: "HABIT_MAX_BATCH",
                                                     default: worker.maxBatchElements)
        worker.maxResponseBytes = try Setting.number(maxResponseBytes, flag: "--max-response-bytes", variable: "HABIT_MAX_RESPONSE_BYTES",
                                                     default: worker.maxResponseBytes)
        worker.maxRequestsPerRoundTrip = try Setting.number(maxPerRoundTrip, flag: "--max-per-round-trip",
                                                            variable: "HABIT_MAX_PER_ROUND_TRIP", default: worker.maxRequestsPerRoundTrip)
        worker.connectTimeoutSeconds = try Setting.number(connectTimeout, flag: "--connect-timeout", variable: "HABIT_CONNECT_TIMEOUT",
                                                          default: worker.connectTimeoutSeconds)
        worker.syncRetentionDays = try Setting.resolve(syncRetentionDays, flag: "--sync-retention-days", variable: "HABIT_SYNC_RETENTION_DAYS",
                                                       default: worker.syncRetentionDays, expected: "a whole number of days from 1 to 36500",
                                                       where: { (1...36_500).contains($0) })
        worker.preparedStatements = database.preparedStatementMode
        worker.healthSocketPath = try Setting.resolve(healthSocket, flag: "--health-socket", variable: "HABIT_HEALTH_SOCKET",
                                                      default: nil as String?, expected: "a usable socket path",
                                                      check: { try HealthSocket.checkPath($0) })
        // Checked by libpq's parser; an error names the wrong part, never the value (a password).
        worker.listenConnectionString = try Setting.resolve(listenURL, flag: "--listen-url", variable: "HABIT_LISTEN_URL",
                                                            default: nil as String?, expected: "a libpq connection string or URL",
                                                            check: { try ConnectionString.validate($0) })
        settings = Settings(
            migrate: try migrate || Environment.boolean("HABIT_MIGRATE") == true,
            logLevel: try Setting.resolve(logLevel, flag: "--log-level", variable: "HABIT_LOG_LEVEL", default: .info),
            logFormat: try Setting.resolve(logFormat, flag: "--log-format", variable: "HABIT_LOG_FORMAT", default: .json),
            worker: worker
        )
    }

    func run() throws {
        // Installed by `Habit.main` before parsing (this returns that pipe): a SIGTERM during
        // start-up (starting the embedded server, migrating) then ends the worker through the
        // normal drain, with exit 0.
        let wake = ShutdownSignals.install()
        let (level, format) = (settings.logLevel, settings.logFormat)
        let logger = Logger(label: "habit.serve") { label in StderrLogHandler(label: label, level: level, format: format) }
        // Failures are log lines too (in the configured format), with reportingFailures' exit codes.
        do {
            var configuration = settings.worker
            if let configured = database.configuredURL {
                if settings.migrate {
                    try applyMigrations(url: configured, logger: logger)
                }
                configuration.connectionString = configured
            } else {
                let server = try database.embeddedServer(announcing: false)
                if let note = server.defaultLocationNote {
                    logger.info("embedded database outside the working directory",
                                metadata: ["directory": "\(server.directory)", "reason": "\(note)"])
                }
                try server.start()
                try applyMigrations(url: server.adminConnectionString, logger: logger)
                logger.info("embedded database ready", metadata: ["directory": "\(server.directory)"])
                configuration.connectionString = server.workerConnectionString
                // `habit db stop` under a running worker: its reconnect starts the server again.
                configuration.startServerIfStopped = { try server.startIfStopped() }
            }
            let status = WorkerServer(configuration: configuration, wake: wake, logger: logger).run()
            if status != 0 { throw ExitCode(status) }
        } catch let error as ExitCode {
            throw error
        } catch {
            logger.critical("cannot serve", metadata: ["error": "\(error)"])
            throw ExitCode(Self.exitCode(for: error))
        }
    }

    /// The log format for a usage error, read leniently from serve's `arguments` and the
    /// environment (the flag, else HABIT_LOG_FORMAT, as `validate()` would); JSON, the default,
    /// when neither names a valid format (the format setting may be the bad one).
    static func logFormat(arguments: [String]) -> StderrLogHandler.Format {
        var flagValue: String?
        for (index, argument) in arguments.enumerated() {
            if argument == "--" { break }
            if argument == "--log-format", index + 1 < arguments.count { flagValue = arguments[index + 1] }
            if argument.hasPrefix("--log-format=") { flagValue = String(argument.dropFirst("--log-format=".count)) }
        }
        let text = flagValue ?? Environment.string("HABIT_LOG_FORMAT")
        return text.flatMap(StderrLogHandler.Format.init(rawValue:)) ?? .json
    }

    private func applyMigrations(url: String, logger: Logger) throws {
        let connection = try database.connect(url, applicationName: "habit-migrate")
        defer { connection.close() }
        let location = database.migrationLocation()
        let report = try Migrator(location).migrate(connection)
        logger.info("migrations", metadata: ["applied": "\(report.applied.count)", "applied_files": "\(report.appliedFiles.count)",
                                             "schema_version": "\(report.schemaVersion)", "sql": "\(location)"])
    }
}
