import Foundation
import TestSupport
import Testing

/// `habit serve` without a database URL: the README's run path. It creates a private
/// PostgreSQL in --data-dir, migrates it, connects as habit_worker and serves; a second
/// worker reuses the running server; `habit db stop` stops it.
@Suite(.serialized) struct EmbeddedServerTests {
    @Test func servesOnItsOwnDatabaseAndReusesIt() throws {
        // World-traversable parent: under root the server runs as the postgres user.
        let parent = "/tmp/habit-embedded-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o755])
        let dataDirectory = parent + "/data"
        let binary = try WorkerProcess.binaryPath()
        let environment = WorkerProcess.childEnvironment(["HABIT_MIGRATIONS_DIR": TestDatabase.migrationsDirectory])
        defer {
            _ = try? WorkerProcess.run(binary, ["db", "stop", "--data-dir", dataDirectory], environment: environment)
            try? FileManager.default.removeItem(atPath: parent)
        }
        let user = UUID().uuidString.lowercased()
        for round in 1...2 {
            let worker = try WorkerProcess(executable: binary, arguments: ["serve", "--data-dir", dataDirectory],
                                           environment: environment)
            defer { worker.forceStop() }
            let health = try worker.request("system.health")
            #expect(health.result?["database"]?.stringValue == "ok", "round \(round): \(health)")
            if round == 1 {
                let created = try worker.request("habits.create", params: ["user_id": .string(user), "name": "Embedded"])
                #expect(created.isSuccess)
            } else {
                // The second worker found the server running and the data of the first.
                let listed = try worker.request("habits.list", params: ["user_id": .string(user)])
                #expect(listed.result?["habits"]?.arrayValue?.count == 1)
            }
            worker.closeInput()
            #expect(worker.waitForExit() == 0)
        }
        let status = try WorkerProcess.run(binary, ["db", "status", "--data-dir", dataDirectory], environment: environment)
        #expect(status.status == 0)
        let stop = try WorkerProcess.run(binary, ["db", "stop", "--data-dir", dataDirectory], environment: environment)
        #expect(stop.status == 0)
        let after = try WorkerProcess.run(binary, ["db", "status", "--data-dir", dataDirectory], environment: environment)
        #expect(after.status == 3)
    }
}
