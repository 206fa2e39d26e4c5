import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

@Suite struct MigrationTests {
    let migrations = try! MigrationSource.load(directory: TestDatabase.migrationsDirectory)

    @Test func migratesAnEmptyDatabaseOnceAndThenIsANoOp() throws {
        try TestDatabase.with(migrated: false) { database throws in
            let connection = try database.connect()
            #expect(try Migrator.schemaVersion(connection) == 0)
            let first = try Migrator(migrations: migrations).migrate(connection)
            #expect(first.applied == migrations.map(\.version))
            #expect(try Migrator.schemaVersion(connection) == migrations.last!.version)
            let second = try Migrator(migrations: migrations).migrate(connection)
            #expect(second.applied.isEmpty)
            #expect(second.alreadyApplied == migrations.map(\.version))
            let recorded = try connection.query("SELECT version, name, length(checksum) FROM habit.schema_migrations ORDER BY version")
            #expect(try recorded.map { try $0.decode(String.self, at: 1) } == migrations.map(\.fileName))
            #expect(try recorded.allSatisfy { try $0.decode(Int.self, at: 2) == 64 })
            // Every table and column carries a comment for admins reading \d+.
            let uncommented = try connection.query("""
                SELECT c.relname || '.' || coalesce(a.attname, '')
                FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
                WHERE n.nspname IN ('public', 'habit') AND c.relkind IN ('r', 'p')
                  AND (a.attname IS NULL AND obj_description(c.oid, 'pg_class') IS NULL
                       OR a.attname IS NOT NULL AND col_description(c.oid, a.attnum) IS NULL)
                """).map { try $0.decode(String.self, at: 0) }
            #expect(uncommented.isEmpty, "missing COMMENT ON: \(uncommented)")
            let withoutForcedRLS = try connection.query("""
                SELECT relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = 'public' AND c.relkind = 'r' AND NOT (c.relrowsecurity AND c.relforcerowsecurity)
                """).map { try $0.decode(String.self, at: 0) }
            #expect(withoutForcedRLS.isEmpty, "tables without forced RLS: \(withoutForcedRLS)")
        }
    }

    @Test func refusesAnEditedMigration() throws {
        try TestDatabase.with(migrated: false) { database throws in
            let connection = try database.connect()
            try Migrator(migrations: Array(migrations.prefix(2))).migrate(connection)
            var edited = migrations
            edited[1] = Migration(version: edited[1].version, fileName: edited[1].fileName, sql: edited[1].sql + "\n-- edited\n")
            let error = try #require(throws: MigrationError.self) { try Migrator(migrations: edited).migrate(connection) }
            #expect(error == .editedAfterApply(version: edited[1].version, fileName: edited[1].fileName))
            // Nothing after the edited file was applied either.
            #expect(try Migrator.schemaVersion(connection) == migrations[1].version)
        }
    }

    @Test func refusesADatabaseNewerThanTheBuild() throws {
        try TestDatabase.with(migrated: false) { database throws in
            let connection = try database.connect()
            try Migrator(migrations: migrations).migrate(connection)
            let older = Migrator(migrations: Array(migrations.dropLast()))
            #expect(throws: MigrationError.unknownAppliedVersion(migrations.last!.version)) { try older.migrate(connection) }
        }
    }

    @Test func failingMigrationLeavesNothingBehind() throws {
        try TestDatabase.with(migrated: false) { database throws in
            let connection = try database.connect()
            let broken = migrations + [Migration(version: 9999, fileName: "9999_broken.sql",
                                                 sql: "CREATE TABLE half_done (id int); SELECT no_such_function();")]
            #expect(throws: PostgresError.self) { try Migrator(migrations: broken).migrate(connection) }
            #expect(try Migrator.schemaVersion(connection) == migrations.last!.version)
            #expect(try connection.queryOne("SELECT to_regclass('half_done') IS NULL").decode(Bool.self, at: 0))
        }
    }

    @Test func concurrentMigratorsApplyEachFileOnce() throws {
        try TestDatabase.with(migrated: false) { database throws in
            let migrations = self.migrations
            let reports = LockedBox<[Migrator.Report]>([])
            let errors = runConcurrently(4) { _ in
                let connection = try database.connect()
                let report = try Migrator(migrations: migrations).migrate(connection)
                reports.withValue { $0.append(report) }
            }
            #expect(errors.isEmpty, "\(errors)")
            let applied = reports.withValue { $0.flatMap(\.applied) }.sorted()
            #expect(applied == migrations.map(\.version))
            let connection = try database.connect()
            #expect(try connection.queryOne("SELECT count(*) FROM habit.schema_migrations").decode(Int.self, at: 0) == migrations.count)
        }
    }

    /// On Supabase the roles and auth.uid() already exist; migrations use them as they are.
    @Test func keepsExistingSupabaseRolesAndAuthFunction() throws {
        try TestDatabase.with(migrated: false) { database throws in
            let connection = try database.connect()
            try connection.executeScript(unsafeSQL: """
                CREATE SCHEMA auth;
                CREATE FUNCTION auth.uid() RETURNS uuid LANGUAGE sql STABLE AS $$
                    SELECT (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub')::uuid $$;
                COMMENT ON FUNCTION auth.uid() IS 'supabase original';
                GRANT USAGE ON SCHEMA auth TO PUBLIC;
                """)
            let before = try connection.queryOne("SELECT 'auth.uid()'::regprocedure::oid::int8").decode(Int64.self, at: 0)
            try Migrator(migrations: migrations).migrate(connection)
            let after = try connection.queryOne("""
                SELECT 'auth.uid()'::regprocedure::oid::int8, obj_description('auth.uid()'::regprocedure, 'pg_proc')
                """)
            #expect(try after.decode(Int64.self, at: 0) == before)
            #expect(try after.decode(String.self, at: 1) == "supabase original")
            for role in ["anon", "authenticated", "service_role", "habit_batch", "habit_admin", "habit_worker"] {
                #expect(try connection.queryOne("SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = \(role))").decode(Bool.self, at: 0), "\(role)")
            }
            // And the tables work through the pre-existing function.
            let user = UUID()
            let repository = HabitRepository(connection: try database.connect(user: "habit_worker"))
            let habit = try repository.createHabit(user: user, HabitDraft(name: "Run"))
            #expect(try repository.listHabits(user: user).map(\.id) == [habit.id])
        }
    }
}
