import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// `habit db distribute` and what it leans on (issue 34): the statement splitter a coordinator
/// needs, the error fields read back from messages, the refusal on plain PostgreSQL, and, on a
/// Citus cluster (`scripts/test-citus.sh`), what a distributed database holds.
@Suite struct DistributionTests {
    @Test("the splitter cuts at top-level semicolons only: quotes, dollar quotes, comments and E-strings keep theirs")
    func splitsStatements() {
        let script = """
            -- a comment; with a semicolon
            SET LOCAL check_function_bodies = off;
            CREATE FUNCTION f() RETURNS text LANGUAGE plpgsql AS $fn$
            BEGIN
                RETURN 'a;b' || $$c;d$$; -- inside the body
            END
            $fn$;
            /* a block; /* nested; */ still comment; */
            COMMENT ON FUNCTION f() IS 'it''s; fine';
            SELECT E'back\\';slash', "odd;name" FROM t;
            SELECT $1;  -- a parameter, not a dollar quote
            ;;
            """
        #expect(SQLStatements.split(script) == [
            "-- a comment; with a semicolon\nSET LOCAL check_function_bodies = off",
            "CREATE FUNCTION f() RETURNS text LANGUAGE plpgsql AS $fn$\nBEGIN\n    RETURN 'a;b' || $$c;d$$; -- inside the body\nEND\n$fn$",
            "/* a block; /* nested; */ still comment; */\nCOMMENT ON FUNCTION f() IS 'it''s; fine'",
            "SELECT E'back\\';slash', \"odd;name\" FROM t",
            "SELECT $1",
        ])
        #expect(SQLStatements.split("-- only a comment\n  ") == [])
    }

    @Test("every file of sql/ splits into statements that PostgreSQL runs as the whole file does",
          // On Citus, migrating a new database propagates its schemas, whose owner's and grantees'
          // attributes Citus copies to the workers: it would take authenticated's LOGIN there
          // from the other tests' databases (docs/scaling.md, "Running on Citus").
          .enabled(if: CitusCluster.current == nil, "migrating a fresh database on a coordinator resets the workers' roles"))
    func sqlFilesSplitCleanly() throws {
        let migrator = try Migrator(directory: TestDatabase.migrationsDirectory)
        for file in migrator.currentStateFiles {
            let statements = SQLStatements.split(file.sql)
            #expect(!statements.isEmpty, "\(file.path)")
            // No piece may end inside a body: each dollar-quote tag appears an even number of times.
            for statement in statements {
                for tag in ["$fn$", "$$"] {
                    #expect(statement.components(separatedBy: tag).count % 2 == 1, "\(file.path): \(statement.prefix(80))")
                }
            }
        }
        // And a database migrated statement by statement is the database migrated whole.
        try TestDatabase.with(migrated: false) { database in
            let connection = try database.connect()
            defer { connection.close() }
            for migration in migrator.migrations {
                try connection.withTransaction { connection in
                    for statement in SQLStatements.split(migration.sql) { try connection.executeScript(unsafeSQL: statement) }
                }
            }
            for file in migrator.currentStateFiles {
                try connection.withTransaction { connection in
                    for statement in SQLStatements.split(file.sql) { try connection.executeScript(unsafeSQL: statement) }
                }
            }
            let whole = try TestDatabase.create()
            defer { whole.drop() }
            #expect(try CatalogSnapshot.dump(database) == CatalogSnapshot.dump(whole))
        }
    }

    @Test("the fields a Citus coordinator drops are read back from the messages; errors that have them keep them")
    func fieldsFromMessages() {
        func recovered(_ state: SQLState, _ message: String) -> PostgresError {
            var error = PostgresError(kind: .server, message: message, sqlState: state)
            error.recoverFieldsDroppedByCitus()
            return error
        }
        #expect(recovered(.foreignKeyViolation, #"insert or update on table "habit_completions_102040" violates foreign key constraint "habit_completions_template_fkey_102040""#)
            .constraint == "habit_completions_template_fkey")
        #expect(recovered(.checkViolation, #"new row for relation "habit_templates_102008" violates check constraint "habit_templates_name_check_102008""#)
            .constraint == "habit_templates_name_check")
        #expect(recovered(.checkViolation, #"completing on 1969-12-31 is before 1970-01-01: violates check constraint "habit_completions_date_range""#)
            .constraint == "habit_completions_date_range")
        #expect(recovered(.rowLimitExceeded, "user 7d9f0e2a-3c41-4b8e-9a57-1f2e3d4c5b6a would hold 3 rows in task_lists; the limit is 2").table == "task_lists")
        #expect(recovered(.importRefused, "document.habits[0].periods[1].started_at: overlaps the period before").column
            == "document.habits[0].periods[1].started_at")
        #expect(recovered(.importRefused, "import_account acts only for the caller").column == nil)
        var kept = PostgresError(kind: .server, message: #"violates check constraint "other""#, sqlState: .checkViolation)
        kept.constraint = "habit_templates_name_check"
        kept.recoverFieldsDroppedByCitus()
        #expect(kept.constraint == "habit_templates_name_check")
    }

    @Test("habit db distribute on PostgreSQL without Citus: refused, saying so, nothing changed",
          .enabled(if: CitusCluster.current == nil, "the database is a coordinator here"))
    func refusedWithoutCitus() throws {
        try TestDatabase.with { database in
            let connection = try database.connect()
            defer { connection.close() }
            let migrator = try Migrator(directory: TestDatabase.migrationsDirectory)
            #expect(throws: DistributionError.notCoordinator) { try Distribution.distribute(connection, migrator: migrator) }
            let result = try WorkerProcess.run(try WorkerProcess.binaryPath(), ["db", "distribute", "--database-url", database.url],
                                               environment: WorkerProcess.childEnvironment())
            #expect(result.status == 1 && result.stderr.contains("not a Citus coordinator"), "\(result.stderr)")
        }
    }

    @Test("on Citus: every user table distributed by user_id in one co-location group, the lists as reference tables; a second run changes nothing; a later migrate keeps it so",
          .enabled(if: CitusCluster.current != nil, "needs a Citus cluster (scripts/test-citus.sh)"))
    func distributedDatabase() throws {
        try TestDatabase.with { database in
            let connection = try database.connect()
            defer { connection.close() }
            let tables = try connection.query("""
                SELECT logicalrelid::regclass::text, partmethod::text, colocationid,
                       coalesce(column_to_column_name(logicalrelid, partkey), '') FROM pg_dist_partition ORDER BY 1
                """).map { (try $0.decode(String.self, at: 0), try $0.decode(String.self, at: 1),
                            try $0.decode(Int32.self, at: 2), try $0.decode(String.self, at: 3)) }
            let distributed = tables.filter { $0.1 == "h" }
            // Every table with a user_id column, whatever its schema (ShardingReadinessTests' list).
            let owned = try connection.query("""
                SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE c.relkind = 'r' AND n.nspname IN ('public', 'habit', 'auth')
                  AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'user_id' AND NOT a.attisdropped)
                """).map { try $0.decode(String.self, at: 0) }
            #expect(owned.count >= 15 && Set(distributed.map { $0.0 }) == Set(owned), "\(owned)")
            #expect(distributed.allSatisfy { $0.3 == "user_id" })
            #expect(Set(distributed.map(\.2)).count == 1, "one co-location group: \(distributed)")
            #expect(Set(tables.filter { $0.1 == "n" }.map { $0.0 }) == Set(Distribution.referenceTables))
            let delegated = try connection.queryOne("""
                SELECT count(*) FROM pg_dist_object WHERE classid = 'pg_proc'::regclass AND force_delegation
                """).decode(Int.self, at: 0)
            #expect(delegated == Distribution.delegatedFunctions.count)
            let again = try Distribution.distribute(connection, migrator: try Migrator(directory: TestDatabase.migrationsDirectory))
            #expect(again.tables.isEmpty && again.alreadyDone.count == tables.count, "\(again)")
            // No SQL function that reads a distributed table is left for PostgreSQL to inline.
            #expect(try Distribution.adaptFunctions(connection).isEmpty)
            // A later `habit migrate` that applies every current-state file again (as after a
            // new versioned migration): the triggers of distributed tables are made again, and
            // the functions keep their Citus form.
            try connection.execute("UPDATE habit.current_state_files SET checksum = 'stale'")
            let migrator = try Migrator(directory: TestDatabase.migrationsDirectory)
            let report = try migrator.migrate(connection)
            #expect(report.appliedFiles.count == migrator.currentStateFiles.count)
            #expect(try Distribution.adaptFunctions(connection).isEmpty)
        }
    }
}
