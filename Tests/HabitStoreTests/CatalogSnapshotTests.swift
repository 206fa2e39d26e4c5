import Foundation
import TestSupport
import Testing

/// The schema a fresh database gets from sql/ is the committed one, Tests/Fixtures/catalog.snapshot
/// (scripts/catalog-snapshot.sql): a change to a table, function, trigger, policy or grant
/// shows in review as a change of that file.
@Suite struct CatalogSnapshotTests {
    @Test func aFreshDatabaseHasTheCommittedCatalog() throws {
        try TestDatabase.with { database throws in
            let actual = try CatalogSnapshot.dump(database)
            let mismatch = CatalogSnapshot.mismatch(committed: try CatalogSnapshot.committed(), actual: actual)
            #expect(mismatch == nil, "\(mismatch ?? "")")
        }
    }

    /// The diff a mismatch prints: the changed lines with their context, nothing else.
    @Test func mismatchShowsTheChangedLines() {
        let committed = (1...20).map { "line \($0)" }.joined(separator: "\n") + "\n"
        let actual = committed.replacingOccurrences(of: "line 10\n", with: "line ten\n")
        #expect(LineDiff.unified(old: committed, new: actual) == """
             line 7
             line 8
             line 9
            -line 10
            +line ten
             line 11
             line 12
             line 13
            """)
        #expect(CatalogSnapshot.mismatch(committed: committed, actual: committed) == nil)
        #expect(CatalogSnapshot.mismatch(committed: committed, actual: actual)?.contains(CatalogSnapshot.regenerateCommand) == true)
    }
}
