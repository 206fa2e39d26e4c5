import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Issue 30, item 2: `habit migrate` applies the copy of sql/ compiled into the binary when it
/// finds no sql/ directory. sql/ is the source; the copy (Sources/HabitStore/EmbeddedMigrations.swift,
/// written by scripts/embed-sql) must equal it byte for byte, and a database must not see which
/// of the two migrated it.
@Suite struct EmbeddedMigrationsTests {
    static let regenerateCommand = "scripts/embed-sql"

    /// nil when `embedded` holds exactly the `*.sql` files of `onDisk`, byte for byte; else
    /// the stale files by kind and how to regenerate.
    static func staleness(embedded: [MigrationSource.SQLFile], onDisk: [MigrationSource.SQLFile]) -> String? {
        let built = Dictionary(embedded.map { ($0.path, Array($0.text.utf8)) }, uniquingKeysWith: { first, _ in first })
        let files = Dictionary(uniqueKeysWithValues: onDisk.map { ($0.path, Array($0.text.utf8)) })
        let changed = files.keys.filter { built[$0] != nil && built[$0] != files[$0] }.sorted()
        let missing = files.keys.filter { built[$0] == nil }.sorted()
        let removed = built.keys.filter { files[$0] == nil }.sorted()
        let duplicated = Dictionary(grouping: embedded.map(\.path), by: { $0 }).filter { $0.value.count > 1 }.keys.sorted()
        var lines: [String] = []
        if !changed.isEmpty { lines.append("changed in sql/ since it was built in: \(changed.joined(separator: ", "))") }
        if !missing.isEmpty { lines.append("in sql/ but not built in: \(missing.joined(separator: ", "))") }
        if !removed.isEmpty { lines.append("built in but no longer in sql/: \(removed.joined(separator: ", "))") }
        if !duplicated.isEmpty { lines.append("built in twice: \(duplicated.joined(separator: ", "))") }
        guard !lines.isEmpty else { return nil }
        return """
            The copy of sql/ built into the binary (Sources/HabitStore/EmbeddedMigrations.swift) is stale:
            \(lines.map { "  " + $0 }.joined(separator: "\n"))
            Regenerate it with `\(regenerateCommand)` and commit it with the change to sql/.
            """
    }

    /// The files are read as bytes, not through the loader, so a decoding that changed the
    /// text (a byte order mark dropped, line ends converted) would show too.
    @Test func theBinaryHoldsExactlyTheFilesOfSQL() throws {
        let root = TestDatabase.migrationsDirectory
        let onDisk = try FileManager.default.subpathsOfDirectory(atPath: root).filter { $0.hasSuffix(".sql") }.sorted().map { path in
            let bytes = try Data(contentsOf: URL(fileURLWithPath: root + "/" + path))
            return MigrationSource.SQLFile(path: path, text: String(decoding: bytes, as: UTF8.self))
        }
        #expect(!onDisk.isEmpty)
        let stale = Self.staleness(embedded: MigrationSource.embeddedFiles, onDisk: onDisk)
        #expect(stale == nil, "\(stale ?? "")")
    }

    @Test func stalenessNamesTheFilesAndTheCommand() {
        typealias File = MigrationSource.SQLFile
        let embedded = [File(path: "grants.sql", text: "GRANT a;\n"), File(path: "views/old.sql", text: "x"),
                        File(path: "migrations/0001_a.sql", text: "SELECT 1;\n")]
        let onDisk = [File(path: "grants.sql", text: "GRANT b;\n"), File(path: "functions/new.sql", text: "y"),
                      File(path: "migrations/0001_a.sql", text: "SELECT 1;\n")]
        #expect(Self.staleness(embedded: embedded, onDisk: embedded) == nil)
        #expect(Self.staleness(embedded: embedded, onDisk: onDisk) == """
            The copy of sql/ built into the binary (Sources/HabitStore/EmbeddedMigrations.swift) is stale:
              changed in sql/ since it was built in: grants.sql
              in sql/ but not built in: functions/new.sql
              built in but no longer in sql/: views/old.sql
            Regenerate it with `scripts/embed-sql` and commit it with the change to sql/.
            """)
        // A byte order mark is a change, though a reader may not show it.
        #expect(Self.staleness(embedded: [File(path: "grants.sql", text: "\u{FEFF}GRANT a;\n")],
                               onDisk: [File(path: "grants.sql", text: "GRANT a;\n")])?.contains("changed in sql/ since it was built in: grants.sql") == true)
    }

    /// One reading for both: the same migrations and current-state files, in the same order.
    @Test func theBinaryGivesTheMigrationsOfTheDirectory() throws {
        let fromDirectory = try Migrator(directory: TestDatabase.migrationsDirectory)
        let fromBinary = try Migrator(.embedded)
        // Compared whole, reported by path (the texts are long).
        func files(_ migrator: Migrator) -> [(path: String, text: String)] {
            migrator.migrations.map { (path: "migrations/\($0.fileName) (version \($0.version))", text: $0.sql) }
                + migrator.currentStateFiles.map { (path: $0.path, text: $0.sql) }
        }
        let binary = files(fromBinary), directory = files(fromDirectory)
        let same = fromBinary.migrations == fromDirectory.migrations && fromBinary.currentStateFiles == fromDirectory.currentStateFiles
        let differing = Set(binary.map(\.path) + directory.map(\.path)).filter { path in
            binary.first { $0.path == path }?.text != directory.first { $0.path == path }?.text
        }
        #expect(same, """
            the binary's copy gives other files than sql/ (\(differing.sorted().joined(separator: ", "))); in order, \
            from the binary: \(binary.map(\.path)); from sql/: \(directory.map(\.path))
            """)
        #expect(!fromBinary.migrations.isEmpty && !fromBinary.currentStateFiles.isEmpty)
    }

    /// The checksums recorded are the same whichever copy migrated: a database migrated from
    /// the files, then by the binary, sees no change, and the other way round; and each is
    /// `sha256sum` of the file.
    @Test func aDatabaseSeesNoChangeBetweenTheFilesAndTheBinary() throws {
        let fromDirectory = try Migrator(directory: TestDatabase.migrationsDirectory)
        let fromBinary = try Migrator(.embedded)
        func bookkeeping(_ connection: Connection) throws -> [String] {
            try connection.query("""
                SELECT format('%s %s %s', version, name, checksum) FROM habit.schema_migrations
                UNION ALL SELECT format('%s %s %s', path, checksum, schema_version) FROM habit.current_state_files
                ORDER BY 1
                """).map { try $0.decode(String.self, at: 0) }
        }
        // Migrated from the files (the tests' template), then by the binary.
        let fromFiles = try TestDatabase.with { database throws in
            let connection = try database.connect()
            defer { connection.close() }
            let before = try bookkeeping(connection)
            let report = try fromBinary.migrate(connection)
            #expect(report.applied.isEmpty && report.appliedFiles.isEmpty, "\(report)")
            #expect(try fromBinary.status(connection).allSatisfy { !$0.pending })
            #expect(try bookkeeping(connection) == before)
            return before
        }
        // Migrated by the binary, then from the files.
        try TestDatabase.with(migrated: false) { database throws in
            let connection = try database.connect()
            defer { connection.close() }
            let first = try fromBinary.migrate(connection)
            #expect(first.applied == fromDirectory.migrations.map(\.version))
            let after = try bookkeeping(connection)
            let report = try fromDirectory.migrate(connection)
            #expect(report.applied.isEmpty && report.appliedFiles.isEmpty, "\(report)")
            #expect(try bookkeeping(connection) == after)
            let checksums = try connection.query("""
                SELECT 'migrations/' || name, checksum FROM habit.schema_migrations UNION ALL SELECT path, checksum FROM habit.current_state_files
                """).map { (try $0.decode(String.self, at: 0), try $0.decode(String.self, at: 1)) }
            #expect(Dictionary(uniqueKeysWithValues: checksums) == (try Self.sha256sums()))
            // The same rows the files wrote (version, name, checksum; path, checksum, version).
            #expect(after == fromFiles)
        }
    }

    /// `sha256sum` of each file of sql/ by its path under sql/.
    static func sha256sums() throws -> [String: String] {
        let root = TestDatabase.migrationsDirectory
        let paths = try FileManager.default.subpathsOfDirectory(atPath: root).filter { $0.hasSuffix(".sql") }
        let result = try WorkerProcess.run("/usr/bin/sha256sum", paths.map { root + "/" + $0 })
        #expect(result.status == 0, "\(result.stderr)")
        var sums: [String: String] = [:]
        for line in result.stdout.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            sums[String(parts[1].drop(while: { $0 == " " || $0 == "*" }).dropFirst(root.count + 1))] = String(parts[0])
        }
        return sums
    }
}
