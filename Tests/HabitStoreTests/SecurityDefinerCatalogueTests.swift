import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Issue 31 #12: docs/schema.md's list of SECURITY DEFINER functions is the catalog's. The
/// functions that run as their owner (who bypasses row-level security) are the ones to review
/// whenever a user's role can reach them, so the list may not drift: a function made SECURITY
/// DEFINER without its row, or a row whose function is gone or no longer one, fails.
@Suite struct SecurityDefinerCatalogueTests {
    /// The first cells of the rows between the markers of docs/schema.md.
    static func documented() throws -> Set<String> {
        let text = try String(contentsOf: TestDatabase.repositoryRoot.appendingPathComponent("docs/schema.md"), encoding: .utf8)
        let start = try #require(text.range(of: "<!-- security-definer -->"))
        let end = try #require(text.range(of: "<!-- /security-definer -->"))
        var names = Set<String>()
        for line in text[start.upperBound..<end.lowerBound].split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 3 else { continue }
            names.insert(cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`")))
        }
        return names
    }

    @Test func theListIsTheCatalogs() throws {
        try TestDatabase.with { database throws in
            let connection = try database.connect()
            // With only pg_catalog on the path every name prints schema-qualified.
            let catalog = Set(try connection.withTransaction(prelude: ["SET LOCAL search_path = pg_catalog"]) { c in
                try c.query("""
                    SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                    WHERE p.prosecdef AND n.nspname IN ('habit', 'public', 'admin', 'auth')
                    """).map { try $0.decode(String.self, at: 0) }
            })
            let documented = try Self.documented()
            #expect(catalog.count >= 20)
            #expect(catalog.subtracting(documented).sorted() == [], "SECURITY DEFINER but not listed in docs/schema.md")
            #expect(documented.subtracting(catalog).sorted() == [], "listed in docs/schema.md but not SECURITY DEFINER")
        }
    }
}
