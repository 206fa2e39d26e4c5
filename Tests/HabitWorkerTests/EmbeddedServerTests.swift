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

    /// Issue 30 #1 and #3: the README's first command, `scripts/run.sh` fed the README's two
    /// requests, from a copy of this checkout inside a 0700 folder (what `mktemp -d` makes)
    /// that, as root, the postgres user cannot enter. It used to exit 3 without answering
    /// ("cannot reach …/.habit"). Now the embedded database goes to /var/lib/habit/… (root) or
    /// ./.habit (an ordinary user), the log says which, both requests get the README's
    /// answers, and the server is still running after the worker exited until `habit db stop`.
    /// `HABIT_BINARY` makes the script run the binary under test instead of building one.
    @Test func readmeFirstCommandFromACloneInAPrivateFolder() throws {
        var template = Array("/tmp/tmp.XXXXXXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer in mkdtemp(buffer.baseAddress!).map { String(cString: $0) } }
        let folder = try #require(made, "mkdtemp: \(String(cString: strerror(errno)))")
        let clone = folder + "/habit"
        let binary = try WorkerProcess.binaryPath()
        let environment = WorkerProcess.childEnvironment()
        func fromClone(_ arguments: [String]) -> [String] { ["--chdir=\(clone)", binary] + arguments }
        var dataDirectory: String?
        defer {
            _ = try? WorkerProcess.run("/usr/bin/env", fromClone(["db", "stop"]), environment: environment)
            if let dataDirectory, dataDirectory.hasPrefix(EmbeddedServer.sharedRoot + "/") {
                try? FileManager.default.removeItem(atPath: dataDirectory)
            }
            try? FileManager.default.removeItem(atPath: folder)
        }
        // The checkout as a newcomer's clone has it: no build products, no data directory.
        try FileManager.default.createDirectory(atPath: clone, withIntermediateDirectories: false)
        let root = TestDatabase.repositoryRoot.path
        let copy = try WorkerProcess.run("/bin/sh", ["-c", #"tar -C "$1" --exclude='./.build*' --exclude=./.git --exclude=./.habit --exclude=./.swiftpm -cf - . | tar -C "$2" -xf -"#,
                                                      "copy", root, clone], environment: environment)
        try #require(copy.status == 0, "copying the checkout: \(copy.stderr)")
        if getuid() == 0 {
            let enter = try WorkerProcess.run("/usr/sbin/runuser", ["-u", "postgres", "--", "/usr/bin/test", "-x", clone], environment: environment)
            #expect(enter.status != 0, "the postgres user should not be able to enter \(clone)")
        }

        // The README's session: the request lines its printf writes, piped into scripts/run.sh.
        let readme = try String(contentsOfFile: root + "/README.md", encoding: .utf8)
        let session = try #require(readme.components(separatedBy: "## A short session").dropFirst().first, "README: no short session")
        let commandLines = session.components(separatedBy: "\n").prefix { !$0.hasPrefix("    {") }
        #expect(commandLines.contains { $0.trimmingCharacters(in: .whitespaces) == "| scripts/run.sh" }, "README's session: \(commandLines)")
        let requests = commandLines.compactMap { line -> String? in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("'{"), let end = trimmed.lastIndex(of: "'"), end > trimmed.startIndex else { return nil }
            return String(trimmed[trimmed.index(after: trimmed.startIndex)..<end])
        }
        try #require(requests.count == 2, "README's session requests: \(requests)")
        let create = try WireJSON.parse(try #require(requests.first { $0.contains(#""habits.create""#) }))
        let ping = try WireJSON.parse(try #require(requests.first { $0.contains(#""system.ping""#) }))

        let worker = try WorkerProcess(executable: "/usr/bin/env", arguments: ["--chdir=\(clone)", "scripts/run.sh"],
                                       environment: WorkerProcess.childEnvironment(["HABIT_BINARY": binary]))
        defer { worker.forceStop() }
        for request in requests { try worker.send(request) }
        worker.closeInput()
        let lines = try worker.remainingOutput(timeout: 180)
        let status = worker.waitForExit(timeout: 60)
        _ = worker.waitForStderrEnd(timeout: 10)
        let log = worker.stderrText
        #expect(status == 0, "scripts/run.sh exited \(String(describing: status)): \(log.suffix(3_000))")
        let responses = try lines.map { try WorkerResponse(line: Array($0.utf8)) }
        #expect(responses.count == 2, "\(lines) \(log.suffix(3_000))")
        let pinged = responses.first { $0.id == ping["id"] }
        #expect(pinged?.result == ["ok": true], "\(lines)")
        let created = responses.first { $0.id == create["id"] }
        #expect(created?.result?["name"] != nil && created?.result?["name"] == create["params"]?["name"], "\(lines)")

        // Where the data went, as the log says it.
        let ready = try #require(log.split(separator: "\n").first { $0.contains("embedded database ready") }, "\(log.suffix(3_000))")
        let readyLine = try WireJSON.parse(String(ready))
        dataDirectory = readyLine["directory"]?.stringValue
        if getuid() == 0 {
            #expect(dataDirectory?.hasPrefix(EmbeddedServer.sharedRoot + "/habit-") == true, "\(ready)")
            #expect(log.contains("embedded database outside the working directory"), "\(log.suffix(3_000))")
            var info = stat()
            #expect(stat(try #require(dataDirectory), &info) == 0)
            #expect(info.st_mode & 0o7777 == 0o700 && info.st_uid == getpwnam("postgres")?.pointee.pw_uid, "\(ready)")
        } else {
            #expect(dataDirectory == clone + "/.habit", "\(ready)")
        }

        // What keeps running (README, Set-up): the server, until `habit db stop` from the clone.
        let running = try WorkerProcess.run("/usr/bin/env", fromClone(["db", "status"]), environment: environment)
        #expect(running.status == 0 && running.stdout == "running", "db status: \(running.stdout) \(running.stderr)")
        let stop = try WorkerProcess.run("/usr/bin/env", fromClone(["db", "stop"]), environment: environment)
        #expect(stop.status == 0, "db stop: \(stop.stderr)")
        let stopped = try WorkerProcess.run("/usr/bin/env", fromClone(["db", "status"]), environment: environment)
        #expect(stopped.status == 3, "db status after stop: \(stopped.stdout) \(stopped.stderr)")
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
