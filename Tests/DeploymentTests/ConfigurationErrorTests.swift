import Foundation
import TestSupport
import Testing

/// Issue 15, finding 8: every `habit serve` setting is checked before anything happens, and a
/// bad one is one JSON log line on stderr (JSON is the default log format, and the fallback
/// when the format setting is itself the bad one), exit 64, no embedded database started.
@Suite("deployment: a bad setting is one JSON log line, before anything starts")
struct ConfigurationErrorTests {
    /// (what is wrong, extra arguments, extra environment, the name the message must contain).
    static let cases: [(String, [String], [String: String], String)] = [
        ("pool size by variable", [], ["HABIT_POOL_SIZE": "four"], "HABIT_POOL_SIZE"),
        ("pool size by flag", ["--pool-size", "four"], [:], "--pool-size"),
        ("pool size zero", ["--pool-size", "0"], [:], "--pool-size"),
        ("max in flight by variable", [], ["HABIT_MAX_IN_FLIGHT": "-1"], "HABIT_MAX_IN_FLIGHT"),
        ("max in flight by flag", ["--max-in-flight", "many"], [:], "--max-in-flight"),
        ("statement timeout", [], ["HABIT_STATEMENT_TIMEOUT_MS": "soon"], "HABIT_STATEMENT_TIMEOUT_MS"),
        ("connect timeout", ["--connect-timeout", "0"], [:], "--connect-timeout"),
        ("max line bytes", [], ["HABIT_MAX_LINE_BYTES": "1k"], "HABIT_MAX_LINE_BYTES"),
        ("max batch", [], ["HABIT_MAX_BATCH": "0"], "HABIT_MAX_BATCH"),
        ("max response bytes", [], ["HABIT_MAX_RESPONSE_BYTES": "big"], "HABIT_MAX_RESPONSE_BYTES"),
        ("max per round trip", [], ["HABIT_MAX_PER_ROUND_TRIP": "x"], "HABIT_MAX_PER_ROUND_TRIP"),
        ("sync retention zero", [], ["HABIT_SYNC_RETENTION_DAYS": "0"], "HABIT_SYNC_RETENTION_DAYS"),
        ("sync retention past 100 years", ["--sync-retention-days", "36501"], [:], "--sync-retention-days"),
        ("log level by variable", [], ["HABIT_LOG_LEVEL": "loud"], "HABIT_LOG_LEVEL"),
        ("log level by flag", ["--log-level", "loud"], [:], "--log-level"),
        ("log format by variable", [], ["HABIT_LOG_FORMAT": "xml"], "HABIT_LOG_FORMAT"),
        ("log format by flag", ["--log-format", "xml"], [:], "--log-format"),
        ("prepared statements", [], ["HABIT_PREPARED_STATEMENTS": "maybe"], "HABIT_PREPARED_STATEMENTS"),
        ("migrate", [], ["HABIT_MIGRATE": "perhaps"], "HABIT_MIGRATE"),
        ("health socket not a socket", ["--health-socket", "/etc/hostname"], [:], "--health-socket"),
        ("health socket directory missing", [], ["HABIT_HEALTH_SOCKET": "/nonexistent-habit/health.sock"], "HABIT_HEALTH_SOCKET"),
        ("health socket path too long", ["--health-socket", "/tmp/" + String(repeating: "s", count: 120)], [:], "--health-socket"),
        ("database url shape", [], ["DATABASE_URL": "postgres://u@[::1/db"], "DATABASE_URL"),
        ("unknown flag", ["--pool-sise", "4"], [:], "--pool-sise"),
    ]

    @Test("each bad setting: exit 64, exactly one stderr line, JSON with level error naming the setting, no data directory")
    func badSettings() throws {
        let binary = try WorkerProcess.binaryPath()
        for (what, arguments, environment, name) in Self.cases {
            let dataDirectory = "/tmp/habit-config-\(UUID().uuidString.prefix(8))"
            defer { try? FileManager.default.removeItem(atPath: dataDirectory) }
            let result = try WorkerProcess.run(binary, ["serve", "--data-dir", dataDirectory] + arguments,
                                               environment: WorkerProcess.childEnvironment(environment), timeout: 60)
            #expect(result.status == 64, "\(what): exit \(result.status): \(result.stderr)")
            let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: true)
            #expect(lines.count == 1, "\(what): \(lines.count) stderr lines: \(result.stderr)")
            let object = lines.first.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) } as? [String: Any]
            #expect(object?["level"] as? String == "error", "\(what): \(result.stderr)")
            #expect((object?["msg"] as? String)?.contains(name) == true, "\(what): the message does not name \(name): \(result.stderr)")
            #expect(result.stdout.isEmpty, "\(what): stdout \(result.stdout)")
            #expect(!FileManager.default.fileExists(atPath: dataDirectory), "\(what): the embedded data directory was created")
        }
    }

    @Test("with --log-format text the usage error stays ArgumentParser's text, still exit 64")
    func textFormat() throws {
        let result = try WorkerProcess.run(try WorkerProcess.binaryPath(), ["serve", "--log-format", "text", "--pool-size", "0"],
                                           environment: WorkerProcess.childEnvironment(), timeout: 60)
        #expect(result.status == 64)
        #expect(result.stderr.contains("--pool-size 0 is not a whole number of at least 1"), "\(result.stderr)")
        #expect(!result.stderr.contains("{\"ts\""), "\(result.stderr)")
    }
}
