import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// docs/schema.md's trigger catalogue ("What fires on a write") is the catalog's: every trigger
/// of our tables has its row there and every row its trigger, with the same timing, events and
/// level; and the triggers follow issue 29's rules: per table and timing at most one row-level
/// trigger, no statement-level trigger but TRUNCATE's, no transition table.
@Suite struct TriggerCatalogueTests {
    /// `table | trigger | fires` of every trigger of public and habit, as the catalogue spells them.
    static let catalogQuery = """
        SELECT n.nspname || '.' || c.relname, t.tgname,
               CASE WHEN t.tgtype & 2 <> 0 THEN 'BEFORE' WHEN t.tgtype & 64 <> 0 THEN 'INSTEAD OF' ELSE 'AFTER' END || ' ' ||
               array_to_string(array_remove(ARRAY[CASE WHEN t.tgtype & 4 <> 0 THEN 'INSERT' END, CASE WHEN t.tgtype & 16 <> 0 THEN 'UPDATE' END,
                                                  CASE WHEN t.tgtype & 8 <> 0 THEN 'DELETE' END, CASE WHEN t.tgtype & 32 <> 0 THEN 'TRUNCATE' END],
                                            NULL), ' OR ')
               || CASE WHEN t.tgtype & 1 <> 0 THEN ', row' ELSE ', statement' END
               || CASE WHEN t.tginitdeferred THEN ', deferred to commit' ELSE '' END,
               t.tgoldtable IS NOT NULL OR t.tgnewtable IS NOT NULL
        FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE NOT t.tgisinternal AND n.nspname IN ('public', 'habit', 'admin')
        ORDER BY 1, 2
        """

    struct Trigger: Hashable, CustomStringConvertible {
        var table: String
        var name: String
        var fires: String
        var description: String { "| `\(table)` | `\(name)` | \(fires) |" }
    }

    /// The rows between the markers of docs/schema.md.
    static func documented() throws -> Set<Trigger> {
        let text = try String(contentsOf: TestDatabase.repositoryRoot.appendingPathComponent("docs/schema.md"), encoding: .utf8)
        let start = try #require(text.range(of: "<!-- trigger-catalogue -->"))
        let end = try #require(text.range(of: "<!-- /trigger-catalogue -->"))
        var rows = Set<Trigger>()
        for line in text[start.upperBound..<end.lowerBound].split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 4 else { continue }
            func bare(_ cell: String) -> String { cell.trimmingCharacters(in: CharacterSet(charactersIn: "`")) }
            rows.insert(Trigger(table: bare(cells[1]), name: bare(cells[2]), fires: cells[3]))
        }
        return rows
    }

    @Test func theCatalogueIsTheCatalogs() throws {
        try TestDatabase.with { database throws in
            let rows = try database.connect().query(Query(unsafeSQL: Self.catalogQuery))
            let actual = Set(try rows.map { row in
                Trigger(table: try row.decode(String.self, at: 0), name: try row.decode(String.self, at: 1), fires: try row.decode(String.self, at: 2))
            })
            let documented = try Self.documented()
            #expect(actual.count > 10, "\(actual)")
            let missing = actual.subtracting(documented), stale = documented.subtracting(actual)
            #expect(missing.isEmpty, "triggers without their row in docs/schema.md's trigger catalogue (or with another timing):\n\(missing.map(\.description).sorted().joined(separator: "\n"))")
            #expect(stale.isEmpty, "rows of docs/schema.md's trigger catalogue without their trigger:\n\(stale.map(\.description).sorted().joined(separator: "\n"))")

            // The rules: one row-level trigger per table and timing, statement level only for
            // TRUNCATE, no transition tables.
            var perTiming: [String: [String]] = [:]
            for trigger in actual where trigger.fires.contains(", row") {
                let timing = trigger.fires.hasPrefix("BEFORE") ? "BEFORE" : "AFTER"
                perTiming[trigger.table + " " + timing, default: []].append(trigger.name)
            }
            let crowded = perTiming.filter { $0.value.count > 1 }
            #expect(crowded.isEmpty, "more than one row-level trigger of one timing on a table: \(crowded)")
            let statementLevel = actual.filter { $0.fires.contains(", statement") && $0.fires != "AFTER TRUNCATE, statement" }
            #expect(statementLevel.isEmpty, "statement-level triggers other than TRUNCATE's: \(statementLevel)")
            let transition = try rows.filter { try $0.decode(Bool.self, at: 3) }.map { try $0.decode(String.self, at: 1) }
            #expect(transition.isEmpty, "triggers with transition tables: \(transition)")
        }
    }
}
