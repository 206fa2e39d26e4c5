import Foundation
import HabitStore
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

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

    /// Issue 13 #1. As root, from a working directory the postgres user cannot enter (a 0700
    /// home, a clone inside `mktemp -d`), the first start worked and every later one failed
    /// with `createdb: error: database "habit" already exists`: psql's "could not change
    /// directory" on stderr was read together with its answer. Three starts from such a
    /// directory: a fresh one, one reusing the running server, one restarting it. (As an
    /// ordinary user the directory is the user's own, and the test just passes.)
    @Test func startsAgainFromAWorkingDirectoryPostgresCannotEnter() throws {
        let suffix = UUID().uuidString.prefix(8)
        let parent = "/tmp/habit-embedded-\(suffix)"
        let workingDirectory = "/tmp/habit-cwd-\(suffix)"
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        try FileManager.default.createDirectory(atPath: workingDirectory, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: workingDirectory)
        let dataDirectory = parent + "/data"
        let binary = try WorkerProcess.binaryPath()
        // No sql/ in that working directory: the migrations come from the environment.
        let environment = WorkerProcess.childEnvironment(["HABIT_MIGRATIONS_DIR": TestDatabase.migrationsDirectory])
        // posix_spawn cannot change directory from Swift: coreutils' env does, then execs habit.
        func habit(_ arguments: [String]) -> [String] { ["--chdir=\(workingDirectory)", binary] + arguments }
        defer {
            _ = try? WorkerProcess.run("/usr/bin/env", habit(["db", "stop", "--data-dir", dataDirectory]), environment: environment)
            try? FileManager.default.removeItem(atPath: parent)
            try? FileManager.default.removeItem(atPath: workingDirectory)
        }
        if getuid() == 0 {
            let enter = try WorkerProcess.run("/usr/sbin/runuser", ["-u", "postgres", "--", "/usr/bin/test", "-x", workingDirectory],
                                              environment: environment)
            #expect(enter.status != 0, "the postgres user should not be able to enter \(workingDirectory)")
        }
        for round in 1...3 {
            if round == 3 {
                let stop = try WorkerProcess.run("/usr/bin/env", habit(["db", "stop", "--data-dir", dataDirectory]), environment: environment)
                #expect(stop.status == 0, "db stop: \(stop.stderr)")
            }
            let worker = try WorkerProcess(executable: "/usr/bin/env", arguments: habit(["serve", "--data-dir", dataDirectory]),
                                           environment: environment)
            defer { worker.forceStop() }
            let health = try worker.request("system.health")
            #expect(health.result?["database"]?.stringValue == "ok", "round \(round): \(health) \(worker.stderrText)")
            worker.closeInput()
            #expect(worker.waitForExit() == 0, "round \(round): \(worker.stderrText)")
        }
    }

    /// Issue 13 #1: a data directory whose path is too long for a socket inside it puts the
    /// socket under /tmp, where anyone may have made that folder first. One that is not the
    /// server user's own with mode 0700 is refused; without it, start makes its own so.
    @Test func refusesASocketDirectoryUnderTmpMadeBySomeoneElse() throws {
        let parent = "/tmp/habit-embedded-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let server = try EmbeddedServer(directory: parent + "/" + String(repeating: "d", count: 90))
        let socketDirectory = server.socketDirectory
        #expect(socketDirectory.hasPrefix("/tmp/habit-socket-"))
        defer {
            try? server.stop()
            try? FileManager.default.removeItem(atPath: parent)
            try? FileManager.default.removeItem(atPath: socketDirectory)
        }
        // Planted: world-writable (and, under root, not the postgres user's).
        try? FileManager.default.removeItem(atPath: socketDirectory)
        try FileManager.default.createDirectory(atPath: socketDirectory, withIntermediateDirectories: false)
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: socketDirectory)
        let refused = try #require(throws: EmbeddedServerError.self) { try server.start() }
        #expect("\(refused)".contains("refusing to use the socket directory \(socketDirectory)"), "\(refused)")
        #expect(!server.isRunning())

        try FileManager.default.removeItem(atPath: socketDirectory)
        try server.start()
        var status = stat()
        #expect(lstat(socketDirectory, &status) == 0)
        #expect(status.st_mode & 0o7777 == 0o700)
        let serverUID = getuid() == 0 ? getpwnam("postgres").map { $0.pointee.pw_uid } : getuid()
        #expect(status.st_uid == serverUID)
        #expect(server.isRunning())
        try server.stop()
    }
}
