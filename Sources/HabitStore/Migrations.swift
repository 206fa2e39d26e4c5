import Foundation
import PostgresClient

/// A versioned migration: `sql/migrations/NNNN_name.sql`, applied once, in version order, for
/// tables, columns, indexes and data. The lowest version is the baseline (docs/schema.md,
/// "Migrations").
public struct Migration: Sendable, Equatable {
    public let version: Int
    public let fileName: String
    public let sql: String

    public init(version: Int, fileName: String, sql: String) {
        self.version = version
        self.fileName = fileName
        self.sql = sql
    }
}

/// A current-state file of `sql/` (functions, views, triggers, policies, grants): the current
/// definition of each object it names, safe to apply again, and applied again whenever it
/// changes or a versioned migration ran after it.
public struct CurrentStateFile: Sendable, Equatable {
    /// The path under `sql/`, e.g. `functions/history.sql`.
    public let path: String
    public let sql: String

    public init(path: String, sql: String) {
        self.path = path
        self.sql = sql
    }
}

public enum MigrationError: Error, CustomStringConvertible, Equatable {
    case noMigrations(directory: String)
    case invalidFileName(String)
    case unexpectedFile(String)
    case duplicateVersion(Int)
    case editedAfterApply(version: Int, fileName: String)
    case unknownAppliedVersion(Int)
    case predatesBaseline(databaseVersion: Int, baseline: Int)

    public var description: String {
        switch self {
        case .noMigrations(let directory):
            "\(directory) holds no migrations/NNNN_name.sql (sql/ holds migrations/ and the current-state files: docs/schema.md, \"Migrations\")"
        case .invalidFileName(let name):
            "migration file \(name) does not match NNNN_name.sql"
        case .unexpectedFile(let path):
            "\(path) is neither a versioned migration nor a current-state file (docs/schema.md, \"Migrations\", lists the layout)"
        case .duplicateVersion(let version):
            "two migration files share version \(version)"
        case .editedAfterApply(let version, let fileName):
            "migration \(fileName) (version \(version)) was edited after it was applied; refusing to run. Restore the applied file and add a new migration instead."
        case .unknownAppliedVersion(let version):
            "the database has migration version \(version), which this build does not know (is it older than the database?)"
        case .predatesBaseline(let databaseVersion, let baseline):
            "the database is at migration version \(databaseVersion), before the baseline \(baseline) that replaced the earlier files; migrate it to version \(baseline) with an earlier release first"
        }
    }
}

public enum MigrationSource {
    /// The folder of versioned migrations under `sql/`.
    public static let migrationsFolder = "migrations"

    /// The current-state folders (trailing `/`: their `*.sql` in name order) and files of
    /// `sql/`, in the order they are applied, after the versioned migrations: functions
    /// (their bodies are not checked at creation, so their files apply in any order), views
    /// (which call functions; admin.sql's functions return a view's rows), triggers (which
    /// name functions), policies (which call auth.uid()), the grants, once every object they
    /// name exists, and last the derived state brought up to date (derived.sql: habits whose
    /// streaks a migration marked pending are rebuilt, with the functions in place).
    public static let currentStateOrder = ["functions/", "views/", "triggers/", "policies.sql", "grants.sql", "derived.sql"]

    /// A file of `sql/`: its path under `sql/` (`migrations/0016_baseline.sql`,
    /// `functions/history.sql`, `grants.sql`) and its text.
    public struct SQLFile: Sendable, Equatable {
        public let path: String
        public let text: String

        public init(path: String, text: String) {
            self.path = path
            self.text = text
        }
    }

    /// Where `sql/` is read from.
    public enum Location: Sendable, Equatable, CustomStringConvertible {
        /// A `sql/` directory on disk.
        case directory(String)
        /// The copy of `sql/` compiled into the binary (`embeddedFiles`,
        /// Sources/HabitStore/EmbeddedMigrations.swift, written by scripts/embed-sql).
        case embedded

        public var description: String {
            switch self {
            case .directory(let path): path
            case .embedded: "the sql/ built into this binary"
            }
        }
    }

    /// Where the migrations are, in this order: `explicit` (`--migrations-dir`),
    /// `$HABIT_MIGRATIONS_DIR`, `sql/` in the executable's own directory (an image that
    /// copies `sql/` beside the binary), `sql/` in the working directory (a checkout, whose
    /// edited files win over the copy built before the edit); else the copy compiled into the
    /// binary, so `habit migrate` works from any directory. The two folders count only when
    /// they hold `migrations/NNNN_*.sql`; the flag and the variable always count (a wrong one
    /// fails rather than falling back). Never a parent directory: on a fresh embedded cluster
    /// migrations run as superuser, so a `../../sql/migrations/0001_x.sql` someone planted
    /// above the working directory must not be picked up.
    public static func locate(explicit: String? = nil) -> Location {
        if let explicit { return .directory(explicit) }
        if let fromEnvironment = ProcessInfo.processInfo.environment["HABIT_MIGRATIONS_DIR"], !fromEnvironment.isEmpty {
            return .directory(fromEnvironment)
        }
        var candidates: [String] = []
        if let executable = Bundle.main.executableURL {
            candidates.append(executable.resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("sql").path)
        }
        candidates.append(URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("sql").path)
        for candidate in candidates {
            if let names = try? FileManager.default.contentsOfDirectory(atPath: candidate + "/" + migrationsFolder),
               names.contains(where: { (try? version(ofFileName: $0)) != nil }) {
                return .directory(candidate)
            }
        }
        return .embedded
    }

    /// The versioned migrations and the current-state files at `location`.
    public static func load(_ location: Location) throws -> (migrations: [Migration], currentStateFiles: [CurrentStateFile]) {
        switch location {
        case .directory(let directory): try load(directory: directory)
        case .embedded: try load(files: embeddedFiles, from: location.description)
        }
    }

    /// The versioned migrations and the current-state files of a `sql/` directory: every
    /// `*.sql` file under it, read as `load(files:from:)` takes them.
    public static func load(directory: String) throws -> (migrations: [Migration], currentStateFiles: [CurrentStateFile]) {
        guard FileManager.default.fileExists(atPath: directory + "/" + migrationsFolder) else {
            throw MigrationError.noMigrations(directory: directory)
        }
        return try load(files: try files(directory: directory), from: directory)
    }

    /// Every `*.sql` file under `directory` (at any depth), with its path relative to it; what
    /// scripts/embed-sql compiles into the binary.
    public static func files(directory: String) throws -> [SQLFile] {
        let fileManager = FileManager.default
        var files: [SQLFile] = []
        for path in try fileManager.subpathsOfDirectory(atPath: directory).sorted() where path.hasSuffix(".sql") {
            var isFolder: ObjCBool = false
            guard fileManager.fileExists(atPath: directory + "/" + path, isDirectory: &isFolder), !isFolder.boolValue else { continue }
            files.append(SQLFile(path: path, text: try String(contentsOfFile: directory + "/" + path, encoding: .utf8)))
        }
        return files
    }

    /// The versioned migrations (`migrations/NNNN_name.sql`, in version order) and the
    /// current-state files (in `currentStateOrder`, each folder's files in name order) among
    /// `files`, the `*.sql` files of a `sql/` (`source` names it in errors). One reading for
    /// the directory and the copy in the binary, so both give the same files, hence the same
    /// checksums. A `.sql` file anywhere else is refused rather than silently left out.
    public static func load(files: [SQLFile], from source: String) throws -> (migrations: [Migration], currentStateFiles: [CurrentStateFile]) {
        var remaining = Dictionary(files.map { ($0.path, $0.text) }, uniquingKeysWith: { first, _ in first })
        func take(folder: String) -> [(name: String, text: String)] {
            let names = remaining.keys.filter { $0.hasPrefix(folder) && !$0.dropFirst(folder.count).contains("/") }.sorted()
            return names.map { (name: String($0.dropFirst(folder.count)), text: remaining.removeValue(forKey: $0)!) }
        }

        let versioned = take(folder: migrationsFolder + "/")
        guard !versioned.isEmpty else { throw MigrationError.noMigrations(directory: source) }
        let migrations = try ordered(try versioned.map { Migration(version: try version(ofFileName: $0.name), fileName: $0.name, sql: $0.text) })

        var currentStateFiles: [CurrentStateFile] = []
        for entry in currentStateOrder {
            if entry.hasSuffix("/") {
                currentStateFiles += take(folder: entry).map { CurrentStateFile(path: entry + $0.name, sql: $0.text) }
            } else if let text = remaining.removeValue(forKey: entry) {
                currentStateFiles.append(CurrentStateFile(path: entry, sql: text))
            }
        }
        if let stray = remaining.keys.sorted().first { throw MigrationError.unexpectedFile(stray) }
        return (migrations, currentStateFiles)
    }

    /// A folder of `NNNN_name.sql` files, in version order: `sql/migrations`, or the files the
    /// baseline replaced (Tests/Fixtures/legacy-sql-v16).
    public static func loadVersioned(directory: String) throws -> [Migration] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".sql") }
        var migrations: [Migration] = []
        for name in names {
            let sql = try String(contentsOfFile: directory + "/" + name, encoding: .utf8)
            migrations.append(Migration(version: try version(ofFileName: name), fileName: name, sql: sql))
        }
        return try ordered(migrations)
    }

    /// In version order; two files with one version are refused.
    private static func ordered(_ migrations: [Migration]) throws -> [Migration] {
        let migrations = migrations.sorted { $0.version < $1.version }
        for (previous, next) in zip(migrations, migrations.dropFirst()) where previous.version == next.version {
            throw MigrationError.duplicateVersion(next.version)
        }
        return migrations
    }

    private static func version(ofFileName name: String) throws -> Int {
        let prefix = name.prefix(while: { $0.isNumber })
        guard name.hasSuffix(".sql"), prefix.count == 4, name.dropFirst(4).first == "_", let version = Int(prefix), version > 0 else {
            throw MigrationError.invalidFileName(name)
        }
        return version
    }
}

/// Applies `sql/`: first the pending versioned migrations, in version order, each recorded with
/// its SHA-256 in `habit.schema_migrations`; then, in `MigrationSource.currentStateOrder`, each
/// current-state file that changed or was never applied, or every one of them when a versioned
/// migration was applied after it (a migration may drop what a file defines), each recorded in
/// `habit.current_state_files`. Every file runs in its own transaction, serialized across
/// migrators by a transaction-level advisory lock. Refuses to run when an applied versioned
/// file was edited. Re-running is a no-op.
///
/// The lowest versioned migration is the baseline: it replaced the files before it. A database
/// those files migrated has their rows, the baseline's version among them (written by the last
/// of them, with its own checksum): it is at the baseline, and the rows below are covered by
/// it. A database with rows below the baseline but not the baseline's is older than what the
/// baseline replaced, and is refused.
public struct Migrator: Sendable {
    public let migrations: [Migration]
    public let currentStateFiles: [CurrentStateFile]
    /// pg_advisory_xact_lock key: "habitmig" as 8 ASCII bytes.
    static let advisoryLockKey: Int64 = 0x6861_6269_746D_6967

    public init(migrations: [Migration], currentStateFiles: [CurrentStateFile] = []) {
        self.migrations = migrations
        self.currentStateFiles = currentStateFiles
    }

    /// The migrations and current-state files of a `sql/` directory.
    public init(directory: String) throws {
        try self.init(.directory(directory))
    }

    /// The migrations and current-state files of a `sql/` directory or of the copy in the binary.
    public init(_ location: MigrationSource.Location) throws {
        let loaded = try MigrationSource.load(location)
        self.init(migrations: loaded.migrations, currentStateFiles: loaded.currentStateFiles)
    }

    public struct Report: Sendable, Equatable {
        public var applied: [Int] = []
        public var alreadyApplied: [Int] = []
        /// Paths (under `sql/`) of the current-state files applied by this run.
        public var appliedFiles: [String] = []
        public var schemaVersion: Int { (applied + alreadyApplied).max() ?? 0 }
    }

    /// A row of `habit.schema_migrations`.
    private struct AppliedMigration: Equatable {
        let name: String
        let checksum: String
    }

    @discardableResult
    public func migrate(_ connection: Connection) throws -> Report {
        let checksums = try migrations.map { try checksum(of: $0.sql, on: connection) }
        // A Citus coordinator forwards some DDL's text to its workers as one prepared statement:
        // there, every file goes statement by statement (in its one transaction all the same).
        let byStatement = try Distribution.isCoordinator(connection)
        func apply(_ sql: String, on connection: Connection) throws {
            if byStatement {
                // The triggers of distributed tables are made again by the trigger files: Citus
                // allows it with this setting, as `habit db distribute` did; and a file that
                // changes a reference table after a distributed one (policies, grants) must use
                // one connection per node (Citus: "parallel DDL access … in the same
                // transaction"). Both transaction-local.
                try connection.execute("""
                    SELECT set_config('citus.enable_unsafe_triggers', 'on', true),
                           set_config('citus.multi_shard_modify_mode', 'sequential', true)
                    """)
                for statement in SQLStatements.split(sql) { try connection.executeScript(unsafeSQL: statement) }
            } else {
                try connection.executeScript(unsafeSQL: sql)
            }
        }
        var report = Report()
        try verify(applied: try appliedMigrations(connection), checksums: checksums)
        for (migration, checksum) in zip(migrations, checksums) {
            let appliedNow: Bool = try connection.withTransaction { connection in
                try connection.execute("SELECT pg_advisory_xact_lock(\(Self.advisoryLockKey))")
                // Re-read under the lock: another migrator may have applied it meanwhile.
                let applied = try appliedMigrations(connection)
                if let existing = applied[migration.version] {
                    guard accepts(existing, as: migration, checksum: checksum, applied: applied) else {
                        throw MigrationError.editedAfterApply(version: migration.version, fileName: migration.fileName)
                    }
                    return false
                }
                try apply(migration.sql, on: connection)
                try connection.execute("""
                    INSERT INTO habit.schema_migrations (version, name, checksum)
                    VALUES (\(migration.version), \(migration.fileName), \(checksum))
                    """)
                return true
            }
            if appliedNow { report.applied.append(migration.version) } else { report.alreadyApplied.append(migration.version) }
        }
        for file in currentStateFiles {
            let checksum = try checksum(of: file.sql, on: connection)
            let appliedNow: Bool = try connection.withTransaction { connection in
                try connection.execute("SELECT pg_advisory_xact_lock(\(Self.advisoryLockKey))")
                let version = try Self.schemaVersion(connection)
                if try appliedCurrentState(connection)[file.path] == CurrentStateRecord(checksum: checksum, schemaVersion: version) {
                    return false
                }
                try apply(file.sql, on: connection)
                try connection.execute("""
                    INSERT INTO habit.current_state_files AS f (path, checksum, schema_version)
                    VALUES (\(file.path), \(checksum), \(version))
                    ON CONFLICT (path) DO UPDATE
                        SET checksum = excluded.checksum, schema_version = excluded.schema_version, applied_at = now()
                    """)
                return true
            }
            if appliedNow { report.appliedFiles.append(file.path) }
        }
        // On a distributed Citus database, the files say some things for PostgreSQL that Citus
        // cannot plan (Distribution.adaptFunctions). On every run, not only one that applied a
        // file: a run that stopped before this step (files commit one by one) is finished here.
        if byStatement, try Distribution.isDistributed(connection) {
            try connection.withTransaction { connection in _ = try Distribution.adaptFunctions(connection) }
        }
        return report
    }

    /// Versions applied in the database but absent from `migrations`, edited since, or older
    /// than the baseline.
    public func verify(_ connection: Connection) throws {
        try verify(applied: try appliedMigrations(connection),
                   checksums: try migrations.map { try checksum(of: $0.sql, on: connection) })
    }

    /// Each file of `sql/` (`migrations/NNNN_name.sql`, then the current-state files) and
    /// whether it is pending: a migration not applied yet, a current-state file that a run
    /// would apply.
    public func status(_ connection: Connection) throws -> [(path: String, pending: Bool)] {
        let applied = try appliedMigrations(connection)
        var result = migrations.map { (path: MigrationSource.migrationsFolder + "/" + $0.fileName, pending: applied[$0.version] == nil) }
        let version = try Self.schemaVersion(connection)
        let pendingVersions = migrations.contains { applied[$0.version] == nil }
        let recorded = try appliedCurrentState(connection)
        for file in currentStateFiles {
            let current = CurrentStateRecord(checksum: try checksum(of: file.sql, on: connection), schemaVersion: version)
            result.append((path: file.path, pending: pendingVersions || recorded[file.path] != current))
        }
        return result
    }

    private func verify(applied: [Int: AppliedMigration], checksums: [String]) throws {
        let known = Dictionary(uniqueKeysWithValues: zip(migrations.map(\.version), zip(migrations, checksums)))
        for (version, row) in applied.sorted(by: { $0.key < $1.key }) {
            if let baseline = migrations.first, version < baseline.version {
                // Covered by the baseline, if the database reached it.
                guard applied[baseline.version] != nil else {
                    throw MigrationError.predatesBaseline(databaseVersion: applied.keys.max() ?? version, baseline: baseline.version)
                }
                continue
            }
            guard let (migration, checksum) = known[version] else { throw MigrationError.unknownAppliedVersion(version) }
            guard accepts(row, as: migration, checksum: checksum, applied: applied) else {
                throw MigrationError.editedAfterApply(version: version, fileName: migration.fileName)
            }
        }
    }

    /// Whether an applied row is `migration` as it is now: the same checksum, or, for the
    /// baseline, the row of the file it replaced (the database then has rows below it too).
    private func accepts(_ row: AppliedMigration, as migration: Migration, checksum: String,
                         applied: [Int: AppliedMigration]) -> Bool {
        if row.checksum == checksum { return true }
        return migration.version == migrations.first?.version && row.name != migration.fileName
            && applied.keys.contains { $0 < migration.version }
    }

    /// The applied versions; empty before the first migration.
    private func appliedMigrations(_ connection: Connection) throws -> [Int: AppliedMigration] {
        guard try Self.tableExists("schema_migrations", connection) else { return [:] }
        var result: [Int: AppliedMigration] = [:]
        for row in try connection.query("SELECT version, name, checksum FROM habit.schema_migrations") {
            result[try row.decode(Int.self, at: 0)] = AppliedMigration(name: try row.decode(String.self, at: 1),
                                                                        checksum: try row.decode(String.self, at: 2))
        }
        return result
    }

    private struct CurrentStateRecord: Equatable {
        let checksum: String
        let schemaVersion: Int
    }

    /// The current-state files as last applied; empty before the migration that records them.
    private func appliedCurrentState(_ connection: Connection) throws -> [String: CurrentStateRecord] {
        guard try Self.tableExists("current_state_files", connection) else { return [:] }
        var result: [String: CurrentStateRecord] = [:]
        for row in try connection.query("SELECT path, checksum, schema_version FROM habit.current_state_files") {
            result[try row.decode(String.self, at: 0)] = CurrentStateRecord(checksum: try row.decode(String.self, at: 1),
                                                                             schemaVersion: try row.decode(Int.self, at: 2))
        }
        return result
    }

    /// SHA-256 (hex) of the text, as `sha256sum` of the file has it.
    private func checksum(of sql: String, on connection: Connection) throws -> String {
        try connection.queryOne("SELECT encode(sha256(convert_to(\(sql), 'UTF8')), 'hex')").decode(String.self, at: 0)
    }

    /// The highest applied version, or 0 on an empty database.
    public static func schemaVersion(_ connection: Connection) throws -> Int {
        // Two statements: a query naming a missing table fails at parse time, whatever CASE says.
        guard try tableExists("schema_migrations", connection) else { return 0 }
        return try connection.queryOne("SELECT coalesce(max(version), 0) FROM habit.schema_migrations").decode(Int.self, at: 0)
    }

    /// Reads pg_class rather than to_regclass(): after waiting for the advisory lock, the
    /// backend's catalog cache may still hold "no such table" from before another migrator
    /// committed, while a catalog scan uses a fresh snapshot.
    static func tableExists(_ name: String, _ connection: Connection) throws -> Bool {
        try connection.queryOne("""
            SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                           WHERE n.nspname = 'habit' AND c.relname = \(name))
            """).decode(Bool.self, at: 0)
    }
}
