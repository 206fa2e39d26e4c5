import ArgumentParser
import Foundation
import HabitStore
import PostgresClient

/// Where the database is: `--database-url`/`DATABASE_URL`, else the embedded server.
struct DatabaseOptions: ParsableArguments {
    @Option(name: .customLong("database-url"),
            help: ArgumentHelp("PostgreSQL URL or libpq conninfo (env DATABASE_URL). Without one, the embedded server in --data-dir is used.", valueName: "url"))
    var databaseURL: String?

    @Option(name: .customLong("data-dir"),
            help: ArgumentHelp("Directory of the embedded PostgreSQL (env HABIT_DATA_DIR, default ./.habit).", valueName: "path"))
    var dataDirectory: String?

    @Option(name: .customLong("migrations-dir"),
            help: ArgumentHelp("Directory of the NNNN_name.sql migrations (env HABIT_MIGRATIONS_DIR, default: the sql/ folder next to the binary or the working directory).", valueName: "path"))
    var migrationsDirectory: String?

    @Option(help: ArgumentHelp("auto: prepare each statement once per connection, and switch that connection to unnamed statements for good when a transaction pooler loses them (26000/42P05); on: always named; off: always unnamed (env HABIT_PREPARED_STATEMENTS, default auto).", valueName: "auto|on|off"))
    var preparedStatements: PreparedStatementMode?

    /// `--prepared-statements`, else `HABIT_PREPARED_STATEMENTS`, else `auto`.
    func preparedStatementMode() throws -> PreparedStatementMode {
        if let preparedStatements { return preparedStatements }
        guard let text = Environment.string("HABIT_PREPARED_STATEMENTS") else { return .auto }
        guard let mode = PreparedStatementMode(rawValue: text) else {
            throw ValidationError("HABIT_PREPARED_STATEMENTS must be auto, on or off")
        }
        return mode
    }

    /// A connection with the configured prepared-statement mode. A fallback to unnamed
    /// statements is said once on stderr, with how to silence it.
    func connect(_ url: String, applicationName: String) throws -> Connection {
        let connection = try Connection(url, applicationName: applicationName, preparedStatements: try preparedStatementMode())
        connection.onPreparedStatementsDisabled = { error in
            FileHandle.standardError.write(Data("habit: warning: \(PreparedStatementMode.fallbackWarning(error))\n".utf8))
        }
        return connection
    }

    /// The configured server's URL, if any, first checked with libpq's parser: a malformed
    /// one fails here (exit 64) saying which part is wrong, never quoting it (a password).
    var configuredURL: String? {
        get throws {
            let url: String, source: String
            if let databaseURL, !databaseURL.isEmpty {
                (url, source) = (databaseURL, "--database-url")
            } else if let fromEnvironment = Environment.string("DATABASE_URL") {
                (url, source) = (fromEnvironment, "DATABASE_URL")
            } else {
                return nil
            }
            do {
                try ConnectionString.validate(url)
            } catch let error as PostgresError {
                throw CommandFailure("\(source): \(error.message)", code: 64)
            }
            return url
        }
    }

    /// The configured URL; without one, the embedded server is started (and migrated first
    /// when `migrating`) and its connection string for `role` is returned.
    func connectionURL(embedded role: KeyPath<EmbeddedServer, String>, migrating: Bool = false) throws -> String {
        if let configured = try configuredURL { return configured }
        return try startEmbeddedServer(migrating: migrating)[keyPath: role]
    }

    /// Starts (or reuses) the embedded server; with `migrating`, applies pending migrations.
    func startEmbeddedServer(migrating: Bool) throws -> EmbeddedServer {
        let server = try embeddedServer()
        try server.start()
        if migrating {
            let admin = try connect(server.adminConnectionString, applicationName: "habit-migrate")
            defer { admin.close() }
            try migrator().migrate(admin)
        }
        return server
    }

    func embeddedServer() throws -> EmbeddedServer {
        try EmbeddedServer(directory: dataDirectory ?? Environment.string("HABIT_DATA_DIR") ?? ".habit")
    }

    func migrator() throws -> Migrator {
        try Migrator(directory: MigrationSource.locateDirectory(explicit: migrationsDirectory))
    }
}

extension PreparedStatementMode: ExpressibleByArgument {}

enum Environment {
    static func string(_ name: String) -> String? {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else { return nil }
        return value
    }

    /// A yes/no setting: 1/true/yes/on or 0/false/no/off; anything else is an error.
    static func boolean(_ name: String) throws -> Bool? {
        guard let text = string(name)?.lowercased() else { return nil }
        switch text {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off": return false
        default: throw ValidationError("\(name)=\(text) is not a yes/no value (1/true/yes/on or 0/false/no/off)")
        }
    }

    /// An integer setting from the environment; a malformed value is an error, not a silent default.
    static func integer(_ name: String) throws -> Int? {
        guard let text = string(name) else { return nil }
        guard let value = Int(text) else { throw ValidationError("\(name)=\(text) is not an integer") }
        return value
    }
}

/// Writes a message to stderr and exits with `code`: the CLI's way of failing clearly.
struct CommandFailure: Error, CustomStringConvertible {
    let message: String
    let code: Int32
    init(_ message: String, code: Int32 = 1) {
        self.message = message
        self.code = code
    }
    var description: String { message }
}

extension ParsableCommand {
    /// Runs `body`, turning known errors into a one-line message and an exit code.
    func reportingFailures(_ body: () throws -> Void) throws {
        do {
            try body()
        } catch let error as ValidationError {
            throw error
        } catch let error as CommandFailure {
            FileHandle.standardError.write(Data("habit: \(error.message)\n".utf8))
            throw ExitCode(error.code)
        } catch let error as ExitCode {
            throw error
        } catch {
            FileHandle.standardError.write(Data("habit: \(error)\n".utf8))
            throw ExitCode(Self.exitCode(for: error))
        }
    }

    /// 3 = the database could not be reached or was lost; 1 = anything else.
    static func exitCode(for error: Error) -> Int32 {
        if let postgres = error as? PostgresError, postgres.isConnectionLost { return 3 }
        if error is EmbeddedServerError { return 3 }
        return 1
    }
}
