import ArgumentParser
import Foundation
import HabitStore
import HabitWorker
import Logging
import PostgresClient

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

    @Option(help: ArgumentHelp("trace, debug, info, notice, warning, error or critical (env HABIT_LOG_LEVEL, default info).", valueName: "level"))
    var logLevel: String?

    @Option(help: ArgumentHelp("json or text (env HABIT_LOG_FORMAT, default json).", valueName: "format"))
    var logFormat: String?

    func validate() throws {
        for (name, value) in [("--pool-size", poolSize), ("--max-in-flight", maxInFlight), ("--max-line-bytes", maxLineBytes), ("--max-batch", maxBatch),
                             ("--max-response-bytes", maxResponseBytes),
                             ("--max-per-round-trip", maxPerRoundTrip)] {
            if let value, value < 1 { throw ValidationError("\(name) must be at least 1") }
        }
        if let statementTimeout, statementTimeout < 0 { throw ValidationError("--statement-timeout-ms must be 0 (none) or more") }
        if let connectTimeout, connectTimeout < 1 { throw ValidationError("--connect-timeout must be at least 1") }
        if let logLevel, Logger.Level(rawValue: logLevel) == nil { throw ValidationError("unknown --log-level \(logLevel)") }
        if let logFormat, StderrLogHandler.Format(rawValue: logFormat) == nil { throw ValidationError("--log-format must be json or text") }
    }

    func run() throws {
        var logger: Logger!
        // Before anything slow (starting the embedded server, migrating): a SIGTERM during
        // start-up then ends the worker through the normal drain, with exit 0.
        let wake = WakePipe()
        ShutdownSignals.install(waking: wake)
        try reportingFailures {
            let level = Logger.Level(rawValue: logLevel ?? Environment.string("HABIT_LOG_LEVEL") ?? "info")
            guard let level else { throw ValidationError("HABIT_LOG_LEVEL must be a log level") }
            guard let format = StderrLogHandler.Format(rawValue: logFormat ?? Environment.string("HABIT_LOG_FORMAT") ?? "json") else {
                throw ValidationError("HABIT_LOG_FORMAT must be json or text")
            }
            logger = Logger(label: "habit.serve") { label in StderrLogHandler(label: label, level: level, format: format) }

            let connectionString: String
            if let configured = try database.configuredURL {
                if try migrate || Environment.boolean("HABIT_MIGRATE") == true {
                    try applyMigrations(url: configured, logger: logger)
                }
                connectionString = configured
            } else {
                let server = try database.embeddedServer()
                try server.start()
                try applyMigrations(url: server.adminConnectionString, logger: logger)
                logger.info("embedded database ready", metadata: ["directory": "\(server.directory)"])
                connectionString = server.workerConnectionString
            }

            var configuration = WorkerConfiguration(connectionString: connectionString)
            configuration.poolSize = try poolSize ?? Environment.integer("HABIT_POOL_SIZE") ?? configuration.poolSize
            configuration.maxInFlight = try maxInFlight ?? Environment.integer("HABIT_MAX_IN_FLIGHT") ?? configuration.maxInFlight
            configuration.statementTimeoutMilliseconds = try statementTimeout ?? Environment.integer("HABIT_STATEMENT_TIMEOUT_MS")
                ?? configuration.statementTimeoutMilliseconds
            configuration.maxLineBytes = try maxLineBytes ?? Environment.integer("HABIT_MAX_LINE_BYTES") ?? configuration.maxLineBytes
            configuration.maxBatchElements = try maxBatch ?? Environment.integer("HABIT_MAX_BATCH") ?? configuration.maxBatchElements
            configuration.maxResponseBytes = try maxResponseBytes ?? Environment.integer("HABIT_MAX_RESPONSE_BYTES")
                ?? configuration.maxResponseBytes
            configuration.maxRequestsPerRoundTrip = try maxPerRoundTrip ?? Environment.integer("HABIT_MAX_PER_ROUND_TRIP")
                ?? configuration.maxRequestsPerRoundTrip
            configuration.connectTimeoutSeconds = try connectTimeout ?? Environment.integer("HABIT_CONNECT_TIMEOUT")
                ?? configuration.connectTimeoutSeconds
            configuration.preparedStatements = try database.preparedStatementMode()
            guard configuration.poolSize >= 1, configuration.maxInFlight >= 1, configuration.maxLineBytes >= 1,
                  configuration.maxBatchElements >= 1, configuration.maxRequestsPerRoundTrip >= 1, configuration.maxResponseBytes >= 1,
                  configuration.statementTimeoutMilliseconds >= 0, configuration.connectTimeoutSeconds >= 1 else {
                throw ValidationError("HABIT_* sizes must be positive")
            }

            let server = WorkerServer(configuration: configuration, wake: wake, logger: logger)
            let status = server.run()
            if status != 0 { throw ExitCode(status) }
        }
    }

    private func applyMigrations(url: String, logger: Logger) throws {
        let connection = try database.connect(url, applicationName: "habit-migrate")
        defer { connection.close() }
        let report = try database.migrator().migrate(connection)
        logger.info("migrations", metadata: ["applied": "\(report.applied.count)", "schema_version": "\(report.schemaVersion)"])
    }
}
