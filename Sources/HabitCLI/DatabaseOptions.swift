import ArgumentParser
import Foundation
import HabitStore
import PostgresClient

/// Where the database is, shared by every command: `--database-url`/`DATABASE_URL`, else the
/// embedded server in `--data-dir`. `validate()` resolves each setting once (`Setting`) and
/// checks the URL with libpq's parser; the command then reads only the resolved values.
struct DatabaseOptions: ParsableArguments {
    @Option(name: .customLong("database-url"),
            help: ArgumentHelp("PostgreSQL URL or libpq conninfo (env DATABASE_URL). Without one, the embedded server in --data-dir is used.", valueName: "url"))
    var databaseURL: String?

    @Option(name: .customLong("data-dir"),
            help: ArgumentHelp("Directory of the embedded PostgreSQL; as root, when the postgres user cannot enter the working directory, /var/lib/habit/FOLDER-HASH instead of the default (env HABIT_DATA_DIR, default ./.habit).", valueName: "path"))
    var dataDirectory: String?

    @Option(name: .customLong("migrations-dir"),
            help: ArgumentHelp("The sql/ directory: migrations/NNNN_name.sql and the current-state files (env HABIT_MIGRATIONS_DIR, default: the sql/ folder next to the binary or in the working directory, else the copy of sql/ built into the binary).", valueName: "path"))
    var migrationsDirectory: String?

    @Option(help: ArgumentHelp("auto: prepare each statement once per connection, and switch that connection to unnamed statements for good when a transaction pooler loses them (26000/42P05); on: always named; off: always unnamed (env HABIT_PREPARED_STATEMENTS, default auto).", valueName: "auto|on|off"))
    var preparedStatements: PreparedStatementMode?

    // Resolved by validate().

    /// The configured server's URL, checked by libpq's parser; nil: the embedded server.
    private(set) var configuredURL: String?
    private(set) var preparedStatementMode = PreparedStatementMode.auto
    /// `--data-dir`/`HABIT_DATA_DIR`; nil: `EmbeddedServer.atDefaultLocation`.
    private(set) var embeddedDirectory: String?

    /// Only the flags are parsed; the resolved values are filled in by `validate()`.
    private enum CodingKeys: String, CodingKey {
        case databaseURL, dataDirectory, migrationsDirectory, preparedStatements
    }

    mutating func validate() throws {
        configuredURL = try Self.checkedURL(flagValue: databaseURL)
        preparedStatementMode = try Setting.resolve(preparedStatements, flag: "--prepared-statements",
                                                    variable: "HABIT_PREPARED_STATEMENTS", default: .auto)
        embeddedDirectory = try Setting.resolve(dataDirectory, flag: "--data-dir", variable: "HABIT_DATA_DIR", default: nil,
                                                expected: "a directory", check: { _ in })
        // HABIT_MIGRATIONS_DIR and the defaults are MigrationSource.locate's
        // (the library's search order, shared with the tests); the flag is passed to it.
    }

    /// `--database-url` (an empty one counts as unset), else `DATABASE_URL`, checked with
    /// libpq's parser: a malformed one is refused saying which part is wrong, never quoting
    /// it (it may hold a password).
    private static func checkedURL(flagValue: String?) throws -> String? {
        let url: String, source: String
        if let flagValue, !flagValue.isEmpty {
            (url, source) = (flagValue, "--database-url")
        } else if let fromEnvironment = Environment.string("DATABASE_URL") {
            (url, source) = (fromEnvironment, "DATABASE_URL")
        } else {
            return nil
        }
        do {
            try ConnectionString.validate(url)
        } catch let error as PostgresError {
            throw ValidationError("\(source): \(error.message)")
        }
        return url
    }

    /// A connection with the configured prepared-statement mode. A fallback to unnamed
    /// statements is said once on stderr, with how to silence it.
    func connect(_ url: String, applicationName: String) throws -> Connection {
        let connection = try Connection(url, applicationName: applicationName, preparedStatements: preparedStatementMode)
        connection.onPreparedStatementsDisabled = { error in
            FileHandle.standardError.write(Data("habit: warning: \(PreparedStatementMode.fallbackWarning(error))\n".utf8))
        }
        return connection
    }

    /// The configured URL; without one, the embedded server is started (and migrated first
    /// when `migrating`) and its connection string for `role` is returned.
    func connectionURL(embedded role: KeyPath<EmbeddedServer, String>, migrating: Bool = false) throws -> String {
        if let configuredURL { return configuredURL }
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

    /// The embedded server in `--data-dir`, else at its default location. When that is not
    /// `./.habit` (root, and a working directory the postgres user cannot enter), where and why
    /// is said on stderr, unless `announcing` is false (`habit serve` logs it instead).
    func embeddedServer(announcing: Bool = true) throws -> EmbeddedServer {
        if let embeddedDirectory { return try EmbeddedServer(directory: embeddedDirectory) }
        let server = try EmbeddedServer.atDefaultLocation()
        if announcing, let note = server.defaultLocationNote {
            FileHandle.standardError.write(Data("habit: \(note)\n".utf8))
        }
        return server
    }

    /// Where `sql/` is read from: the flag, HABIT_MIGRATIONS_DIR, a `sql/` folder beside the
    /// binary or in the working directory, else the copy built into the binary.
    func migrationLocation() -> MigrationSource.Location {
        MigrationSource.locate(explicit: migrationsDirectory)
    }

    func migrator() throws -> Migrator {
        try Migrator(migrationLocation())
    }
}

extension PreparedStatementMode: ExpressibleByArgument {}
