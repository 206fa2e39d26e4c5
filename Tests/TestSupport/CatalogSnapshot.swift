import Foundation
import PostgresClient

/// The schema as the catalog holds it, as text (scripts/catalog-snapshot.sql, the one query
/// for psql and the tests), and the committed snapshot of a freshly migrated database.
public enum CatalogSnapshot {
    public static var queryPath: String { TestDatabase.repositoryRoot.appendingPathComponent("scripts/catalog-snapshot.sql").path }
    public static var committedPath: String { TestDatabase.repositoryRoot.appendingPathComponent("Tests/Fixtures/catalog.snapshot").path }
    public static let regenerateCommand = "scripts/catalog-snapshot --write"

    /// The dump of the database, as `scripts/catalog-snapshot URL` prints it. On a connection
    /// of its own: the query sets the session's search_path.
    public static func dump(_ database: TestDatabase) throws -> String {
        let connection = try database.connect()
        defer { connection.close() }
        try connection.executeScript(unsafeSQL: try String(contentsOfFile: queryPath, encoding: .utf8))
        // psql ends the value with a newline; so does the file it writes.
        return try connection.queryOne("SELECT dump FROM pg_temp.catalog_snapshot").decode(String.self, at: 0) + "\n"
    }

    public static func committed() throws -> String {
        try String(contentsOfFile: committedPath, encoding: .utf8)
    }

    /// nil when equal; else the differing lines in unified-diff form (`-` committed, `+`
    /// actual, 3 lines of context), where the actual dump was written, and how to regenerate.
    public static func mismatch(committed: String, actual: String) -> String? {
        guard committed != actual else { return nil }
        let written = FileManager.default.temporaryDirectory.appendingPathComponent("catalog.snapshot.actual").path
        try? actual.write(toFile: written, atomically: true, encoding: .utf8)
        return """
            The catalog differs from \(committedPath) (- committed, + this database):
            \(LineDiff.unified(old: committed, new: actual))
            This database's dump: \(written). If the change is intended, regenerate the snapshot with \
            `\(regenerateCommand)` and commit it with the change.
            """
    }
}

/// A line diff in unified form, enough to show a reviewer what changed: the longest common
/// subsequence of the lines between the common head and tail.
public enum LineDiff {
    public static func unified(old: String, new: String, context: Int = 3) -> String {
        let a = old.split(separator: "\n", omittingEmptySubsequences: false)
        let b = new.split(separator: "\n", omittingEmptySubsequences: false)
        var head = 0
        while head < a.count, head < b.count, a[head] == b[head] { head += 1 }
        var tail = 0
        while tail < a.count - head, tail < b.count - head, a[a.count - 1 - tail] == b[b.count - 1 - tail] { tail += 1 }
        let middleA = Array(a[head..<(a.count - tail)]), middleB = Array(b[head..<(b.count - tail)])

        // Edits over the middle: (" ", line), ("-", line), ("+", line).
        var edits: [(Character, Substring)] = []
        if middleA.count * middleB.count > 4_000_000 {
            edits = middleA.map { ("-", $0) } + middleB.map { ("+", $0) }
        } else {
            var lengths = Array(repeating: Array(repeating: 0, count: middleB.count + 1), count: middleA.count + 1)
            for i in stride(from: middleA.count - 1, through: 0, by: -1) {
                for j in stride(from: middleB.count - 1, through: 0, by: -1) {
                    lengths[i][j] = middleA[i] == middleB[j] ? lengths[i + 1][j + 1] + 1 : max(lengths[i + 1][j], lengths[i][j + 1])
                }
            }
            var i = 0, j = 0
            while i < middleA.count || j < middleB.count {
                if i < middleA.count, j < middleB.count, middleA[i] == middleB[j] {
                    edits.append((" ", middleA[i])); i += 1; j += 1
                } else if i < middleA.count, j == middleB.count || lengths[i + 1][j] >= lengths[i][j + 1] {
                    edits.append(("-", middleA[i])); i += 1
                } else {
                    edits.append(("+", middleB[j])); j += 1
                }
            }
        }
        let all = a[max(0, head - context)..<head].map { (Character(" "), $0) } + edits
            + a[(a.count - tail)..<min(a.count, a.count - tail + context)].map { (Character(" "), $0) }

        // Hunks: changed lines with up to `context` unchanged lines around them.
        var lines: [String] = []
        var lastShown = -1
        for (index, edit) in all.enumerated() where edit.0 != " " {
            let from = max(lastShown + 1, index - context)
            if from > lastShown + 1, lastShown >= 0 { lines.append("@@") }
            for k in from...index where k > lastShown {
                lines.append("\(all[k].0)\(all[k].1)")
                lastShown = k
            }
            var k = index + 1
            while k < all.count, k <= index + context, all[k].0 == " " {
                lines.append(" \(all[k].1)"); lastShown = k; k += 1
            }
        }
        return lines.joined(separator: "\n")
    }
}
