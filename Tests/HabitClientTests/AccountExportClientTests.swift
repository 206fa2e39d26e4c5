import Foundation
import HabitClient
import JSONRPC
import TestSupport
import Testing

extension HabitClientTests {
    @Test("accountExport pages and accountImport, typed: the export of one user imported for another gives the same document")
    func accountExportAndImport() async throws {
        try await Self.withClient { client, _ in
            let user = UUID(), copy = UUID()
            for name in ["Walk", "Read", "Stretch"] { _ = try await client.habitsCreate(userID: user, name: name) }
            var document = JSONObject(), habits: [JSONValue] = [], cursor: String?
            repeat {
                let page = try await client.accountExport(userID: user, cursor: cursor, limit: 2)
                if cursor == nil { document = page.document }
                habits += page.document["habits"]?.arrayValue ?? []
                cursor = page.cursor
                #expect(page.hasMore == (page.cursor != nil))
            } while cursor != nil
            #expect(habits.count == 3)
            // Ids are unique per user (sql/migrations/0027): another user imports the same document
            // as rows of their own …
            document = JSONObject(document.members.map { $0.key == "habits" ? ("habits", .array(habits)) : $0 })
            let copied = try await client.accountImport(userID: copy, document: document, mode: "merge")
            #expect(copied.counts["habits"] == .init(inserted: 3, updated: 0, deleted: 0, unchanged: 0))
            // … while the owner imports them again: nothing changes.
            let again = try await client.accountImport(userID: user, document: document, mode: "merge")
            #expect(again.counts["habits"] == .init(inserted: 0, updated: 0, deleted: 0, unchanged: 3) && again.warnings.isEmpty)
        }
    }

    @Test("accountImportLoop, typed: a Loop export's yes/no habit imported once, the monthly numeric one reported by name")
    func accountImportLoop() async throws {
        try await Self.withClient { client, _ in
            let user = UUID()
            let files = [
                "Habits.csv": "Position,Name,Type,Question,Description,FrequencyNumerator,FrequencyDenominator,Color,Unit,Target Type,Target Value,Archived?\n"
                    + "001,Read,YES_NO,,,1,1,#1976D2,,,,false\n002,Weight,NUMERICAL,,,1,30,#D32F2F,kg,AT_LEAST,70,false\n",
                "001 Read/Checkmarks.csv": "Date,Value,Notes\n2020-01-02,YES_MANUAL,\n2020-01-01,SKIP,\n",
            ]
            let first = try await client.accountImportLoop(userID: user, files: files, mode: "merge")
            #expect(first.counts["habits"]?.inserted == 1 && first.counts["completions"]?.inserted == 1 && first.counts["skips"]?.inserted == 1)
            #expect(first.loop?.numericHabitsNotImported == ["Weight"] && first.loop?.counts["habits"] == 1)
            let again = try await client.accountImportLoop(userID: user, files: files, mode: "merge")
            #expect(again.counts["habits"]?.unchanged == 1 && again.counts["completions"]?.inserted == 0)
        }
    }
}
