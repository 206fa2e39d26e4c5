import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// `params.deadline_ms` (docs/protocol.md, "Envelope members"): a request not started before its
/// deadline is not run, a running one is cancelled; both answer -32016 `deadline_exceeded` and
/// leave nothing behind. Outcomes only: no assertion on how long anything took.
@Suite("habit serve: deadlines")
struct DeadlineTests {
    static let deadlineExceeded = -32016

    private func completions(_ session: WorkerSession, user: UUID) throws -> Int {
        try session.admin.queryOne("SELECT count(*) FROM habit_completions WHERE user_id = \(user)").decode(Int.self, at: 0)
    }

    /// Runs `body` while the admin holds `habit`'s row with FOR UPDATE: a completion of it
    /// waits for the lock (its foreign key check takes FOR KEY SHARE on the habit).
    private func whileHabitLocked(_ session: WorkerSession, habit: UUID, _ body: () throws -> Void) throws {
        try session.admin.withTransaction { connection in
            try connection.lockUserRowForUpdate("public.habit_templates", id: habit)
            try body()
        }
    }

    /// Waits (hang guard 20 s) until `count` of the worker's statements wait for a lock.
    private func waitForLockWaits(_ session: WorkerSession, count: Int = 1) throws {
        let observer = try session.database.connect()
        defer { observer.close() }
        _ = try observer.workerBackendsWaitingForLocks(atLeast: count)
    }

    @Test("a completions.set blocked on a row lock past its 200 ms deadline is cancelled: deadline_exceeded, nothing written")
    func runningRequestIsCancelled() throws {
        // No statement timeout: only the deadline can end the wait while the lock is held.
        try WorkerSession.with(arguments: ["--statement-timeout-ms", "0"]) { session in
            let worker = session.worker
            let user = UUID()
            let habit = try #require(try worker.createHabit(user: user, name: "Locked").habitID)
            let today = try session.today().description
            try whileHabitLocked(session, habit: habit) {
                // Without the deadline it would wait for the lock as long as it is held; the answer
                // is read while the lock is still held.
                let answer = try worker.request("completions.set", params: params(user, [
                    "template_id": .uuid(habit), "date": .string(today), "completed": true, "deadline_ms": 200,
                ]), id: "late")
                expectError(answer, code: Self.deadlineExceeded, id: "late", reason: "deadline_exceeded")
            }
            // The lock is gone; the user's next request runs after anything of the first.
            #expect(try worker.request("habits.list", params: params(user)).isSuccess)
            #expect(try completions(session, user: user) == 0, "the cancelled write took effect")
            // The connection it ran on is fine: the same write with time to spare succeeds.
            let again = try worker.request("completions.set", params: params(user, [
                "template_id": .uuid(habit), "date": .string(today), "completed": true, "deadline_ms": 60_000,
            ]))
            #expect(again.result?["completed"] == true, "\(again.raw)")
            #expect(try completions(session, user: user) == 1)
        }
    }

    @Test("pool of one, its connection blocked: requests queued past their deadline never run; one with time left does")
    func queuedRequestsExpire() throws {
        // No statement timeout: the reads' transactions then run with their time left (the
        // shared round trip's per-transaction statement_timeout).
        try WorkerSession.with(arguments: ["--pool-size", "1", "--statement-timeout-ms", "0"]) { session in
            let worker = session.worker
            let blocked = UUID(), other = UUID(), patient = UUID()
            let habit = try #require(try worker.createHabit(user: blocked, name: "Blocked").habitID)
            let sibling = try #require(try worker.createHabit(user: blocked, name: "Sibling").habitID)
            let otherHabit = try #require(try worker.createHabit(user: other, name: "Other").habitID)
            let patientHabit = try #require(try worker.createHabit(user: patient, name: "Patient").habitID)
            let today = try session.today().description
            try session.whileUpdateWaits(user: blocked, habit: habit, renamingTo: "Unblocked", id: "slow") {
                try waitForLockWaits(session)
                // Queued for the one connection (another user), and behind its user's blocked request.
                try worker.sendRequest("completions.set", params: params(other, [
                    "template_id": .uuid(otherHabit), "date": .string(today), "completed": true, "deadline_ms": 200,
                ]), id: "queued")
                try worker.sendRequest("habits.update", params: params(blocked, [
                    "id": .uuid(sibling), "name": "Renamed", "deadline_ms": 200,
                ]), id: "behind-user")
                try worker.sendRequest("completions.set", params: params(patient, [
                    "template_id": .uuid(patientHabit), "date": .string(today), "completed": true, "deadline_ms": 600_000,
                ]), id: "patient")
                // Reads queued together share one round trip, each with its own deadline.
                try worker.sendRequest("day.get", params: params(other, ["date": .string(today), "deadline_ms": 200]), id: "queued-read")
                try worker.sendRequest("day.get", params: params(patient, ["date": .string(today), "deadline_ms": 600_000]), id: "patient-read")
                try worker.sendRequest("day.get", params: params(other, ["date": .string(today)]), id: "plain-read")
                // Answered without the database once the lines before it were read: from then on
                // 300 ms later both 200 ms deadlines have passed, however slowly the worker read.
                #expect(try worker.request("system.ping", id: "ping").isSuccess)
                usleep(300_000)
                #expect(!worker.bufferedResponses.contains { $0.id == "slow" })
            }
            #expect(try worker.response(id: "slow").result?["name"] == "Unblocked")
            expectError(try worker.response(id: "queued"), code: Self.deadlineExceeded, id: "queued", reason: "deadline_exceeded")
            expectError(try worker.response(id: "behind-user"), code: Self.deadlineExceeded, id: "behind-user", reason: "deadline_exceeded")
            #expect(try worker.response(id: "patient").result?["completed"] == true)
            expectError(try worker.response(id: "queued-read"), code: Self.deadlineExceeded, id: "queued-read", reason: "deadline_exceeded")
            #expect(try worker.response(id: "patient-read").isSuccess)
            #expect(try worker.response(id: "plain-read").isSuccess)
            #expect(try completions(session, user: other) == 0, "the expired completions.set ran")
            #expect(try completions(session, user: patient) == 1)
            let names = try session.admin.query("SELECT name FROM habit_templates WHERE user_id = \(blocked) ORDER BY name")
                .map { try $0.decode(String.self, at: 0) }
            #expect(names == ["Sibling", "Unblocked"], "the expired habits.update ran")
        }
    }

    @Test("a batch: each element has its own deadline")
    func batchElementsHaveTheirOwnDeadlines() throws {
        try WorkerSession.with(arguments: ["--statement-timeout-ms", "0"]) { session in
            let worker = session.worker
            let user = UUID(), other = UUID()
            let habit = try #require(try worker.createHabit(user: user, name: "Locked").habitID)
            let today = try session.today().description
            try whileHabitLocked(session, habit: habit) {
                try worker.send(.array([
                    WorkerProcess.envelope(method: "completions.set", params: params(user, [
                        "template_id": .uuid(habit), "date": .string(today), "completed": true, "deadline_ms": 200,
                    ]), id: "late"),
                    WorkerProcess.envelope(method: "habits.list", params: params(other, ["deadline_ms": 600_000]), id: "list"),
                    WorkerProcess.envelope(method: "habits.list", params: params(other), id: "plain"),
                    WorkerProcess.envelope(method: "system.ping", params: ["deadline_ms": 1], id: "ping"),
                ]))
                let batch = try worker.readResponse().batch
                #expect(batch.count == 4)
                for element in batch {
                    if element.id == "late" {
                        expectError(element, code: Self.deadlineExceeded, id: "late", reason: "deadline_exceeded")
                    } else {
                        #expect(element.isSuccess, "\(element.raw)")
                    }
                }
            }
            #expect(try worker.request("habits.list", params: params(user)).isSuccess)
            #expect(try completions(session, user: user) == 0)
        }
    }

    @Test("deadline_ms must be a positive integer of milliseconds; null is absent; every method accepts it")
    func badDeadlines() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            let bad: [WireJSON] = [0, -1, .number("1.5"), .number("1e3"), "200", true, .array([]), .object([]), .number("2147483648")]
            for value in bad {
                for method in ["system.ping", "habits.list", "rpc.discover"] {
                    let params: WireJSON = method == "habits.list" ? params(user, ["deadline_ms": value]) : ["deadline_ms": value]
                    expectError(try worker.request(method, params: params), code: Code.invalidParams, id: nil, field: "deadline_ms")
                }
            }
            for value: WireJSON in [.null, 1, 2_147_483_647, 600_000] {
                #expect(try worker.request("system.ping", params: ["deadline_ms": value]).isSuccess)
            }
            // (1 ms may well pass before a database request starts: deadline_exceeded is right then.)
            for value: WireJSON in [.null, 2_147_483_647, 600_000] {
                #expect(try worker.request("habits.list", params: params(user, ["deadline_ms": value])).isSuccess)
            }
            // An unknown method is -32601 before its params are looked at, envelope included.
            expectError(try worker.request("habits.lst", params: ["deadline_ms": 0]), code: Code.methodNotFound, id: nil)
            // Still refused as an unknown key next to the envelope members.
            expectError(try worker.request("habits.list", params: params(user, ["deadline_ms": 1_000, "deadline": 1_000])),
                        code: Code.invalidParams, id: nil, field: "deadline")
        }
    }
}
