import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `--health-socket` (issue 15, finding 2): a probe that answers while stdin is not read.
/// Probed through `habit health --socket`, the way an exec probe would.
@Suite("habit serve: health socket", .serialized)
struct HealthSocketTests {
    /// A fresh socket path; the caller removes it (`defer { removeSocket(path) }`): a worker that
    /// exits removes its own, one killed (SIGKILL) cannot, and the files piled up in /tmp.
    static func socketPath() -> String { "/tmp/habit-health-\(UUID().uuidString.prefix(8)).sock" }
    static func removeSocket(_ path: String) { try? FileManager.default.removeItem(atPath: path) }

    /// `habit health --socket path` (with `extra` flags): exit status and the status line as an object.
    static func probe(_ path: String, _ extra: [String] = []) throws -> (status: Int32, line: [String: Any]?, output: String) {
        let result = try WorkerProcess.run(try WorkerProcess.binaryPath(), ["health", "--socket", path] + extra,
                                           environment: WorkerProcess.childEnvironment(), timeout: 30)
        let object = result.stdout.data(using: .utf8).flatMap { try? JSONSerialization.jsonObject(with: $0) } as? [String: Any]
        return (result.status, object, result.stdout + result.stderr)
    }

    @Test("answers with every connection blocked on a row lock, the in-flight limit full and more lines waiting on stdin")
    func answersUnderFullBackpressure() throws {
        let path = Self.socketPath()
        defer { Self.removeSocket(path) }
        try WorkerSession.with(arguments: ["--pool-size", "2", "--max-in-flight", "4", "--health-socket", path,
                                           "--statement-timeout-ms", "60000"]) { session in
            let worker = session.worker
            let (alice, bob) = (UUID(), UUID())
            let aliceHabit = try #require(try worker.createHabit(user: alice, name: "A").habitID)
            let bobHabit = try #require(try worker.createHabit(user: bob, name: "B").habitID)
            let before = try Self.probe(path)
            #expect(before.status == 0 && before.line?["status"] as? String == "ok", "\(before.output)")

            try session.admin.withTransaction { connection in
                try connection.lockUserRowForUpdate("public.habit_templates", id: aliceHabit)
                try connection.lockUserRowForUpdate("public.habit_templates", id: bobHabit)
                // Two updates per user: one of each runs (and waits for the lock), one waits
                // behind it; four in flight is the limit, so the pings stay unread on stdin.
                for (index, (user, habit)) in [(alice, aliceHabit), (bob, bobHabit), (alice, aliceHabit), (bob, bobHabit)].enumerated() {
                    try worker.sendRequest("habits.update", params: params(user, ["id": .uuid(habit), "name": .string("U\(index)")]),
                                           id: .int(index))
                }
                for index in 0..<3 { try worker.sendRequest("system.ping", id: .string("ping-\(index)")) }

                // Every probe must answer; the worker reaches the full state on its own time
                // (a bounded number of probes, no timing assertion).
                var full: [String: Any]?
                var last: [String: Any]?
                for _ in 0..<200 {
                    let answer = try Self.probe(path)
                    #expect(answer.status == 0, "no answer while busy: \(answer.output)")
                    guard let line = answer.line else { break }
                    let pool = line["pool"] as? [String: Any]
                    last = line
                    if line["in_flight"] as? Int == 4, pool?["busy"] as? Int == 2 {
                        full = line
                        break
                    }
                    usleep(20_000)
                }
                let line = try #require(full, "the health socket never showed 4 in flight and 2 busy: \(String(describing: last))")
                #expect(line["status"] as? String == "ok")
                #expect(line["max_in_flight"] as? Int == 4)
                #expect(line["queued"] as? Int == 2)
                #expect(line["pid"] as? Int != nil)
                let pool = try #require(line["pool"] as? [String: Any])
                #expect(pool["size"] as? Int == 2 && pool["connected"] as? Int == 2, "\(line)")
                // stdin is not read: no ping has been answered.
                #expect(!worker.bufferedResponses.contains { $0.raw.contains("ping-") })
            }
            // Lock released: everything is answered, and the counters come back down.
            for index in 0..<4 { #expect(try worker.response(id: .int(index)).isSuccess) }
            for index in 0..<3 { #expect(try worker.response(id: .string("ping-\(index)")).isSuccess) }
            let after = try Self.probe(path)
            #expect(after.line?["in_flight"] as? Int == 0 && after.line?["queued"] as? Int == 0, "\(after.output)")

            // The socket file is the owner's only, and goes away with the worker.
            var info = stat()
            #expect(lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK && info.st_mode & 0o777 == 0o600)
            worker.closeInput()
            #expect(worker.waitForExit() == 0)
            #expect(lstat(path, &info) != 0, "socket file left behind")
        }
    }

    @Test("degraded when the database cannot be reached, with the last database error; a probe with --live still passes")
    func degradedWithoutADatabase() throws {
        let path = Self.socketPath()
        defer { Self.removeSocket(path) }
        let missing = "/tmp/habit-nothing-\(UUID().uuidString.prefix(8))"
        try WorkerProcess.withServe(databaseURL: "host=\(missing) user=habit_worker dbname=habit",
                                    arguments: ["--pool-size", "1", "--health-socket", path]) { worker in
            expectError(try worker.request("habits.list", params: params(UUID())), code: Code.databaseUnavailable, id: nil,
                        reason: "database_unavailable")
            let answer = try Self.probe(path)
            #expect(answer.status == 1, "degraded exits 1: \(answer.output)")
            #expect(answer.line?["status"] as? String == "degraded", "\(answer.output)")
            let error = answer.line?["last_database_error"] as? [String: Any]
            #expect(error?["reason"] as? String == "connect_failed", "\(answer.output)")
            #expect(error?["at"] as? String != nil)
            #expect(try Self.probe(path, ["--live"]).status == 0)
        }
        #expect(try Self.probe(path).status == 2, "no worker: no answer")
    }

    @Test("a stale socket file of a crashed worker is replaced; a live worker's socket is not taken over")
    func staleAndLiveSockets() throws {
        let path = Self.socketPath()
        defer { Self.removeSocket(path) }
        // A socket file nobody listens on, as a SIGKILLed worker leaves it.
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in path.utf8.enumerated() { buffer[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0)
        close(descriptor)
        try WorkerSession.with(arguments: ["--health-socket", path]) { session in
            #expect(try session.worker.request("system.ping").isSuccess)
            #expect(try Self.probe(path).status == 0)
            try session.withAnotherWorker(arguments: ["--health-socket", path]) { second in
                #expect(second.waitForExit() == 1, "a second worker must not take over a live socket")
                _ = second.waitForStderrEnd()
                #expect(second.stderrText.contains("served by another running process"), "\(second.stderrText)")
            }
            // The first still answers on it.
            #expect(try Self.probe(path).line?["pid"] as? Int != nil)
        }
    }
}
