import Foundation
import PostgresClient

/// Distributing a migrated database over a Citus cluster (`habit db distribute`, issue 34):
/// every user-owned table sharded by `user_id` and co-located with `public.profiles`, so each
/// request (which acts for one user and names that user in every statement) is a transaction
/// on one shard group of one worker node; the shared lists become reference tables (a copy on
/// every node, for the foreign keys and triggers that read them). docs/scaling.md, "Citus".
///
/// Idempotent: what is already distributed is left alone, so a run that stopped half way is
/// finished by the next one. Run after `habit migrate`, on the coordinator, as the owner of the
/// schema (the migrator's role).
public enum Distribution {
    /// The user-owned tables in the order they are distributed: a table after the tables its
    /// foreign keys reference. The first one starts the co-location group the others join.
    public static let distributedTables = [
        "public.profiles", "public.habit_templates", "public.task_lists",
        "public.habit_periods", "public.habit_completions", "public.habit_skips",
        "public.habit_streak_state", "public.habit_streak_runs", "public.tasks",
        "public.weekly_completion_counts",
        "habit.sync_clocks", "habit.sync_mutations", "habit.sync_tombstones",
        "habit.user_row_counts", "habit.weekly_counts_dirty",
    ]

    /// Shared lists read by the user tables' keys and triggers: copied to every node.
    public static let referenceTables = ["habit.time_zones", "habit.row_limits", "habit.weekly_counts_state"]

    /// The roles a request or an admin switches to (SET ROLE). Citus opens its connections to
    /// the workers as the current role, so on the workers these must be able to log in; on the
    /// coordinator they stay NOLOGIN (nobody connects to it as them).
    public static let switchedToRoles = ["authenticated", "anon", "service_role", "habit_admin"]

    /// Whether this database is a Citus coordinator (has the citus extension).
    public static func isCoordinator(_ connection: Connection) throws -> Bool {
        try connection.queryOne("SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus')")
            .decode(Bool.self, at: 0)
    }

    public struct Report: Sendable, Equatable {
        /// Tables distributed or made reference tables by this run.
        public var tables: [String] = []
        /// Tables that already were.
        public var alreadyDone: [String] = []
        /// Roles given LOGIN on the workers by this run.
        public var roles: [String] = []
        /// Current-state files applied again (their objects now propagated to the workers).
        public var files: [String] = []
    }

    public static func distribute(_ connection: Connection, migrator: Migrator, shardCount: Int? = nil) throws -> Report {
        guard try isCoordinator(connection) else { throw DistributionError.notCoordinator }
        let pending = try migrator.status(connection).filter(\.pending).map(\.path)
        guard pending.isEmpty else { throw DistributionError.notMigrated(pending: pending) }
        if let shardCount, !(1...64_000).contains(shardCount) { throw DistributionError.badShardCount(shardCount) }

        var report = Report()
        report.roles = try giveWorkersTheSwitchedToRoles(connection)

        let done = Set(try connection.query("SELECT logicalrelid::regclass::text FROM pg_catalog.pg_dist_partition")
            .map { try $0.decode(String.self, at: 0) })
        // regclass prints public tables without their schema.
        func isDone(_ table: String) -> Bool {
            done.contains(table) || done.contains(table.replacingOccurrences(of: "public.", with: ""))
        }
        try connection.withTransaction { connection in
            // The triggers are row-level and write only rows of the firing row's user_id, which
            // is what this setting is for (docs/scaling.md); transaction-local.
            try connection.execute("SELECT set_config('citus.enable_unsafe_triggers', 'on', true)")
            // Keys to reference tables added in the transaction that made them: Citus refuses
            // that after a parallel (multi-connection) operation, so one connection per node.
            try connection.execute("SELECT set_config('citus.multi_shard_modify_mode', 'sequential', true)")
            if let shardCount { try connection.execute("SELECT set_config('citus.shard_count', \(String(shardCount)), true)") }

            // A table cannot become a reference table while a local table's foreign key points
            // at it: those keys go, and come back once both sides are in Citus' metadata.
            let keys = try connection.query("""
                SELECT c.conrelid::regclass::text, c.conname, pg_catalog.pg_get_constraintdef(c.oid)
                FROM pg_catalog.pg_constraint c
                WHERE c.contype = 'f' AND c.confrelid::regclass::text = ANY (pg_catalog.string_to_array(\(referenceTables.joined(separator: ",")), ','))
                  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition d WHERE d.logicalrelid = c.conrelid)
                """).map { (table: try $0.decode(String.self, at: 0), name: try $0.decode(String.self, at: 1), definition: try $0.decode(String.self, at: 2)) }
            for key in keys {
                try connection.execute(Query(unsafeSQL: "ALTER TABLE \(key.table) DROP CONSTRAINT \(key.name)"))
            }
            for table in referenceTables {
                if isDone(table) { report.alreadyDone.append(table); continue }
                try connection.execute("SELECT create_reference_table(\(table)::regclass)")
                report.tables.append(table)
            }
            for table in distributedTables {
                if isDone(table) { report.alreadyDone.append(table); continue }
                let colocation = table == distributedTables[0] ? "none" : distributedTables[0]
                try connection.execute("SELECT create_distributed_table(\(table)::regclass, 'user_id', colocate_with => \(colocation))")
                report.tables.append(table)
            }
            for key in keys {
                try connection.execute(Query(unsafeSQL: "ALTER TABLE \(key.table) ADD CONSTRAINT \(key.name) \(key.definition)"))
            }
        }

        // Functions, views, triggers, policies and grants made before the tables were in
        // Citus' metadata stayed on the coordinator ("has dependency to table … that is not in
        // Citus' metadata"); made again now, Citus propagates them to every node, where the
        // shards' triggers and policies call them. Statement by statement (SQLStatements).
        try connection.withTransaction { connection in
            try connection.execute("SELECT set_config('citus.enable_unsafe_triggers', 'on', true)")
            for file in migrator.currentStateFiles {
                for statement in SQLStatements.split(file.sql) { try connection.executeScript(unsafeSQL: statement) }
                report.files.append(file.path)
            }
        }
        return report
    }

    /// LOGIN for the switched-to roles on the workers only: granted with Citus propagating the
    /// ALTER ROLE to every node, then taken back on the coordinator alone.
    private static func giveWorkersTheSwitchedToRoles(_ connection: Connection) throws -> [String] {
        let roles = try connection.query("""
            SELECT rolname FROM pg_catalog.pg_roles WHERE rolname = ANY (pg_catalog.string_to_array(\(switchedToRoles.joined(separator: ",")), ',')) ORDER BY rolname
            """).map { try $0.decode(String.self, at: 0) }
        for role in roles {
            try connection.execute(Query(unsafeSQL: "ALTER ROLE \(role) LOGIN"))
            try connection.withTransaction { connection in
                try connection.execute("SELECT set_config('citus.enable_alter_role_propagation', 'off', true)")
                try connection.execute(Query(unsafeSQL: "ALTER ROLE \(role) NOLOGIN"))
            }
        }
        return roles
    }
}

public enum DistributionError: Error, CustomStringConvertible, Equatable {
    case notCoordinator
    case notMigrated(pending: [String])
    case badShardCount(Int)

    public var description: String {
        switch self {
        case .notCoordinator:
            "this database is not a Citus coordinator (no citus extension): CREATE EXTENSION citus and add the worker nodes first (docs/scaling.md, \"Citus\")"
        case .notMigrated(let pending):
            "the schema is not migrated (\(pending.count) pending: \(pending.prefix(3).joined(separator: ", "))\(pending.count > 3 ? ", …" : "")): run `habit migrate` first"
        case .badShardCount(let count):
            "--shard-count \(count) is out of range: 1 to 64000"
        }
    }
}
