import Foundation
import PostgresClient

/// Distributing a migrated database over a Citus cluster (`habit db distribute`, issue 34):
/// every user-owned table sharded by `user_id` and co-located with `public.profiles`, so each
/// request (which acts for one user and names that user in every statement) is a transaction
/// on one shard group of one worker node; the shared lists become reference tables (a copy on
/// every node, for the foreign keys and triggers that read them). docs/scaling.md, "Running on Citus".
///
/// Idempotent: what is already distributed is left alone, so a run that stopped half way is
/// finished by the next one. Run after `habit migrate`, on the coordinator, as the owner of the
/// schema (the migrator's role).
public enum Distribution {
    /// The table whose co-location group every user-owned table joins.
    public static let colocationTable = "public.profiles"

    /// The user-owned tables, read from the catalog as ShardingReadinessTests reads them (every
    /// table of `public`, `habit` and `auth` with a `user_id` column, so a table added later is
    /// distributed too), in the order they can be distributed: `public.profiles` first (it
    /// starts the co-location group), then each table once every user table its foreign keys
    /// point at is placed (a key to a table not yet distributed is refused: the reminders'
    /// claims point at the reminders, which point at the habits), by name among those ready.
    public static func userTables(_ connection: Connection) throws -> [String] {
        let tables = try connection.query("""
            SELECT c.oid::regclass::text
            FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relkind IN ('r', 'p') AND n.nspname IN ('public', 'habit', 'auth')
              AND EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'user_id' AND NOT a.attisdropped)
            ORDER BY c.oid <> \(colocationTable)::regclass, n.nspname, c.relname
            """).map { try $0.decode(String.self, at: 0) }
        let references = try connection.query("""
            SELECT k.conrelid::regclass::text, k.confrelid::regclass::text FROM pg_catalog.pg_constraint k
            WHERE k.contype = 'f' AND k.conrelid <> k.confrelid
            """).map { (from: try $0.decode(String.self, at: 0), to: try $0.decode(String.self, at: 1)) }
        let userTables = Set(tables)
        var needs: [String: Set<String>] = [:]
        for reference in references where userTables.contains(reference.from) && userTables.contains(reference.to) {
            needs[reference.from, default: []].insert(reference.to)
        }
        var ordered: [String] = [], placed = Set<String>(), left = tables
        while !left.isEmpty {
            // The first table (catalog order: profiles, then by name) whose references are placed;
            // a cycle (none today) falls back to the first left.
            let index = left.firstIndex { (needs[$0] ?? []).isSubset(of: placed) } ?? 0
            let table = left.remove(at: index)
            ordered.append(table)
            placed.insert(table)
        }
        return ordered
    }

    /// Shared lists read by the user tables' keys and triggers: copied to every node.
    public static let referenceTables = ["habit.time_zones", "habit.row_limits", "habit.weekly_counts_state"]

    /// The SECURITY DEFINER functions a request calls (directly, or through habit.lock_user_writes
    /// in the creates) as the whole of its statement, with its user as the first argument: made
    /// distributed functions, co-located with the user tables, whose calls Citus sends whole to
    /// the node holding that user (force_delegation: also inside the explicit transaction block
    /// a request runs in on Citus). On the coordinator, their statements as the owner and the
    /// request's own as `authenticated` would travel on two connections, one per role, which
    /// Citus refuses ("cannot perform query on placements that were modified in this
    /// transaction by a different user"); on the worker node both are local, in one session.
    /// Only these: inside a forced delegation Citus insists that every statement name the
    /// call's user in a form its router recognises, which the rule functions' joins do not
    /// ("queries must filter by the distribution argument"), while the other functions' and
    /// triggers' statements run fine from the coordinator. habit.import_account is not among
    /// them: inside a forced delegation Citus refuses every INSERT … SELECT, and the import
    /// writes the staged document with those; from the coordinator each goes to the user's
    /// shards whole.
    public static let delegatedFunctions = [
        "habit.create_habit(uuid,uuid,text,text,text,timestamptz,integer,jsonb,jsonb,uuid)",
        "habit.create_habit(uuid,uuid,text,text,text,timestamptz,integer,jsonb,jsonb)",
        "habit.create_habit(uuid,uuid,text,text,text,timestamptz,integer,jsonb)",
        "habit.create_habit(uuid,uuid,text,text,text,timestamptz,integer)",
        "habit.create_list(uuid,uuid,text)",
        "habit.create_area(uuid,uuid,text)",
        "habit.move_habit(uuid,uuid,uuid,uuid)",
        "habit.move_area(uuid,uuid,uuid,uuid)",
        "habit.set_habit_archived(uuid,uuid,boolean)",
        "habit.create_task(uuid,uuid,text,text,uuid,date,integer)",
        "habit.change_token(uuid)",
        "habit.sync_mutation_claim(uuid,text,text)",
        "habit.sync_mutation_record(uuid,text,text,jsonb)",
        "habit.prune_replay_records(uuid)",
        "habit.delete_account(uuid)",
    ]

    /// The roles a request or an admin switches to (SET ROLE). Citus opens its connections to
    /// the workers as the current role, so on the workers these must be able to log in; on the
    /// coordinator they stay NOLOGIN (nobody connects to it as them).
    public static let switchedToRoles = ["authenticated", "anon", "service_role", "habit_admin", "habit_batch"]

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
        /// Functions given their Citus form (`adaptFunctions`).
        public var adaptedFunctions: [String] = []
    }

    public static func distribute(_ connection: Connection, migrator: Migrator, shardCount: Int? = nil) throws -> Report {
        guard try isCoordinator(connection) else { throw DistributionError.notCoordinator }
        let pending = try migrator.status(connection).filter(\.pending).map(\.path)
        guard pending.isEmpty else { throw DistributionError.notMigrated(pending: pending) }
        if let shardCount, !(1...64_000).contains(shardCount) { throw DistributionError.badShardCount(shardCount) }

        var report = Report()

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
            for table in try userTables(connection) {
                if isDone(table) { report.alreadyDone.append(table); continue }
                let colocation = table == "profiles" ? "none" : colocationTable
                try connection.execute("SELECT create_distributed_table(\(table)::regclass, 'user_id', colocate_with => \(colocation))")
                report.tables.append(table)
            }
            for key in keys {
                try connection.execute(Query(unsafeSQL: "ALTER TABLE \(key.table) ADD CONSTRAINT \(key.name) \(key.definition)"))
            }
        }

        try applyDatabaseSettings(connection)

        // Functions, views, triggers, policies and grants made before the tables were in
        // Citus' metadata stayed on the coordinator ("has dependency to table … that is not in
        // Citus' metadata"); made again now, Citus propagates them to every node, where the
        // shards' triggers and policies call them. Statement by statement (SQLStatements).
        try connection.withTransaction { connection in
            try connection.execute("""
                SELECT set_config('citus.enable_unsafe_triggers', 'on', true),
                       set_config('citus.multi_shard_modify_mode', 'sequential', true)
                """)
            for file in migrator.currentStateFiles {
                for statement in SQLStatements.split(file.sql) { try connection.executeScript(unsafeSQL: statement) }
                report.files.append(file.path)
            }
            report.adaptedFunctions = try adaptFunctions(connection)
            for function in delegatedFunctions {
                try connection.execute("""
                    SELECT create_distributed_function(\(function)::regprocedure, '$1',
                                                       colocate_with => \(colocationTable), force_delegation => true)
                    """)
            }
        }
        // Last: Citus copies a role's attributes from the coordinator to the workers whenever
        // it first propagates an object that depends on the role (the tables and functions
        // above), which takes this LOGIN away again.
        report.roles = try giveWorkersTheSwitchedToRoles(connection)
        return report
    }

    /// Two defaults of the database, on every node, for sessions that start after them:
    ///
    /// - `citus.propagate_set_commands = 'local'` (on the coordinator): every SET LOCAL of a
    ///   transaction reaches the worker nodes it uses, where the shards' triggers and policies
    ///   read them: the worker's claims, an admin's `SET LOCAL habit.backfill = 'on'` (a
    ///   set_config() call or a session-level SET never does; docs/admin.md).
    /// - `citus.allow_nested_distributed_execution = on` (on every node): a statement Citus sends
    ///   to a shard may call one of our functions that reads the user's other tables
    ///   (habit.user_time_zone reads profiles; habit.habits_on, periods), a distributed query
    ///   inside a query on a shard, which Citus refuses by default because the inner query could
    ///   reach another node on another connection. Ours read only the same user's rows, which
    ///   are co-located on that node, so they run on its shards in the same transaction (local
    ///   execution), which is what makes them correct.
    public static func applyDatabaseSettings(_ connection: Connection) throws {
        let database = try connection.queryOne("SELECT current_database()").decode(String.self, at: 0)
        try applyDatabaseSettings(connection, database: database)
    }

    /// As above, for `database` (a copy made from a template does not inherit the settings),
    /// from a connection to any database of the coordinator that has the citus extension.
    public static func applyDatabaseSettings(_ connection: Connection, database: String) throws {
        let quoted = "\"" + database.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        try connection.executeScript(unsafeSQL: "ALTER DATABASE \(quoted) SET citus.propagate_set_commands = 'local'")
        let nested = "ALTER DATABASE \(quoted) SET citus.allow_nested_distributed_execution = on"
        try connection.executeScript(unsafeSQL: nested)
        // Citus propagates ALTER DATABASE … SET to the workers; said on them as well (with
        // propagation off, which Citus wants on a worker) so that a node that missed it gets it.
        let onWorkers = "SET citus.enable_ddl_propagation TO off; " + nested
        let failed = try connection.query("SELECT nodename, result FROM run_command_on_workers(\(onWorkers)) WHERE NOT success")
        if let first = failed.first {
            throw DistributionError.workerCommandFailed(node: try first.decode(String.self, at: 0), message: try first.decode(String.self, at: 1))
        }
    }

    /// Whether this coordinator's user tables are distributed (`habit db distribute` ran).
    public static func isDistributed(_ connection: Connection) throws -> Bool {
        guard try isCoordinator(connection) else { return false }
        return try connection.queryOne("""
            SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition WHERE logicalrelid = 'public.profiles'::regclass)
            """).decode(Bool.self, at: 0)
    }

    /// Two things the current-state files say for PostgreSQL that Citus cannot plan, changed on
    /// a coordinator after every application of those files (here, and by `habit migrate`):
    ///
    /// - A SQL-language function whose body reads a Citus table. PostgreSQL inlines such a
    ///   function into its caller's plan after Citus has planned the caller without its tables
    ///   ("parameterized queries for SQL functions referencing distributed tables are not
    ///   supported"), and runs a non-inlined one with its arguments as parameters Citus cannot
    ///   route. The same body becomes a PL/pgSQL function (RETURN QUERY, or SELECT … INTO a
    ///   result), whose statements Citus plans one by one: the text stays the one in sql/, only
    ///   the wrapping differs. Name clashes resolve as in SQL functions (columns first).
    /// - `SET plan_cache_mode = force_generic_plan` on a function (kept for PostgreSQL, where a
    ///   custom plan per call cost more than the probes): Citus routes a statement by the value
    ///   of its user, which a generic plan leaves a parameter, and keeps generic plans away
    ///   itself when left to choose. The setting is reset.
    ///
    /// Returns the functions changed.
    @discardableResult
    public static func adaptFunctions(_ connection: Connection) throws -> [String] {
        // What reads a distributed table: the tables, and the views over them (admin's views,
        // e.g. admin.inactive_users reads admin.user_activity), through the views' rules.
        let candidates = try connection.query("""
            WITH RECURSIVE reads(relid) AS (
                SELECT d.logicalrelid FROM pg_catalog.pg_dist_partition d
                UNION
                SELECT r.ev_class FROM pg_catalog.pg_rewrite r
                JOIN pg_catalog.pg_depend dep ON dep.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass AND dep.objid = r.oid
                                             AND dep.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
                JOIN reads ON reads.relid = dep.refobjid
                WHERE r.ev_class <> dep.refobjid
            )
            SELECT p.oid::regprocedure::text, pg_catalog.pg_get_functiondef(p.oid), p.proretset,
                   pg_catalog.pg_get_function_result(p.oid), p.prosrc
            FROM pg_catalog.pg_proc p
            WHERE p.pronamespace IN ('habit'::regnamespace, 'admin'::regnamespace, 'public'::regnamespace)
              AND p.prolang = (SELECT l.oid FROM pg_catalog.pg_language l WHERE l.lanname = 'sql')
              AND EXISTS (SELECT 1 FROM reads JOIN pg_catalog.pg_class c ON c.oid = reads.relid
                          WHERE p.prosrc ~ ('\\m' || c.relname || '\\M'))
            ORDER BY 1
            """).map { row in
            (name: try row.decode(String.self, at: 0), definition: try row.decode(String.self, at: 1),
             returnsSet: try row.decode(Bool.self, at: 2), result: try row.decode(String.self, at: 3),
             body: try row.decode(String.self, at: 4))
        }
        var changed: [String] = []
        for function in candidates {
            var body = function.body.trimmingCharacters(in: .whitespacesAndNewlines)
            while body.hasSuffix(";") { body = String(body.dropLast()).trimmingCharacters(in: .whitespacesAndNewlines) }
            let wrapped = function.returnsSet
                ? "#variable_conflict use_column\nBEGIN\nRETURN QUERY\n\(body);\nEND"
                : "#variable_conflict use_column\nDECLARE result \(function.result);\nBEGIN\n\(body)\nINTO result;\nRETURN result;\nEND"
            // pg_get_functiondef: "… LANGUAGE sql …\nAS $function$<body>$function$\n".
            guard let languageRange = function.definition.range(of: "\n LANGUAGE sql\n"),
                  let bodyStart = function.definition.range(of: "\nAS $function$") else {
                throw DistributionError.unexpectedDefinition(function.name)
            }
            var definition = function.definition
            definition.replaceSubrange(bodyStart.lowerBound..<definition.endIndex, with: "\nAS $habit_citus$\(wrapped)$habit_citus$")
            definition.replaceSubrange(languageRange, with: "\n LANGUAGE plpgsql\n")
            try connection.executeScript(unsafeSQL: definition)
            changed.append(function.name)
        }
        let generic = try connection.query("""
            SELECT p.oid::regprocedure::text FROM pg_catalog.pg_proc p
            WHERE p.pronamespace IN ('habit'::regnamespace, 'admin'::regnamespace, 'public'::regnamespace)
              AND 'plan_cache_mode=force_generic_plan' = ANY (p.proconfig)
            ORDER BY 1
            """).map { try $0.decode(String.self, at: 0) }
        for function in generic {
            try connection.executeScript(unsafeSQL: "ALTER FUNCTION \(function) RESET plan_cache_mode")
            changed.append(function)
        }
        return changed
    }

    /// LOGIN for the switched-to roles on the workers only.
    private static func giveWorkersTheSwitchedToRoles(_ connection: Connection) throws -> [String] {
        let roles = try connection.query("""
            SELECT rolname FROM pg_catalog.pg_roles WHERE rolname = ANY (pg_catalog.string_to_array(\(switchedToRoles.joined(separator: ",")), ',')) ORDER BY rolname
            """).map { try $0.decode(String.self, at: 0) }
        for role in roles {
            // Said on the workers only (with propagation off, which Citus wants there): the
            // coordinator never lets these roles log in, not even for a moment.
            let command = "SET citus.enable_ddl_propagation TO off; ALTER ROLE \(role) LOGIN"
            let failed = try connection.query("SELECT nodename, result FROM run_command_on_workers(\(command)) WHERE NOT success")
            if let first = failed.first {
                throw DistributionError.workerCommandFailed(node: try first.decode(String.self, at: 0), message: try first.decode(String.self, at: 1))
            }
        }
        return roles
    }
}

public enum DistributionError: Error, CustomStringConvertible, Equatable {
    case notCoordinator
    case notMigrated(pending: [String])
    case badShardCount(Int)
    case unexpectedDefinition(String)
    case workerCommandFailed(node: String, message: String)

    public var description: String {
        switch self {
        case .notCoordinator:
            "this database is not a Citus coordinator (no citus extension): CREATE EXTENSION citus and add the worker nodes first (docs/scaling.md, \"Citus\")"
        case .notMigrated(let pending):
            "the schema is not migrated (\(pending.count) pending: \(pending.prefix(3).joined(separator: ", "))\(pending.count > 3 ? ", …" : "")): run `habit migrate` first"
        case .workerCommandFailed(let node, let message):
            "the worker node \(node) refused a setting: \(message)"
        case .unexpectedDefinition(let name):
            "pg_get_functiondef(\(name)) has no form this build knows; it was left as it is"
        case .badShardCount(let count):
            "--shard-count \(count) is out of range: 1 to 64000"
        }
    }
}
