import Foundation
import HabitStore
import PostgresClient

/// The suites' databases on a Citus cluster (`scripts/test-citus.sh`, issue 34): with
/// `HABIT_TEST_CITUS=1`, `DATABASE_URL` is a coordinator whose `postgres` database lists its
/// nodes (`scripts/citus-tmp start` registers them there), and every `TestDatabase` is a
/// database of the same name on each node, with the citus extension, the nodes registered in
/// the coordinator's copy, migrated on the coordinator and distributed (`habit db distribute`,
/// 4 shards per table so that one user's rows and another's land on different workers).
///
/// A migrated database is copied from a template made once per process and schema (as for
/// plain PostgreSQL): each node copies its own part of it, and the copies agree, because
/// Citus' metadata names shards and nodes, never the database.
public struct CitusCluster: Sendable {
    public struct Node: Sendable, Hashable {
        public let host: String
        public let port: Int
    }

    /// The worker nodes (the coordinator is `TestDatabase.serverURL`'s server).
    public let workers: [Node]
    public let coordinator: Node

    public static let current: CitusCluster? = {
        guard ProcessInfo.processInfo.environment["HABIT_TEST_CITUS"] == "1" else { return nil }
        do {
            let admin = try TestDatabase.adminConnection()
            defer { admin.close() }
            let nodes = try admin.query("SELECT nodename, nodeport, groupid FROM pg_catalog.pg_dist_node WHERE noderole = 'primary' ORDER BY groupid")
                .map { (Node(host: try $0.decode(String.self, at: 0), port: Int(try $0.decode(Int32.self, at: 1))), try $0.decode(Int32.self, at: 2)) }
            guard let coordinator = nodes.first(where: { $0.1 == 0 })?.0, nodes.count > 1 else {
                fatalError("HABIT_TEST_CITUS=1, but the postgres database at DATABASE_URL lists no coordinator and workers (scripts/citus-tmp start)")
            }
            return CitusCluster(workers: nodes.filter { $0.1 != 0 }.map(\.0), coordinator: coordinator)
        } catch {
            fatalError("HABIT_TEST_CITUS=1, but the coordinator at DATABASE_URL did not answer: \(error)")
        }
    }()

    private var allNodes: [Node] { [coordinator] + workers }

    private func adminURL(_ node: Node, database: String = "postgres") throws -> String {
        try ConnectionString.applying(["host": node.host, "port": String(node.port), "dbname": database], to: TestDatabase.serverURL)
    }

    private func onEveryNode(database: String = "postgres", _ body: (Connection, Node) throws -> Void) throws {
        for node in allNodes {
            let connection = try Connection(try adminURL(node, database: database), applicationName: "habit-tests")
            defer { connection.close() }
            try body(connection, node)
        }
    }

    func create(migrated: Bool) throws -> TestDatabase {
        let name = "habit_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        let templates = try Self.templates(self)
        let template = migrated ? templates.migrated : templates.empty
        try onEveryNode { connection, _ in try Self.copy(template, to: name, on: connection) }
        // A copy does not inherit the database's settings (pg_db_role_setting).
        let admin = try Connection(try adminURL(coordinator), applicationName: "habit-tests")
        defer { admin.close() }
        try Distribution.applyDatabaseSettings(admin, database: name)
        return TestDatabase(url: try adminURL(coordinator, database: name), name: name)
    }

    func drop(_ name: String) {
        try? onEveryNode { connection, _ in
            _ = try? connection.execute(Query(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"))
        }
    }

    /// A database on every node with the citus extension, the nodes registered on the coordinator.
    private func makeEmpty(_ name: String) throws {
        try onEveryNode { connection, _ in
            try connection.execute(Query(unsafeSQL: "CREATE DATABASE \(name)"))
        }
        try onEveryNode(database: name) { connection, _ in try connection.execute("CREATE EXTENSION IF NOT EXISTS citus") }
        let connection = try Connection(try adminURL(coordinator, database: name), applicationName: "habit-tests")
        defer { connection.close() }
        try connection.execute("SELECT citus_set_coordinator_host(\(coordinator.host), \(Int32(coordinator.port)))")
        for worker in workers {
            try connection.execute("SELECT citus_add_node(\(worker.host), \(Int32(worker.port)))")
        }
    }

    /// CREATE DATABASE … TEMPLATE refuses a template anyone is connected to; Citus' maintenance
    /// daemon may still be, for a moment after the template was made.
    private static func copy(_ template: String, to name: String, on connection: Connection) throws {
        try whenUnused(template, on: connection) {
            try connection.execute(Query(unsafeSQL: "CREATE DATABASE \(name) TEMPLATE \(template)"))
        }
    }

    /// Runs `command`, which needs `database` to have no sessions (55006 otherwise), after
    /// ending the ones it has: Citus' maintenance worker comes back for a moment, so up to 50
    /// tries, 0.1 s apart.
    private static func whenUnused(_ database: String, on connection: Connection, _ command: () throws -> Void) throws {
        for attempt in 1...50 {
            _ = try connection.query("""
                SELECT pg_catalog.pg_terminate_backend(pid) FROM pg_catalog.pg_stat_activity
                WHERE datname = \(database) AND pid <> pg_catalog.pg_backend_pid()
                """)
            do {
                try command()
                return
            } catch let error as PostgresError where error.sqlState == "55006" && attempt < 50 {
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
    }

    nonisolated(unsafe) private static var templateNames: (empty: String, migrated: String)?
    private static let templateLock = NSLock()

    /// The two templates, made once, before any test database: an empty one (the extension, the
    /// nodes registered) and a migrated, distributed one copied from it. Registering nodes
    /// (citus_add_node) copies every role's attributes from the coordinator to the workers, so
    /// it takes `authenticated`'s LOGIN there away; it happens here only, and `habit db
    /// distribute` (the migrated template's) gives it back before any test runs a request.
    private static func templates(_ cluster: CitusCluster) throws -> (empty: String, migrated: String) {
        templateLock.lock()
        defer { templateLock.unlock() }
        if let templateNames { return templateNames }
        let migrator = try Migrator(directory: TestDatabase.migrationsDirectory)
        let texts = migrator.migrations.map { $0.fileName + "\n" + $0.sql } + migrator.currentStateFiles.map { $0.path + "\n" + $0.sql }
        let admin = try TestDatabase.adminConnection()
        defer { admin.close() }
        let digest = try admin.queryOne("SELECT left(encode(sha256(convert_to(\(texts.joined(separator: "\u{1}")), 'UTF8')), 'hex'), 16)")
            .decode(String.self, at: 0)
        let name = "habit_citus_template_\(digest)"
        let empty = "habit_citus_empty_template"
        try admin.execute("SELECT pg_advisory_lock(\(Int64(0x7465_6D70_6C61_7465)))")
        defer { _ = try? admin.execute("SELECT pg_advisory_unlock(\(Int64(0x7465_6D70_6C61_7465)))") }
        func exists(_ database: String) throws -> Bool {
            try admin.queryOne("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = \(database))").decode(Bool.self, at: 0)
        }
        if try !exists(empty) {
            let building = empty + "_building"
            cluster.drop(building)
            try cluster.makeEmpty(building)
            try cluster.rename(building, to: empty)
        }
        if try !exists(name) {
            let building = name + "_building"
            cluster.drop(building)
            try cluster.onEveryNode { connection, _ in try Self.copy(empty, to: building, on: connection) }
            let connection = try Connection(try cluster.adminURL(cluster.coordinator, database: building))
            try migrator.migrate(connection)
            try Distribution.distribute(connection, migrator: migrator, shardCount: 4)
            connection.close()
            try cluster.rename(building, to: name)
        }
        templateNames = (empty, name)
        return (empty, name)
    }

    /// ALTER DATABASE … RENAME on every node, once Citus' maintenance worker has let go of it.
    private func rename(_ database: String, to name: String) throws {
        try onEveryNode { connection, _ in
            try Self.whenUnused(database, on: connection) {
                try connection.execute(Query(unsafeSQL: "ALTER DATABASE \(database) RENAME TO \(name)"))
            }
        }
    }
}

extension PostgresError {
    /// This error with the constraint, table and column a Citus coordinator drops read back from
    /// its message (`recoverFieldsDroppedByCitus`); on PostgreSQL, the error as it is.
    public var withFieldsCitusDrops: PostgresError {
        var error = self
        error.recoverFieldsDroppedByCitus()
        return error
    }
}

