import Foundation
import TestSupport
import Testing

/// Issue 30 #5: the numbers the docs state about the worker's settings are the worker's.
/// `habit serve` logs every setting in effect at start (`serving`); each row of the
/// `| flag | environment | default | meaning |` tables of docs/protocol.md and
/// docs/operations.md whose flag it logs must show that default.
@Suite("docs: the documented defaults are the worker's")
struct DocumentedDefaultsTests {
    /// (flag without dashes, default cell without backticks) of every flag-table row of `file`.
    static func documentedDefaults(in file: String) throws -> [(flag: String, value: String)] {
        let text = try String(contentsOf: TestDatabase.repositoryRoot.appendingPathComponent(file), encoding: .utf8)
        return text.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("| `--") else { return nil }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count > 4 else { return nil }
            let flag = cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`-"))
            return (flag, cells[3].trimmingCharacters(in: CharacterSet(charactersIn: "`")))
        }
    }

    @Test("every default in protocol.md's and operations.md's flag tables is the one the worker logs at start")
    func defaultsAreTheWorkers() throws {
        try WorkerSession.with(arguments: ["--pool-size", "4"]) { session in
            #expect(try session.worker.request("system.ping").isSuccess)
            session.worker.closeInput()
            #expect(session.worker.waitForExit() == 0)
            _ = session.worker.waitForStderrEnd()
            let line = try #require(session.worker.stderrText.split(separator: "\n").first { $0.contains(#""msg":"serving""#) })
            let serving = try WireJSON.parse(String(line))
            var checked = 0
            for file in ["docs/protocol.md", "docs/operations.md"] {
                let rows = try Self.documentedDefaults(in: file)
                #expect(rows.count >= 15, "\(file): flag rows found: \(rows.count)")
                for row in rows {
                    let key = row.flag.replacingOccurrences(of: "-", with: "_")
                    guard let logged = serving[key] else { continue }
                    let value = logged.stringValue ?? logged.numberLiteral ?? logged.encoded
                    // The tables write 1,048,576 as 1048576; a grouping comma would be a mismatch too.
                    #expect(row.value == value, "\(file): --\(row.flag) documented default \(row.value), the worker's \(value)")
                    checked += 1
                }
            }
            // pool size is passed explicitly above (the session's default is 2); everything else is the default.
            #expect(checked >= 18, "defaults compared: \(checked) in \(serving.encoded)")
        }
    }
}
