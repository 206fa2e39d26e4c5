import Foundation
import HabitStore
import PostgresClient

/// Throwaway databases for tests: each test gets its own database (so tests run in
/// parallel and leave nothing behind), created from a template that holds the migrated
/// schema. The server comes from `DATABASE_URL` (or PG* variables); `scripts/test.sh`
/// starts one. Without a server, tests fail loudly instead of skipping.
public struct TestDatabase: Sendable {
    /// Superuser conninfo for this test's database.
    public let url: String
    public let name: String

    /// The server's admin conninfo (DATABASE_URL).
    public static var serverURL: String { Connection.environmentDatabaseURL() ?? "" }

    public static let repositoryRoot: URL = {
        // Tests/TestSupport/TestDatabase.swift → repository root.
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }()

    /// The `sql/` directory: versioned migrations and current-state files.
    public static var migrationsDirectory: String { repositoryRoot.appendingPathComponent("sql").path }

    /// sql/0001 … sql/0016 as they were before the baseline replaced them (issue 29), to build
    /// a database the way earlier releases did.
    public static var legacyMigrationsDirectory: String {
        repositoryRoot.appendingPathComponent("Tests/Fixtures/legacy-sql-v16").path
    }

    /// Connects to the server's admin database, or fails with how to start one.
    public static func adminConnection() throws -> Connection {
        do {
            return try Connection(serverURL, applicationName: "habit-tests")
        } catch {
            throw TestDatabaseError.noServer(underlying: "\(error)")
        }
    }

    /// Runs `body` with a fresh database (migrated unless `migrated` is false), dropped
    /// afterwards on every path.
    public static func with<Value>(migrated: Bool = true, _ body: (TestDatabase) throws -> Value) throws -> Value {
        let database = try create(migrated: migrated)
        defer { database.drop() }
        return try body(database)
    }

    public static func create(migrated: Bool = true) throws -> TestDatabase {
        if let cluster = CitusCluster.current { return try cluster.create(migrated: migrated) }
        let admin = try adminConnection()
        defer { admin.close() }
        let name = "habit_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        if migrated {
            let template = try migratedTemplate(admin: admin)
            try admin.execute(Query(unsafeSQL: "CREATE DATABASE \(name) TEMPLATE \(template)"))
        } else {
            try admin.execute(Query(unsafeSQL: "CREATE DATABASE \(name)"))
        }
        return TestDatabase(url: try ConnectionString.applying(["dbname": name], to: serverURL), name: name)
    }

    public func connect(user: String? = nil) throws -> Connection {
        var overrides: [String: String] = [:]
        if let user { overrides["user"] = user }
        return try Connection(try ConnectionString.applying(overrides, to: url), applicationName: "habit-tests")
    }

    /// This database's conninfo with other settings (e.g. `user=habit_worker`).
    public func url(overriding overrides: [String: String]) throws -> String {
        try ConnectionString.applying(overrides, to: url)
    }

    public func drop() {
        if let cluster = CitusCluster.current { cluster.drop(name); return }
        guard let admin = try? TestDatabase.adminConnection() else { return }
        defer { admin.close() }
        _ = try? admin.execute(Query(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"))
    }

    // MARK: - Template

    nonisolated(unsafe) private static var templateName: String?
    private static let templateLock = NSLock()

    /// A database holding the current schema, named after the checksum of every file of sql/
    /// so an edited file gets a new template. Built once per server; concurrent test processes
    /// serialize on an advisory lock.
    private static func migratedTemplate(admin: Connection) throws -> String {
        templateLock.lock()
        defer { templateLock.unlock() }
        if let templateName { return templateName }
        let migrator = try Migrator(directory: migrationsDirectory)
        let texts = migrator.migrations.map { $0.fileName + "\n" + $0.sql } + migrator.currentStateFiles.map { $0.path + "\n" + $0.sql }
        let digest = try admin.queryOne("SELECT left(encode(sha256(convert_to(\(texts.joined(separator: "\u{1}")), 'UTF8')), 'hex'), 16)")
            .decode(String.self, at: 0)
        let name = "habit_template_\(digest)"
        try admin.execute("SELECT pg_advisory_lock(\(Int64(0x7465_6D70_6C61_7465)))")
        defer { _ = try? admin.execute("SELECT pg_advisory_unlock(\(Int64(0x7465_6D70_6C61_7465)))") }
        let exists = try admin.queryOne("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = \(name))").decode(Bool.self, at: 0)
        if !exists {
            let building = name + "_building"
            try admin.execute(Query(unsafeSQL: "DROP DATABASE IF EXISTS \(building) WITH (FORCE)"))
            try admin.execute(Query(unsafeSQL: "CREATE DATABASE \(building)"))
            let connection = try Connection(try ConnectionString.applying(["dbname": building], to: serverURL))
            try migrator.migrate(connection)
            connection.close()
            try admin.execute(Query(unsafeSQL: "ALTER DATABASE \(building) RENAME TO \(name)"))
        }
        templateName = name
        return name
    }
}

public enum TestDatabaseError: Error, CustomStringConvertible {
    case noServer(underlying: String)

    public var description: String {
        switch self {
        case .noServer(let underlying):
            """
            These tests need PostgreSQL and none answered at DATABASE_URL=\(TestDatabase.serverURL.isEmpty ? "(unset)" : TestDatabase.serverURL).
            Run the whole suite with scripts/test.sh (it starts a throwaway server), or start one with
            `eval "$(scripts/pg-tmp start)"` and re-run. Underlying error: \(underlying)
            """
        }
    }
}
