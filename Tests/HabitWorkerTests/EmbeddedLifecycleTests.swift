import Foundation
import HabitStore
import TestSupport
import Testing

/// The embedded server's lifecycle under running workers (issue 15, finding 6): `habit db stop`
/// no longer leaves a worker answering -32010 forever, and a machine without PostgreSQL's
/// server programs is told so.
@Suite("habit serve: embedded server lifecycle", .serialized)
struct EmbeddedLifecycleTests {
    @Test("after habit db stop, a running embedded worker starts the server again and answers")
    func workerRestartsAStoppedServer() throws {
        // World-traversable parent: under root the server runs as the postgres user.
        let parent = "/tmp/habit-embedded-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let dataDirectory = parent + "/data"
        let binary = try WorkerProcess.binaryPath()
        let environment = WorkerProcess.childEnvironment(["HABIT_MIGRATIONS_DIR": TestDatabase.migrationsDirectory])
        defer {
            _ = try? WorkerProcess.run(binary, ["db", "stop", "--data-dir", dataDirectory], environment: environment)
            try? FileManager.default.removeItem(atPath: parent)
        }
        let worker = try WorkerProcess(executable: binary, arguments: ["serve", "--data-dir", dataDirectory, "--pool-size", "2"],
                                       environment: environment)
        defer { worker.forceStop() }
        let user = UUID()
        #expect(try worker.request("habits.create", params: params(user, ["name": "Before"])).isSuccess)

        let stop = try WorkerProcess.run(binary, ["db", "stop", "--data-dir", dataDirectory], environment: environment)
        try #require(stop.status == 0, "db stop: \(stop.stderr)")
        let status = try WorkerProcess.run(binary, ["db", "status", "--data-dir", dataDirectory], environment: environment)
        #expect(status.status == 3, "stopped: \(status.stdout)")

        // Meanwhile -32010; eventually the data again, from the same worker (bounded attempts).
        var answered = false
        for _ in 0..<100 {
            let listed = try worker.request("habits.list", params: params(user))
            if listed.isSuccess {
                #expect(listed.result?["habits"]?.arrayValue?.count == 1, "\(listed.raw)")
                answered = true
                break
            }
            expectError(listed, code: Code.databaseUnavailable, id: nil, reason: "database_unavailable")
            usleep(100_000)
        }
        #expect(answered, "the worker never got its database back: \(worker.stderrText.suffix(2_000))")
        #expect(worker.stderrText.contains("started it again"), "\(worker.stderrText.suffix(2_000))")
        let running = try WorkerProcess.run(binary, ["db", "status", "--data-dir", dataDirectory], environment: environment)
        #expect(running.status == 0)
        worker.closeInput()
        #expect(worker.waitForExit() == 0)
    }

    @Test("without PostgreSQL's server programs, serve and db start say so and how to install them; nothing is created")
    func missingServerPrograms() throws {
        let parent = "/tmp/habit-noprograms-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: parent + "/bin", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: parent) }
        let dataDirectory = parent + "/data"
        let binary = try WorkerProcess.binaryPath()
        let environment = WorkerProcess.childEnvironment(["HABIT_PG_BINDIR": parent + "/bin",
                                                          "HABIT_MIGRATIONS_DIR": TestDatabase.migrationsDirectory])
        for arguments in [["serve", "--data-dir", dataDirectory], ["db", "start", "--data-dir", dataDirectory]] {
            let result = try WorkerProcess.run(binary, arguments, environment: environment, timeout: 60)
            let what = arguments.prefix(2).joined(separator: " ")
            #expect(result.status == 3, "\(what): exit \(result.status): \(result.stderr)")
            #expect(result.stderr.contains("PostgreSQL server programs"), "\(what): \(result.stderr)")
            #expect(result.stderr.contains("not found in \(parent)/bin"), "\(what): \(result.stderr)")
            #expect(result.stderr.contains("apt-get install postgresql"), "\(what): \(result.stderr)")
            #expect(!result.stderr.contains("cannot reach"), "\(what): \(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: dataDirectory), "\(what) created \(dataDirectory)")
        }
    }
}
