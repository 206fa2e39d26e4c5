import Foundation
import PostgresClient

/// One file of `sql/`: `NNNN_name.sql`, applied in version order.
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

public enum MigrationError: Error, CustomStringConvertible, Equatable {
    case directoryNotFound(searched: [String])
    case invalidFileName(String)
    case duplicateVersion(Int)
    case editedAfterApply(version: Int, fileName: String)
    case unknownAppliedVersion(Int)

    public var description: String {
        switch self {
        case .directoryNotFound(let searched):
            "no migrations directory found (looked in: \(searched.joined(separator: ", "))); pass --migrations-dir or set HABIT_MIGRATIONS_DIR"
        case .invalidFileName(let name):
            "migration file \(name) does not match NNNN_name.sql"
        case .duplicateVersion(let version):
            "two migration files share version \(version)"
        case .editedAfterApply(let version, let fileName):
            "migration \(fileName) (version \(version)) was edited after it was applied; refusing to run. Restore the applied file and add a new migration instead."
        case .unknownAppliedVersion(let version):
            "the database has migration version \(version), which this build does not know (is it older than the database?)"
        }
    }
}

public enum MigrationSource {
    /// Where the migrations are, in this order: `explicit` (`--migrations-dir`),
    /// `$HABIT_MIGRATIONS_DIR`, `sql/` in the executable's own directory (an image that
    /// copies `sql/` beside the binary), `sql/` in the working directory (a checkout). The
    /// last two count only when they hold `0001_*.sql`. Never a parent directory: on a fresh
    /// embedded cluster migrations run as superuser, so a `../../sql/0001_x.sql` someone
    /// planted above the working directory must not be picked up.
    public static func locateDirectory(explicit: String? = nil) throws -> String {
        if let explicit { return explicit }
        if let fromEnvironment = ProcessInfo.processInfo.environment["HABIT_MIGRATIONS_DIR"], !fromEnvironment.isEmpty {
            return fromEnvironment
        }
        var candidates: [String] = []
        if let executable = Bundle.main.executableURL {
            candidates.append(executable.resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("sql").path)
        }
        candidates.append(URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("sql").path)
        for candidate in candidates {
            if let names = try? FileManager.default.contentsOfDirectory(atPath: candidate),
               names.contains(where: { $0.hasPrefix("0001_") && $0.hasSuffix(".sql") }) {
                return candidate
            }
        }
        throw MigrationError.directoryNotFound(searched: candidates)
    }

    public static func load(directory: String) throws -> [Migration] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".sql") }
        var migrations: [Migration] = []
        for name in names {
            let prefix = name.prefix(while: { $0.isNumber })
            guard prefix.count == 4, name.dropFirst(4).first == "_", let version = Int(prefix), version > 0 else {
                throw MigrationError.invalidFileName(name)
            }
            let sql = try String(contentsOfFile: directory + "/" + name, encoding: .utf8)
            migrations.append(Migration(version: version, fileName: name, sql: sql))
        }
        migrations.sort { $0.version < $1.version }
        for (previous, next) in zip(migrations, migrations.dropFirst()) where previous.version == next.version {
            throw MigrationError.duplicateVersion(next.version)
        }
        return migrations
    }
}

/// Applies `sql/` migrations: each file in its own transaction, recorded with its SHA-256 in
/// `habit.schema_migrations`, serialized across migrators by a transaction-level advisory
/// lock. Refuses to run when an applied file was edited. Re-running is a no-op.
public struct Migrator: Sendable {
    public let migrations: [Migration]
    /// pg_advisory_xact_lock key: "habitmig" as 8 ASCII bytes.
    static let advisoryLockKey: Int64 = 0x6861_6269_746D_6967

    public init(migrations: [Migration]) { self.migrations = migrations }

    public init(directory: String) throws {
        self.init(migrations: try MigrationSource.load(directory: directory))
    }

    public struct Report: Sendable, Equatable {
        public var applied: [Int] = []
        public var alreadyApplied: [Int] = []
        public var schemaVersion: Int { (applied + alreadyApplied).max() ?? 0 }
    }

    @discardableResult
    public func migrate(_ connection: Connection) throws -> Report {
        let checksums = try migrations.map { try checksum(of: $0, on: connection) }
        var report = Report()
        try verify(applied: try appliedChecksums(connection), checksums: checksums)
        for (migration, checksum) in zip(migrations, checksums) {
            let appliedNow: Bool = try connection.withTransaction { connection in
                try connection.execute("SELECT pg_advisory_xact_lock(\(Self.advisoryLockKey))")
                // Re-read under the lock: another migrator may have applied it meanwhile.
                let applied = try appliedChecksums(connection)
                if let existing = applied[migration.version] {
                    guard existing == checksum else {
                        throw MigrationError.editedAfterApply(version: migration.version, fileName: migration.fileName)
                    }
                    return false
                }
                try connection.executeScript(unsafeSQL: migration.sql)
                try connection.execute("""
                    INSERT INTO habit.schema_migrations (version, name, checksum)
                    VALUES (\(migration.version), \(migration.fileName), \(checksum))
                    """)
                return true
            }
            if appliedNow { report.applied.append(migration.version) } else { report.alreadyApplied.append(migration.version) }
        }
        return report
    }

    /// Versions applied in the database but absent from `migrations`, or edited since.
    public func verify(_ connection: Connection) throws {
        try verify(applied: try appliedChecksums(connection),
                   checksums: try migrations.map { try checksum(of: $0, on: connection) })
    }

    /// Migrations not yet applied.
    public func pending(_ connection: Connection) throws -> [Migration] {
        let applied = try appliedChecksums(connection)
        return migrations.filter { applied[$0.version] == nil }
    }

    private func verify(applied: [Int: String], checksums: [String]) throws {
        let known = Dictionary(uniqueKeysWithValues: zip(migrations.map(\.version), zip(migrations, checksums)))
        for (version, appliedChecksum) in applied.sorted(by: { $0.key < $1.key }) {
            guard let (migration, checksum) = known[version] else { throw MigrationError.unknownAppliedVersion(version) }
            guard checksum == appliedChecksum else {
                throw MigrationError.editedAfterApply(version: version, fileName: migration.fileName)
            }
        }
    }

    /// The applied versions and their checksums; empty before the first migration.
    private func appliedChecksums(_ connection: Connection) throws -> [Int: String] {
        guard try Self.migrationsTableExists(connection) else { return [:] }
        var result: [Int: String] = [:]
        for row in try connection.query("SELECT version, checksum FROM habit.schema_migrations") {
            result[try row.decode(Int.self, at: 0)] = try row.decode(String.self, at: 1)
        }
        return result
    }

    private func checksum(of migration: Migration, on connection: Connection) throws -> String {
        try connection.queryOne("SELECT encode(sha256(convert_to(\(migration.sql), 'UTF8')), 'hex')").decode(String.self, at: 0)
    }

    /// The highest applied version, or 0 on an empty database.
    public static func schemaVersion(_ connection: Connection) throws -> Int {
        // Two statements: a query naming a missing table fails at parse time, whatever CASE says.
        guard try migrationsTableExists(connection) else { return 0 }
        return try connection.queryOne("SELECT coalesce(max(version), 0) FROM habit.schema_migrations").decode(Int.self, at: 0)
    }

    /// Reads pg_class rather than to_regclass(): after waiting for the advisory lock, the
    /// backend's catalog cache may still hold "no such table" from before another migrator
    /// committed, while a catalog scan uses a fresh snapshot.
    static func migrationsTableExists(_ connection: Connection) throws -> Bool {
        try connection.queryOne("""
            SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                           WHERE n.nspname = 'habit' AND c.relname = 'schema_migrations')
            """).decode(Bool.self, at: 0)
    }
}
