import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// A database that earlier releases migrated with sql/0001 … sql/0016 (kept in
/// Tests/Fixtures/legacy-sql-v16) is at the baseline: `habit migrate` takes it from there,
/// and it ends with the catalog of a fresh database and every row it had.
@Suite struct BaselineUpgradeTests {
    static let alice = "00000000-0000-0000-0000-00000000000a"
    static let bob = "00000000-0000-0000-0000-00000000000b"

    let legacy = try! MigrationSource.loadVersioned(directory: TestDatabase.legacyMigrationsDirectory)

    @Test func upgradesADatabaseMigratedByTheReplacedFiles() throws {
        try TestDatabase.with(migrated: false) { database throws in
            let connection = try database.connect()
            // As earlier releases did: each file in a transaction, recorded with its name and
            // SHA-256 in habit.schema_migrations.
            try Migrator(migrations: legacy).migrate(connection)
            let legacyRows = try Self.migrationRows(connection)
            #expect(legacyRows.map(\.version) == Array(1...16))
            #expect(legacyRows.map(\.name) == legacy.map(\.fileName))
            try Self.fillEveryUserTable(connection)
            let before = try Self.rows(connection)
            let countersBefore = try Self.rowCounters(connection)
            let empty = try Self.userTables(connection).filter { before[$0]?.count == 0 }
            #expect(empty.isEmpty, "user tables without rows: \(empty.sorted())")

            let sql = try Migrator(directory: TestDatabase.migrationsDirectory)
            let report = try sql.migrate(connection)
            #expect(report.alreadyApplied == [16])
            #expect(report.applied == sql.migrations.map(\.version).filter { $0 > 16 })
            #expect(report.appliedFiles == sql.currentStateFiles.map(\.path))

            // A difference: the baseline (or a migration after it) does not build what the
            // replaced files built; the snapshot is not what to change.
            let mismatch = CatalogSnapshot.mismatch(committed: try CatalogSnapshot.committed(), actual: try CatalogSnapshot.dump(database))
            #expect(mismatch == nil, "upgraded from the replaced files: \(mismatch ?? "")")
            // Every row stays, but the derived ones a migration counts anew (0018: the streaks'
            // runs replace the per-day ledger; the row counters gain their bookkeeping columns).
            let after = try Self.rows(connection)
            // Tables made after the baseline are there, empty unless derived (0018's streak runs;
            // 0028's staging tables).
            let added = after.filter { before[$0.key] == nil }
            #expect(added.filter { !Self.recomputed.contains($0.key) }.allSatisfy { $0.value.count == 0 }, "\(added)")
            #expect(after.filter { !Self.recomputed.contains($0.key) && before[$0.key] != nil } == before.filter { !Self.recomputed.contains($0.key) })
            #expect(try Self.rowCounters(connection) == countersBefore)
            // 0029's columns: every habit that was there is a boolean habit done once a day; 0035's: none archived; 0037's: in no area.
            let notDefault = try connection.queryOne("""
                SELECT count(*) FROM public.habit_templates
                WHERE (kind, unit, target, target_type, target_period, archived_at, area_id) IS DISTINCT FROM ('boolean', NULL, 1, 'at_least', 'day', NULL, NULL)
                """).decode(Int.self, at: 0)
            #expect(notDefault == 0 && before["public.habit_templates"]?.count ?? 0 > 0)
            // 0030's column: every profile that was there begins its days at midnight.
            let startsLater = try connection.queryOne("SELECT count(*) FROM public.profiles WHERE day_starts_at <> '00:00'").decode(Int.self, at: 0)
            #expect(startsLater == 0 && before["public.profiles"]?.count ?? 0 > 0)
            // The streaks counted anew answer what the reference scan does, for every habit.
            let differing = try connection.query("""
                SELECT t.id::text FROM public.habit_templates t
                CROSS JOIN LATERAL (SELECT habit.local_date(now(), habit.user_time_zone(t.user_id, NULL)) AS today) d
                LEFT JOIN LATERAL habit.streak_stats(t.user_id, t.id, d.today, d.today) f ON true
                LEFT JOIN LATERAL habit.habit_stats_scan(t.user_id, t.id, d.today, d.today) x ON true
                WHERE row(f.*) IS DISTINCT FROM row(x.*)
                   OR (SELECT s.pending FROM public.habit_streak_state s WHERE s.template_id = t.id)
                """).map { try $0.decode(String.self, at: 0) }
            #expect(differing.isEmpty, "habits whose streaks differ from the scan, or are still pending: \(differing)")
            // The replaced files' rows stay: the history of what ran.
            #expect(Array(try Self.migrationRows(connection).prefix(16)) == legacyRows)

            let again = try sql.migrate(connection)
            #expect(again.applied.isEmpty && again.appliedFiles.isEmpty)
            #expect(try sql.status(connection).allSatisfy { !$0.pending })
        }
    }

    /// Rows below the baseline without the baseline's: migrated part of the way by the
    /// replaced files. The baseline cannot take it from there; an earlier release can.
    @Test func refusesADatabaseOlderThanTheBaseline() throws {
        try TestDatabase.with(migrated: false) { database throws in
            let connection = try database.connect()
            try Migrator(migrations: legacy.filter { $0.version <= 10 }).migrate(connection)
            let sql = try Migrator(directory: TestDatabase.migrationsDirectory)
            #expect(throws: MigrationError.predatesBaseline(databaseVersion: 10, baseline: 16)) { try sql.migrate(connection) }
            #expect(try Migrator.schemaVersion(connection) == 10)
        }
    }

    // MARK: - Helpers

    private struct MigrationRow: Equatable {
        let version: Int
        let name: String
        let checksum: String
    }

    private static func migrationRows(_ connection: Connection) throws -> [MigrationRow] {
        try connection.query("SELECT version, name, checksum FROM habit.schema_migrations ORDER BY version").map {
            MigrationRow(version: try $0.decode(Int.self, at: 0), name: try $0.decode(String.self, at: 1), checksum: try $0.decode(String.self, at: 2))
        }
    }

    private struct TableRows: Equatable {
        let count: Int
        let digest: String?
    }

    /// Columns added to a table since the baseline (0029: a habit's kind and target), compared
    /// apart: every existing row gets the column's default.
    static let addedColumns: [String: [String]] = [
        "public.habit_templates": ["kind", "unit", "target", "target_type", "target_period", "archived_at", "area_id"],
        // 0030: the day's start.
        "public.profiles": ["day_starts_at"],
    ]

    /// Derived tables a migration since the baseline counts anew (their rows differ by design).
    static let recomputed: Set<String> = ["public.habit_streak_slots", "public.habit_streak_state", "public.habit_streak_runs",
                                          "habit.user_row_counts",
                                          // 0023 drops the names that are not zones (ZoneNameTests checks what is left).
                                          "habit.time_zones",
                                          // 0024: each clock counts its user's tombstones.
                                          "habit.sync_clocks",
                                          // 0037 adds the areas' limit (DocumentedLimitsTests checks every value).
                                          "habit.row_limits"]

    /// The row counters' counts, whatever columns their table has.
    private static func rowCounters(_ connection: Connection) throws -> [String] {
        try connection.query("SELECT user_id::text || ' ' || table_name || ' ' || row_count FROM habit.user_row_counts ORDER BY 1")
            .map { try $0.decode(String.self, at: 0) }
    }

    /// Every table of public and habit but the migrations' bookkeeping: its row count and an
    /// md5 of its rows in text form.
    private static func rows(_ connection: Connection) throws -> [String: TableRows] {
        let tables = try connection.query("""
            SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname IN ('public', 'habit') AND c.relkind IN ('r', 'p')
              AND c.relname NOT IN ('schema_migrations', 'current_state_files')
            """).map { try $0.decode(String.self, at: 0) }
        var result: [String: TableRows] = [:]
        for table in tables {
            // A column added since the baseline is left out (it is not there before the
            // upgrade); `addedColumnsHoldTheirDefaults` checks what it holds after.
            let text = addedColumns[table].map { "(to_jsonb(t) - ARRAY[\($0.map { "'\($0)'" }.joined(separator: ", "))])::text" } ?? "t::text"
            let row = try connection.queryOne(Query(unsafeSQL: """
                SELECT count(*), md5(string_agg(\(text), E'\\n' ORDER BY \(text))) FROM \(table) t
                """))
            result[table] = TableRows(count: try row.decode(Int.self, at: 0), digest: try row.decode(String?.self, at: 1))
        }
        return result
    }

    /// The tables of public and habit that hold users' rows (a user_id column).
    private static func userTables(_ connection: Connection) throws -> Set<String> {
        Set(try connection.query("""
            SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'user_id' AND NOT a.attisdropped
            WHERE n.nspname IN ('public', 'habit') AND c.relkind IN ('r', 'p')
            """).map { try $0.decode(String.self, at: 0) })
    }

    /// Rows in every user table, written as the apps and the worker write them (the tables'
    /// triggers fill the derived ones): a profile in a non-UTC zone, habits with schedules and
    /// several periods, completions, skips, lists, tasks, a sync mutation, stored and dirty
    /// weekly counts, tombstones.
    private static func fillEveryUserTable(_ connection: Connection) throws {
        let alice = Self.alice, bob = Self.bob
        try connection.executeScript(unsafeSQL: """
            INSERT INTO public.profiles (user_id, timezone, week_start) VALUES ('\(alice)', 'Europe/Berlin', 'sunday');
            INSERT INTO public.habit_templates (id, user_id, name, icon, color, activated_at, sort_order, schedule) VALUES
                ('10000000-0000-0000-0000-000000000001', '\(alice)', 'Run', 'figure.run', '#FF8800', now() - interval '60 days', 1, '{"type":"daily"}'),
                ('10000000-0000-0000-0000-000000000002', '\(alice)', 'Read', NULL, NULL, now() - interval '40 days', 2, '{"type":"weekdays","days":[1,3,5]}'),
                ('10000000-0000-0000-0000-000000000003', '\(alice)', 'Gym', NULL, NULL, now() - interval '30 days', 3, '{"type":"times_per_week","times":3}'),
                ('10000000-0000-0000-0000-000000000004', '\(bob)', 'Walk', NULL, NULL, now() - interval '20 days', NULL, '{"type":"every_n_days","n":2}');
            """)
        // Separate transactions: each change of schedule or activity closes a period at now().
        try connection.execute("UPDATE public.habit_templates SET schedule = '{\"type\":\"daily\"}' WHERE id = '10000000-0000-0000-0000-000000000002'")
        try connection.execute("UPDATE public.habit_templates SET is_active = false WHERE id = '10000000-0000-0000-0000-000000000003'")
        try connection.executeScript(unsafeSQL: """
            SELECT habit.weekly_counts_start_tracking('monday');
            INSERT INTO public.habit_completions (user_id, template_id, completed_date)
            SELECT '\(alice)', '10000000-0000-0000-0000-000000000001', d::date
            FROM generate_series(habit.local_date(now(), 'Europe/Berlin') - 10, habit.local_date(now(), 'Europe/Berlin') - 1, interval '1 day') d;
            INSERT INTO public.habit_completions (user_id, template_id, completed_date)
            VALUES ('\(bob)', '10000000-0000-0000-0000-000000000004', habit.local_date(now(), 'UTC') - 2);
            INSERT INTO public.habit_skips (user_id, template_id, skipped_date)
            VALUES ('\(alice)', '10000000-0000-0000-0000-000000000001', habit.local_date(now(), 'Europe/Berlin') - 12);
            DELETE FROM public.habit_completions
            WHERE user_id = '\(alice)' AND completed_date = habit.local_date(now(), 'Europe/Berlin') - 5;
            INSERT INTO public.task_lists (id, user_id, name) VALUES ('20000000-0000-0000-0000-000000000001', '\(alice)', 'Errands');
            INSERT INTO public.tasks (id, user_id, title, list_id, state, scheduled_date, position, completed_at) VALUES
                ('30000000-0000-0000-0000-000000000001', '\(alice)', 'Buy milk', '20000000-0000-0000-0000-000000000001', 'completed', current_date, 1, now()),
                ('30000000-0000-0000-0000-000000000002', '\(alice)', 'Call mum', NULL, 'not_started', NULL, 1, NULL),
                ('30000000-0000-0000-0000-000000000003', '\(bob)', 'Gone', NULL, 'active', NULL, 1, NULL);
            DELETE FROM public.tasks WHERE id = '30000000-0000-0000-0000-000000000003';
            INSERT INTO habit.sync_mutations (user_id, client_id, mutation_id, outcome, change_seq)
            VALUES ('\(alice)', 'device-1', 'mutation-1', '{"result": {"ok": true}}', 3);
            INSERT INTO public.weekly_completion_counts (user_id, week_starts_on, week_start, completions, days_with_completion,
                                                         active_habit_days, due_habit_days, skipped_habit_days, completion_rate)
            SELECT user_id, 'monday', week_start, completions, days_with_completion, active_habit_days, due_habit_days,
                   skipped_habit_days, completion_rate
            FROM habit.weekly_counts(current_date - 28, current_date, 'monday');
            """)
    }
}
