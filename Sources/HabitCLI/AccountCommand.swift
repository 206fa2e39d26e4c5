import ArgumentParser
import Foundation
import HabitStore
import HabitWorker
import JSONRPC
import LoopImport
import PostgresClient

extension ImportMode: ExpressibleByArgument {}

/// What `habit account import FILE` reads: our own document, or a Loop Habit Tracker export (zip).
enum ImportSource: String, CaseIterable, ExpressibleByArgument {
    case habitAccount = "habit-account"
    case loop
}

/// `habit account export|import|delete`: a user's whole account as a habit-account document
/// (docs/admin.md, docs/protocol.md "Accounts"), and its deletion, for admins.
struct AccountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "account",
        abstract: "Export, import or delete one user's whole account (habit-account JSON document).",
        discussion: """
            export and import act as the user (role authenticated with the user's claims, as the worker does), so \
            the connecting role must be allowed to SET ROLE authenticated; --backfill also needs \
            habit_admin membership (checked by the database). Without --database-url or DATABASE_URL \
            the embedded server's superuser connects.

            Exit status: 0 done; 64 bad arguments; 3 database unreachable or lost; 1 any other error \
            (a refused document: the JSON path at fault and the reason on stderr; nothing written).
            """,
        subcommands: [Export.self, Import.self, Delete.self]
    )

    static func connection(_ database: DatabaseOptions, _ application: String) throws -> Connection {
        try database.connect(try database.connectionURL(embedded: \.adminConnectionString), applicationName: application)
    }

    static func user(_ text: String) throws -> UUID {
        guard text.utf8.count == 36, let id = UUID(uuidString: text) else { throw ValidationError("--user must be a UUID") }
        return id
    }

    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write the user's account document to stdout.",
            discussion: """
                One REPEATABLE READ snapshot, read and written a page at a time (memory stays flat \
                however big the account). The output is the same document account.export's pages make.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Option(help: ArgumentHelp("The user.", valueName: "uuid"))
        var user: String

        @Option(help: ArgumentHelp("Items per page read from the database.", valueName: "n"))
        var pageSize = 1_000

        func validate() throws {
            _ = try AccountCommand.user(user)
            guard (1...AccountRepository.maxLimit).contains(pageSize) else {
                throw ValidationError("--page-size must be 1 to \(AccountRepository.maxLimit)")
            }
        }

        func run() throws {
            try reportingFailures {
                let connection = try AccountCommand.connection(database, "habit-account-export")
                defer { connection.close() }
                // No statement timeout: a big account takes as long as it takes.
                let repository = AccountRepository(connection: connection, settings: StoreSettings(statementTimeoutMilliseconds: 0))
                let output = FileHandle.standardOutput
                var stream = AccountDocumentStream { output.write($0) }
                try repository.exportAll(user: try AccountCommand.user(user), pageSize: pageSize) { page in
                    try stream.add(page)
                }
                try stream.finish()
                if ProcessInfo.processInfo.environment["HABIT_REPORT_PEAK_RSS"] == "1" {
                    FileHandle.standardError.write(Data("peak_rss_kib=\(WeeklyCountsCommand.peakResidentKiB())\n".utf8))
                }
            }
        }
    }

    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Import a habit-account document for the user, all or nothing.",
            discussion: """
                FILE is the document (- for stdin). merge (default) writes the document's rows and \
                keeps the user's others; replace makes the user's rows exactly the document's. The \
                whole document is checked before anything is written; importing it again changes \
                nothing. --backfill lifts the rules on completion and skip dates (future dates, days \
                the habit was not on), for admins. Prints the counts per kind as JSON.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Option(help: ArgumentHelp("The user.", valueName: "uuid"))
        var user: String

        @Option(help: "merge or replace.")
        var mode: ImportMode = .merge

        @Flag(help: "Admins only: allow completions and skips on any date.")
        var backfill = false

        @Flag(help: "Import under new ids derived from the user (another account's export: no id_conflict; importing it again changes nothing).")
        var newIds = false

        @Option(help: "habit-account (our JSON document) or loop (Loop Habit Tracker's CSV export, the .zip it writes).")
        var from: ImportSource = .habitAccount

        @Argument(help: ArgumentHelp("The document or the Loop export (- for stdin).", valueName: "file"))
        var file: String

        func validate() throws {
            _ = try AccountCommand.user(user)
        }

        func run() throws {
            try reportingFailures {
                let bytes: Data
                do {
                    bytes = file == "-" ? FileHandle.standardInput.readDataToEndOfFile()
                        : try Data(contentsOf: URL(fileURLWithPath: file))
                } catch {
                    FileHandle.standardError.write(Data("habit: cannot read \(file): \(error.localizedDescription)\n".utf8))
                    throw ExitCode(1)
                }
                let connection = try AccountCommand.connection(database, "habit-account-import")
                defer { connection.close() }
                let repository = AccountRepository(connection: connection, settings: StoreSettings(statementTimeoutMilliseconds: 0))
                let userID = try AccountCommand.user(user)
                let checked: AccountDocument.Checked
                var warnings: [String] = [], loop: JSONValue?
                do {
                    switch from {
                    case .habitAccount:
                        checked = try AccountDocument.check(try JSONParser.parse([UInt8](bytes)))
                    case .loop:
                        let export: LoopExport
                        do {
                            export = try LoopExport.read(zip: bytes)
                        } catch let error as LoopImportError {
                            throw error.invalidParams
                        }
                        let converted = try LoopConversion.convert(export, user: userID, repository: repository)
                        (checked, warnings, loop) = (converted.document, converted.warnings, converted.report)
                    }
                } catch let error as JSONParseError {
                    FileHandle.standardError.write(Data("habit: \(file) is not JSON: \(error)\n".utf8))
                    throw ExitCode(1)
                } catch let error as RPCError {
                    FileHandle.standardError.write(Data("habit: \(from == .loop ? "Loop export" : "document") refused: \(Self.describe(error))\n".utf8))
                    throw ExitCode(1)
                }
                let report: ImportReport
                do {
                    report = try repository.importDocument(user: userID, documentJSON: checked.json, mode: mode, backfill: backfill,
                                                           newIDs: newIds, warnings: warnings)
                } catch let error as StoreError {
                    FileHandle.standardError.write(Data("habit: document refused: \(Self.describe(AccountDocument.refusal(error)))\n".utf8))
                    throw ExitCode(1)
                }
                print(LoopConversion.answerJSON(report: report, loop: loop))
            }
        }

        /// `<field>: <reason> (<message>)` of a -32602 or domain error.
        static func describe(_ error: RPCError) -> String {
            guard case .object(let data)? = error.data else { return error.message }
            let field = data["field"]?.stringValue.map { $0 + ": " } ?? ""
            let reason = data["reason"]?.stringValue ?? error.message
            let message = data["message"]?.stringValue.map { " (\($0))" } ?? ""
            return field + reason + message
        }
    }
}
