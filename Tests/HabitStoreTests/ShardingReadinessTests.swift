import Foundation
import PostgresClient
import TestSupport
import Testing

/// Ready for sharding by `user_id` (issue 20), proven by the catalog of a migrated database:
/// Citus enforces a key of a distributed table only inside one shard, so every primary key,
/// unique constraint or index and exclusion constraint of a user-owned table must include
/// `user_id`, and a foreign key between two of them must carry `user_id` on both sides.
/// User-owned tables are listed from pg_catalog (every table of public, habit and auth with a
/// `user_id` column), so a table added later is covered at once. The exceptions are the
/// table in docs/scaling.md between the `sharding-exceptions` markers, each with its reason:
/// the test reads them from there, so an exception nobody wrote down fails.
@Suite struct ShardingReadinessTests {
    struct Offender: Hashable, CustomStringConvertible {
        let name: String
        let table: String
        let definition: String
        var description: String { "\(name) on \(table): \(definition)" }
    }

    /// Keys of user-owned tables that leave out `user_id`.
    static let offendersSQL = """
            WITH owned AS (
                SELECT c.oid, n.nspname || '.' || c.relname AS tbl, (SELECT a.attnum FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'user_id' AND NOT a.attisdropped) AS user_col
                FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE c.relkind IN ('r', 'p') AND n.nspname IN ('public', 'habit', 'auth')
                  AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'user_id' AND NOT a.attisdropped)
            ),
            keys AS (
                -- Primary keys, unique and exclusion constraints.
                SELECT con.conname::text AS name, o.tbl AS tbl, pg_get_constraintdef(con.oid) AS definition,
                       o.user_col = ANY (con.conkey) AS keeps_user
                FROM owned o JOIN pg_constraint con ON con.conrelid = o.oid AND con.contype IN ('p', 'u', 'x')
                UNION ALL
                -- Unique indexes that back no constraint (CREATE UNIQUE INDEX, partial ones included).
                SELECT i.indexrelid::regclass::text, o.tbl, pg_get_indexdef(i.indexrelid),
                       o.user_col = ANY (i.indkey::int2[])
                FROM owned o JOIN pg_index i ON i.indrelid = o.oid AND i.indisunique
                WHERE NOT EXISTS (SELECT 1 FROM pg_constraint con WHERE con.conindid = i.indexrelid AND con.conrelid = o.oid)
                UNION ALL
                -- Foreign keys between user-owned tables: user_id on both sides, in the same position.
                SELECT con.conname::text, o.tbl, pg_get_constraintdef(con.oid),
                       EXISTS (SELECT 1 FROM generate_subscripts(con.conkey, 1) k
                               WHERE con.conkey[k] = o.user_col AND con.confkey[k] = r.user_col)
                FROM owned o JOIN pg_constraint con ON con.conrelid = o.oid AND con.contype = 'f'
                JOIN owned r ON r.oid = con.confrelid
                UNION ALL
                -- Foreign keys to tables without user_id: allowed only into a reference table.
                SELECT con.conname::text, o.tbl, pg_get_constraintdef(con.oid) || ' [to a table without user_id]',
                       false
                FROM owned o JOIN pg_constraint con ON con.conrelid = o.oid AND con.contype = 'f'
                WHERE con.confrelid NOT IN (SELECT oid FROM owned)
            )
            SELECT name, tbl, definition FROM keys WHERE NOT keeps_user ORDER BY tbl, name
            """

    static func offenders(_ connection: Connection) throws -> [Offender] {
        try connection.query(Query(unsafeSQL: offendersSQL)).map {
            Offender(name: try $0.decode(String.self, at: 0), table: try $0.decode(String.self, at: 1),
                     definition: try $0.decode(String.self, at: 2))
        }
    }

    /// Constraint and index names in the first column of docs/scaling.md's exception table.
    static func documentedExceptions() throws -> Set<String> {
        let path = TestDatabase.repositoryRoot.appendingPathComponent("docs/scaling.md").path
        let text = try String(contentsOfFile: path, encoding: .utf8)
        guard let start = text.range(of: "<!-- sharding-exceptions -->"),
              let end = text.range(of: "<!-- /sharding-exceptions -->", range: start.upperBound..<text.endIndex) else {
            throw DocumentError.noExceptionTable
        }
        var names = Set<String>()
        for line in text[start.upperBound..<end.lowerBound].split(separator: "\n") where line.hasPrefix("| `") {
            let cell = line.dropFirst(3)
            if let close = cell.firstIndex(of: "`") { names.insert(String(cell[..<close])) }
        }
        return names
    }

    enum DocumentError: Error { case noExceptionTable }

    @Test("no key of a user-owned table leaves out user_id, except the ones docs/scaling.md explains")
    func keysIncludeUserID() throws {
        let exceptions = try Self.documentedExceptions()
        #expect(!exceptions.isEmpty, "docs/scaling.md's exception table is empty or unreadable")
        try TestDatabase.with { database in
            let admin = try database.connect()
            defer { admin.close() }
            let offenders = try Self.offenders(admin)
            for offender in offenders where !exceptions.contains(offender.name) {
                Issue.record("a key that leaves out user_id, not in docs/scaling.md's exceptions: \(offender)")
            }
            // A stale exception (fixed, renamed or dropped) is removed from the document too.
            let stale = exceptions.subtracting(offenders.map(\.name))
            #expect(stale.isEmpty, "docs/scaling.md lists exceptions the catalog no longer has: \(stale.sorted())")
        }
    }

    @Test("the check sees a new user-owned table's keys: primary key, unique index, exclusion, foreign keys")
    func newTableIsCovered() throws {
        try TestDatabase.with { database in
            let admin = try database.connect()
            defer { admin.close() }
            // A table added after this test was written, with every kind of key done wrong
            // and one of each done right.
            try admin.execute("""
                CREATE TABLE public.sharding_probe (
                    id uuid PRIMARY KEY,
                    user_id uuid NOT NULL,
                    template_id uuid NOT NULL,
                    slot int NOT NULL,
                    CONSTRAINT sharding_probe_slot_key UNIQUE (template_id, slot),
                    CONSTRAINT sharding_probe_user_slot_key UNIQUE (user_id, template_id, slot),
                    CONSTRAINT sharding_probe_template_fkey FOREIGN KEY (template_id, slot) REFERENCES public.sharding_probe (template_id, slot),
                    CONSTRAINT sharding_probe_swapped_fkey FOREIGN KEY (user_id, template_id) REFERENCES public.habit_templates (id, user_id),
                    CONSTRAINT sharding_probe_owned_fkey FOREIGN KEY (template_id, user_id) REFERENCES public.habit_templates (id, user_id),
                    CONSTRAINT sharding_probe_no_overlap EXCLUDE USING gist (template_id WITH =, int4range(slot, slot + 1) WITH &&)
                )
                """)
            try admin.execute("CREATE UNIQUE INDEX sharding_probe_open ON public.sharding_probe (template_id) WHERE slot = 0")
            let probe = Set(try Self.offenders(admin).filter { $0.table == "public.sharding_probe" }.map(\.name))
            #expect(probe == ["sharding_probe_pkey", "sharding_probe_slot_key", "sharding_probe_template_fkey",
                              "sharding_probe_swapped_fkey", "sharding_probe_no_overlap", "sharding_probe_open"], "\(probe.sorted())")
        }
    }
}
