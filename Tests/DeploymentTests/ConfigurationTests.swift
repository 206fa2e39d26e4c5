import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Every `habit serve` setting exists as a flag and an environment variable, is listed by
/// `--help`, and is documented in docs/operations.md; the environment alone configures a
/// worker, and a flag beats its variable.
@Suite("deployment: configuration by flag and environment")
struct ConfigurationTests {
    /// `--flag` → its environment variable, as `habit serve --help` lists them.
    static func helpOptions() throws -> [(flag: String, variable: String)] {
        try helpEntries().map { ($0.flag, $0.variable) }
    }

    /// Each option of `habit serve --help`: its flag, environment variable and help text.
    static func helpEntries() throws -> [(flag: String, variable: String, help: String)] {
        let help = try WorkerProcess.run(try WorkerProcess.binaryPath(), ["serve", "--help"], environment: WorkerProcess.childEnvironment())
        #expect(help.status == 0)
        // Each option's help is a flag at the start of a line, then text up to the next flag.
        let options = help.stdout.components(separatedBy: "OPTIONS:").last ?? ""
        var result: [(String, String, String)] = []
        let pattern = try NSRegularExpression(pattern: #"(?m)^\s{2}(--[a-z0-9-]+)((?:.|\n)*?)(?=^\s{2}-|\z)"#)
        let text = options as NSString
        for match in pattern.matches(in: options, range: NSRange(location: 0, length: text.length)) {
            let flag = text.substring(with: match.range(at: 1))
            if ["--help", "--version"].contains(flag) { continue }
            let body = text.substring(with: match.range(at: 2)).replacingOccurrences(of: #"\s+"#, with: " ", options: .regularExpression)
            guard let variable = body.range(of: #"env [A-Z_]+"#, options: .regularExpression).map({ String(body[$0].dropFirst(4)) }) else {
                Issue.record("\(flag) names no environment variable in --help: \(body)")
                continue
            }
            result.append((flag, variable, body))
        }
        return result
    }

    @Test("habit serve --help lists every setting with its environment variable, and docs/operations.md documents each with its default")
    func helpAndDocumentation() throws {
        let options = try Self.helpOptions()
        let flags = Set(options.map(\.flag))
        // The settings the deployment needs, at least.
        for wanted in ["--database-url", "--data-dir", "--pool-size", "--max-in-flight", "--statement-timeout-ms", "--max-line-bytes",
                       "--max-batch", "--log-level", "--log-format", "--prepared-statements", "--connect-timeout", "--migrate", "--migrations-dir"] {
            #expect(flags.contains(wanted), "habit serve --help lacks \(wanted)")
        }
        let operations = try String(contentsOf: TestDatabase.repositoryRoot.appendingPathComponent("docs/operations.md"), encoding: .utf8)
        let rows = operations.split(separator: "\n").filter { $0.hasPrefix("|") }
        for (flag, variable) in options {
            let row = rows.first { $0.hasPrefix("| `\(flag)` |") } // the row whose first cell is the flag
            #expect(row != nil, "docs/operations.md has no table row for \(flag)")
            #expect(row?.contains("`\(variable)") == true, "docs/operations.md does not give \(flag)'s variable \(variable): \(row ?? "")")
        }
    }

    /// Issue 15, finding 9: one truth for each default. Every "default X)" in `habit serve
    /// --help` is the default column of the option's row in docs/operations.md (backticks aside).
    @Test("the defaults in habit serve --help are the defaults in docs/operations.md")
    func defaultsAgree() throws {
        let operations = try String(contentsOf: TestDatabase.repositoryRoot.appendingPathComponent("docs/operations.md"), encoding: .utf8)
        let rows = operations.split(separator: "\n").filter { $0.hasPrefix("| `--") }
        var compared = 0
        for (flag, _, help) in try Self.helpEntries() {
            guard let match = help.range(of: #"default [^\s,:)]+\)"#, options: .regularExpression) else { continue }
            let helpDefault = String(help[match].dropFirst("default ".count).dropLast())
            guard let row = rows.first(where: { $0.hasPrefix("| `\(flag)` |") }) else { continue } // helpAndDocumentation says so
            let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            let documented = cells.count > 2 ? cells[2].replacingOccurrences(of: "`", with: "") : ""
            #expect(documented == helpDefault, "\(flag): --help says default \(helpDefault), docs/operations.md says \(documented)")
            compared += 1
        }
        #expect(compared >= 12, "only \(compared) defaults found in --help")
    }

    @Test("the environment alone configures a worker; a flag beats its variable; a malformed variable exits 64")
    func environmentConfiguresTheWorker() throws {
        try TestDatabase.with { database in
            let environment = [
                "DATABASE_URL": try database.workerURL(),
                "HABIT_POOL_SIZE": "3",
                "HABIT_MAX_IN_FLIGHT": "7",
                "HABIT_MAX_LINE_BYTES": "200",
                "HABIT_STATEMENT_TIMEOUT_MS": "300",
                "HABIT_LOG_LEVEL": "debug",
                "HABIT_LOG_FORMAT": "text",
                "HABIT_PREPARED_STATEMENTS": "off",
                "HABIT_CONNECT_TIMEOUT": "2",
                "HABIT_MAX_BATCH": "2",
            ]
            let binary = try WorkerProcess.binaryPath()
            let worker = try WorkerProcess(executable: binary, arguments: ["serve"], environment: WorkerProcess.childEnvironment(environment))
            defer { worker.forceStop() }
            let user = UUID()
            #expect(try worker.request("system.health").isSuccess) // DATABASE_URL from the environment
            // Answered with id null: the line was never parsed.
            try worker.sendRequest("system.ping", params: ["padding": .string(String(repeating: "x", count: 300))], id: 1)
            let oversized = try worker.readResponse()
            #expect(oversized.code == -32600 && oversized.data?["limit"] == 200, "\(oversized.raw)")
            try worker.send(#"[{"jsonrpc":"2.0","id":1,"method":"system.ping"},{"jsonrpc":"2.0","id":2,"method":"system.ping"},{"jsonrpc":"2.0","id":3,"method":"system.ping"}]"#)
            let tooLarge = try worker.readResponse()
            #expect(tooLarge.code == -32600 && tooLarge.data?["limit"] == 2, "HABIT_MAX_BATCH=2: \(tooLarge.raw)")
            let habit = try #require(try worker.call("habits.create", params(user, ["name": "Locked"]))["id"])
            let admin = try database.connect()
            defer { admin.close() }
            try admin.withTransaction { connection in
                try connection.execute("SELECT 1 FROM habit_templates WHERE user_id = \(user) FOR UPDATE")
                let blocked = try worker.request("habits.update", params: params(user, ["id": habit, "name": "Unlocked"]))
                #expect(blocked.code == -32011, "HABIT_STATEMENT_TIMEOUT_MS=300 should time the update out: \(blocked.raw)")
            }
            worker.closeInput()
            #expect(try worker.remainingOutput().isEmpty)
            #expect(worker.waitForExit() == 0)
            _ = worker.waitForStderrEnd()
            let log = worker.stderrText
            let serving = log.split(separator: "\n").first { $0.contains(" INFO serving ") }.map { " \($0) " } ?? ""
            #expect(serving.contains(" max_in_flight=7 ") && serving.contains(" pool_size=3 ") && serving.contains(" pid=\(worker.pid) "), "\(log)")
            #expect(log.contains(" DEBUG request "), "HABIT_LOG_LEVEL=debug: \(log)")
            #expect(!log.contains("{\"ts\""), "HABIT_LOG_FORMAT=text: \(log)")

            // Flags win over the environment.
            let flagged = try WorkerProcess(executable: binary, arguments: ["serve", "--pool-size", "2", "--log-format", "json"],
                                            environment: WorkerProcess.childEnvironment(environment))
            defer { flagged.forceStop() }
            #expect(try flagged.request("system.ping").isSuccess)
            flagged.closeInput()
            #expect(flagged.waitForExit() == 0)
            _ = flagged.waitForStderrEnd()
            let servingJSON = flagged.stderrText.split(separator: "\n").first { $0.contains(#""msg":"serving""#) }
                .flatMap { try? WireJSON.parse(String($0)) }
            #expect(servingJSON?["max_in_flight"]?.intValue == 7 && servingJSON?["pool_size"]?.intValue == 2
                    && servingJSON?["pid"]?.intValue == Int(flagged.pid), "\(flagged.stderrText)")

            // A malformed value is a usage error, not a silent default.
            for (name, value) in [("HABIT_POOL_SIZE", "four"), ("HABIT_PREPARED_STATEMENTS", "maybe"), ("HABIT_LOG_FORMAT", "xml")] {
                var bad = environment
                bad[name] = value
                let result = try WorkerProcess.run(binary, ["serve"], environment: WorkerProcess.childEnvironment(bad))
                #expect(result.status == 64, "\(name)=\(value): exit \(result.status), \(result.stderr)")
            }
        }
    }
}
