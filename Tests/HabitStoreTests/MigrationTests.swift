import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

@Suite struct MigrationTests {
    let sql = try! Migrator(directory: TestDatabase.migrationsDirectory)
    var migrations: [Migration] { sql.migrations }
    var files: [CurrentStateFile] { sql.currentStateFiles }

    @Test func migratesAnEmptyDatabaseOnceAndThenIsANoOp() throws {
        try TestDatabase.with(migrated: false) { database throws in
            let connection = try database.connect()
            #expect(try Migrator.schemaVersion(connection) == 0)
            let first = try sql.migrate(connection)
            #expect(first.applied == migrations.map(\.version))
            #expect(first.appliedFiles == files.map(\.path))
            #expect(try Migrator.schemaVersion(connection) == migrations.last!.version)
            let second = try sql.migrate(connection)
            #expect(second.applied.isEmpty)
            #expect(second.alreadyApplied == migrations.map(\.version))
            #expect(second.appliedFiles.isEmpty)
            let recorded = try connection.query("SELECT version, name, length(checksum) FROM habit.schema_migrations ORDER BY version")
            #expect(try recorded.map { try $0.decode(String.self, at: 1) } == migrations.map(\.fileName))
            #expect(try recorded.allSatisfy { try $0.decode(Int.self, at: 2) == 64 })
            let recordedFiles = try connection.query("SELECT path, length(checksum), schema_version FROM habit.current_state_files ORDER BY path")
            #expect(try recordedFiles.map { try $0.decode(String.self, at: 0) } == files.map(\.path).sorted())
            #expect(try recordedFiles.allSatisfy { try $0.decode(Int.self, at: 1) == 64 && $0.decode(Int.self, at: 2) == migrations.last!.version })
            #expect(try sql.status(connection).allSatisfy { !$0.pending })
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

    /// The layout's promise: every current-state file can be applied again, as is, any time.
    @Test func everyCurrentStateFileIsSafeToApplyAgain() throws {
        try TestDatabase.with { database throws in
            let connection = try database.connect()
            let before = try CatalogSnapshot.dump(database)
            for file in files {
                try connection.withTransaction { connection in try connection.executeScript(unsafeSQL: file.sql) }
            }
            let mismatch = CatalogSnapshot.mismatch(committed: before, actual: try CatalogSnapshot.dump(database))
            #expect(mismatch == nil, "\(mismatch ?? "")")
        }
    }

    @Test func refusesAnEditedMigration() throws {
        try TestDatabase.with(migrated: false) { database throws in
            let connection = try database.connect()
            try Migrator(migrations: Array(migrations.prefix(1))).migrate(connection)
            var edited = migrations
            edited[0] = Migration(version: edited[0].version, fileName: edited[0].fileName, sql: edited[0].sql + "\n-- edited\n")
            let error = try #require(throws: MigrationError.self) { try Migrator(migrations: edited, currentStateFiles: files).migrate(connection) }
            #expect(error == .editedAfterApply(version: edited[0].version, fileName: edited[0].fileName))
            // Nothing after the edited file was applied either.
            #expect(try Migrator.schemaVersion(connection) == migrations[0].version)
            #expect(try connection.queryOne("SELECT to_regclass('habit.current_state_files') IS NULL").decode(Bool.self, at: 0))
        }
    }

    @Test func refusesADatabaseNewerThanTheBuild() throws {
        try TestDatabase.with(migrated: false) { database throws in
            let connection = try database.connect()
            try sql.migrate(connection)
            let older = Migrator(migrations: Array(migrations.dropLast()), currentStateFiles: files)
            #expect(throws: MigrationError.unknownAppliedVersion(migrations.last!.version)) { try older.migrate(connection) }
        }
    }

    @Test func failingMigrationLeavesNothingBehind() throws {
        try TestDatabase.with(migrated: false) { database throws in
            let connection = try database.connect()
            let broken = migrations + [Migration(version: 9999, fileName: "9999_broken.sql",
                                                 sql: "CREATE TABLE half_done (id int); SELECT no_such_function();")]
            #expect(throws: PostgresError.self) { try Migrator(migrations: broken, currentStateFiles: files).migrate(connection) }
            #expect(try Migrator.schemaVersion(connection) == migrations.last!.version)
            #expect(try connection.queryOne("SELECT to_regclass('half_done') IS NULL").decode(Bool.self, at: 0))
        }
    }

    /// A current-state file that fails is not recorded and leaves nothing behind; the files
    /// before it stay applied, and the next run applies it.
    @Test func failingCurrentStateFileLeavesNothingBehind() throws {
        try TestDatabase.with(migrated: false) { database throws in
            let connection = try database.connect()
            let broken = files.map { file in
                file.path != "grants.sql" ? file
                    : CurrentStateFile(path: file.path, sql: "CREATE TABLE public.half_done (id int); SELECT no_such_function();")
            }
            #expect(throws: PostgresError.self) { try Migrator(migrations: migrations, currentStateFiles: broken).migrate(connection) }
            #expect(try connection.queryOne("SELECT to_regclass('public.half_done') IS NULL").decode(Bool.self, at: 0))
            let recorded = try connection.query("SELECT path FROM habit.current_state_files").map { try $0.decode(String.self, at: 0) }
            // grants.sql failed; derived.sql, which comes after it, never ran.
            #expect(Set(recorded) == Set(files.map(\.path)).subtracting(["grants.sql", "derived.sql"]))
            #expect(try sql.migrate(connection).appliedFiles == ["grants.sql", "derived.sql"])
        }
    }

    /// An edited current-state file is applied again, alone.
    @Test func appliesAChangedCurrentStateFileAgain() throws {
        try TestDatabase.with { database throws in
            let connection = try database.connect()
            let changed = files.map { file in
                file.path != "functions/calendar.sql" ? file
                    : CurrentStateFile(path: file.path, sql: file.sql.replacingOccurrences(
                        of: "'Time zone for a user: the override when given, else profiles.timezone, else UTC.'",
                        with: "'Time zone for a user (changed).'"))
            }
            #expect(changed != files)
            let report = try Migrator(migrations: migrations, currentStateFiles: changed).migrate(connection)
            #expect(report.applied.isEmpty)
            #expect(report.appliedFiles == ["functions/calendar.sql"])
            #expect(try connection.queryOne("SELECT obj_description('habit.user_time_zone(uuid, text)'::regprocedure, 'pg_proc')")
                .decode(String.self, at: 0) == "Time zone for a user (changed).")
        }
    }

    /// A versioned migration applies every current-state file again: it may have dropped what
    /// they define (here a trigger, as DROP FUNCTION … CASCADE would).
    @Test func aVersionedMigrationAppliesEveryCurrentStateFileAgain() throws {
        try TestDatabase.with { database throws in
            let connection = try database.connect()
            let version = migrations.last!.version + 1
            let dropping = Migration(version: version, fileName: String(format: "%04d_drop_trigger.sql", version),
                                     sql: "DROP TRIGGER tasks_before ON public.tasks;")
            let report = try Migrator(migrations: migrations + [dropping], currentStateFiles: files).migrate(connection)
            #expect(report.applied == [dropping.version])
            #expect(report.appliedFiles == files.map(\.path))
            #expect(try connection.queryOne("""
                SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'tasks_before' AND tgrelid = 'public.tasks'::regclass)
                """).decode(Bool.self, at: 0))
        }
    }

    @Test func concurrentMigratorsApplyEachFileOnce() throws {
        try TestDatabase.with(migrated: false) { database throws in
            let sql = self.sql
            let reports = LockedBox<[Migrator.Report]>([])
            let errors = runConcurrently(4) { _ in
                let connection = try database.connect()
                let report = try sql.migrate(connection)
                reports.withValue { $0.append(report) }
            }
            #expect(errors.isEmpty, "\(errors)")
            #expect(reports.withValue { $0.flatMap(\.applied) }.sorted() == migrations.map(\.version))
            #expect(reports.withValue { $0.flatMap(\.appliedFiles) }.sorted() == files.map(\.path).sorted())
            let connection = try database.connect()
            #expect(try connection.queryOne("SELECT count(*) FROM habit.schema_migrations").decode(Int.self, at: 0) == migrations.count)
        }
    }

    /// The layout is what the migrator reads: a .sql file elsewhere in sql/ is refused rather
    /// than silently left out, and the current-state files come in the documented order.
    @Test func readsTheLayout() throws {
        #expect(migrations.first!.fileName.hasSuffix("_baseline.sql"))
        let kinds = files.map { $0.path.split(separator: "/").count > 1 ? String($0.path.split(separator: "/")[0]) + "/" : $0.path }
        #expect(kinds.reduce(into: [String]()) { if $0.last != $1 { $0.append($1) } }
                == MigrationSource.currentStateOrder.filter { kinds.contains($0) })
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("habit-layout-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/migrations", withIntermediateDirectories: true)
        try "SELECT 1;\n".write(toFile: root + "/migrations/0001_first.sql", atomically: true, encoding: .utf8)
        try "SELECT 1;\n".write(toFile: root + "/stray.sql", atomically: true, encoding: .utf8)
        #expect(throws: MigrationError.unexpectedFile("stray.sql")) { try MigrationSource.load(directory: root) }
        // In a subfolder too; the same reading for the copy in the binary (load(files:from:)).
        #expect(throws: MigrationError.unexpectedFile("functions/old/x.sql")) {
            try MigrationSource.load(files: [.init(path: "migrations/0001_first.sql", text: "SELECT 1;\n"),
                                             .init(path: "functions/old/x.sql", text: "SELECT 1;\n")], from: "a test")
        }
        #expect(throws: MigrationError.noMigrations(directory: TestDatabase.legacyMigrationsDirectory)) {
            try MigrationSource.load(directory: TestDatabase.legacyMigrationsDirectory)
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
            try sql.migrate(connection)
            let after = try connection.queryOne("""
                SELECT 'auth.uid()'::regprocedure::oid::int8, obj_description('auth.uid()'::regprocedure, 'pg_proc'),
                       'auth.uid()'::regprocedure IN (SELECT p.oid FROM pg_proc p WHERE p.proconfig IS NULL)
                """)
            #expect(try after.decode(Int64.self, at: 0) == before)
            #expect(try after.decode(String.self, at: 1) == "supabase original")
            #expect(try after.decode(Bool.self, at: 2), "Supabase's auth.uid() got a SET clause")
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
