import Foundation
import PostgresClient
import TestSupport
import Testing

/// Issue 16's write side of skips, through a spawned worker: `completions.set` with `state`,
/// `completions.toggle` on a skipped day, `skips.set_range`, their rules and their races
/// (sql/0010 section 10: `habit.set_day_state`, `habit.set_skips`).
@Suite("habit serve: day states (done, skipped, none) and skips.set_range")
struct DayStateTests {
    /// The rows of `habit` on `day`: (completions, skips).
    static func rows(_ session: WorkerSession, _ habit: WireJSON, _ day: String) throws -> (done: Int, skipped: Int) {
        let id = try #require(habit.stringValue.flatMap(UUID.init(uuidString:)))
        let day = try #require(CalendarDate(iso8601: day))
        let row = try session.admin.queryOne("""
            SELECT (SELECT count(*) FROM habit_completions WHERE template_id = \(id) AND completed_date = \(day)),
                   (SELECT count(*) FROM habit_skips WHERE template_id = \(id) AND skipped_date = \(day))
            """)
        return (try row.decode(Int.self, at: 0), try row.decode(Int.self, at: 1))
    }

    static func answer(_ state: String, changed: Bool) -> WireJSON {
        ["completed": .bool(state == "done"), "state": .string(state), "changed": .bool(changed)]
    }

    @Test("completions.set state: each transition replaces the day's other state; completed true/false are done/none")
    func transitions() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            let habit = try #require(try worker.createHabit(user: user, name: "Run", extra: [.init("activated_at", "2025-01-06T07:00:00Z")])["id"])
            let day = "2025-01-07"
            func set(_ state: String) throws -> WireJSON {
                try worker.call("completions.set", params(user, ["template_id": habit, "date": .string(day), "state": .string(state)]))
            }
            func setCompleted(_ completed: Bool) throws -> WireJSON {
                try worker.call("completions.set", params(user, ["template_id": habit, "date": .string(day), "completed": .bool(completed)]))
            }
            func rows() throws -> (done: Int, skipped: Int) { try Self.rows(session, habit, day) }

            #expect(try set("skipped") == Self.answer("skipped", changed: true))
            #expect(try rows() == (0, 1))
            #expect(try set("skipped") == Self.answer("skipped", changed: false), "idempotent")
            #expect(try set("done") == Self.answer("done", changed: true), "done on a skipped day")
            #expect(try rows() == (1, 0), "the skip removed, the completion inserted")
            #expect(try set("done") == Self.answer("done", changed: false))
            #expect(try set("skipped") == Self.answer("skipped", changed: true), "skipped on a done day")
            #expect(try rows() == (0, 1))
            #expect(try set("none") == Self.answer("none", changed: true), "none on a skipped day")
            #expect(try rows() == (0, 0))
            #expect(try set("none") == Self.answer("none", changed: false))
            #expect(try set("done") == Self.answer("done", changed: true))
            #expect(try set("none") == Self.answer("none", changed: true), "none on a done day")
            #expect(try rows() == (0, 0))

            // The old param: true = done (replacing a skip), false = none (removing a skip too).
            try set("skipped")
            #expect(try setCompleted(true) == Self.answer("done", changed: true))
            #expect(try rows() == (1, 0))
            try set("skipped")
            #expect(try setCompleted(false) == Self.answer("none", changed: true))
            #expect(try rows() == (0, 0))
        }
    }

    @Test("completions.toggle on a skipped day: done, the skip removed; a future skipped day: future_date")
    func toggleOnASkippedDay() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            let habit = try #require(try worker.createHabit(user: user, name: "Run", extra: [.init("activated_at", "2025-01-06T07:00:00Z")])["id"])
            func toggle(_ day: String) throws -> WorkerResponse {
                try worker.request("completions.toggle", params: params(user, ["template_id": habit, "date": .string(day)]))
            }
            try worker.call("completions.set", params(user, ["template_id": habit, "date": "2025-01-07", "state": "skipped"]))
            #expect(try toggle("2025-01-07").result == ["completed": true])
            #expect(try Self.rows(session, habit, "2025-01-07") == (1, 0))
            #expect(try toggle("2025-01-07").result == ["completed": false])
            #expect(try Self.rows(session, habit, "2025-01-07") == (0, 0))

            let tomorrow = try session.today().adding(days: 1).description
            try worker.call("completions.set", params(user, ["template_id": habit, "date": .string(tomorrow), "state": "skipped"]))
            expectError(try toggle(tomorrow), code: -32002, id: nil, reason: "future_date")
            #expect(try Self.rows(session, habit, tomorrow) == (0, 1), "the refused toggle left the skip")
        }
    }

    @Test("completions.set rules: future done, skips up to today + 366, inactive days, other users, params")
    func rules() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID(), stranger = UUID()
            let habit = try #require(try worker.createHabit(user: user, name: "Run", extra: [.init("activated_at", "2025-01-06T07:00:00Z")])["id"])
            func request(_ members: [String: WireJSON], as acting: UUID? = nil) throws -> WorkerResponse {
                try worker.request("completions.set", params: params(acting ?? user, ["template_id": habit].merging(members) { $1 }))
            }
            let today = try session.today()
            func expectFuture(_ response: WorkerResponse, sourceLocation: SourceLocation = #_sourceLocation) throws {
                expectError(response, code: -32002, id: nil, reason: "future_date", sourceLocation: sourceLocation)
                let reported = response.data?["today"]?.stringValue
                let after = try session.today()
                #expect(reported == today.description || reported == after.description, "data.today in \(response.raw)", sourceLocation: sourceLocation)
            }
            let tomorrow = WireJSON.string(today.adding(days: 1).description)
            let farthest = WireJSON.string(today.adding(days: 366).description), beyond = WireJSON.string(today.adding(days: 367).description)

            try expectFuture(try request(["date": tomorrow, "state": "done"]))
            try expectFuture(try request(["date": tomorrow, "completed": true]))
            // completed: false keeps its rule (not after today); state none may clear planned skips.
            try expectFuture(try request(["date": tomorrow, "completed": false]))
            #expect(try request(["date": farthest, "state": "skipped"]).result == Self.answer("skipped", changed: true))
            try expectFuture(try request(["date": beyond, "state": "skipped"]))
            #expect(try request(["date": farthest, "state": "none"]).result == Self.answer("none", changed: true))
            try expectFuture(try request(["date": beyond, "state": "none"]))
            #expect(try session.admin.queryOne("SELECT count(*) FROM habit_skips").decode(Int.self, at: 0) == 0)

            // Not on the day: before the first activation day, and after deactivation.
            for state in ["done", "skipped"] {
                expectError(try request(["date": "2025-01-05", "state": .string(state)]), code: -32003, id: nil, reason: "habit_not_active")
            }
            #expect(try request(["date": "2025-01-05", "state": "none"]).result == Self.answer("none", changed: false), "clearing needs no on-day")
            try worker.call("habits.deactivate", params(user, ["id": habit]))
            for state in ["done", "skipped"] {
                expectError(try request(["date": .string(today.description), "state": .string(state)]), code: -32003, id: nil, reason: "habit_not_active")
                expectError(try request(["date": tomorrow, "state": "skipped"]), code: -32003, id: nil, reason: "habit_not_active")
            }
            #expect(try request(["date": "2025-01-08", "state": "skipped"]).result == Self.answer("skipped", changed: true),
                    "a deactivated habit is still on its past days")

            // Another user's habit is not found, whatever the state; nothing written.
            for state in ["done", "skipped", "none"] {
                expectError(try request(["date": "2025-01-09", "state": .string(state)], as: stranger), code: -32001, id: nil, reason: "not_found")
            }
            #expect(try Self.rows(session, habit, "2025-01-09") == (0, 0))

            // Params: exactly one of completed and state; state's values.
            let both = try request(["date": "2025-01-09", "state": "done", "completed": true])
            expectError(both, code: -32602, id: nil, reason: "not_allowed", field: "state")
            expectError(try request(["date": "2025-01-09"]), code: -32602, id: nil, reason: "required", field: "completed")
            expectError(try request(["date": "2025-01-09", "state": "maybe"]), code: -32602, id: nil, reason: "invalid_choice", field: "state")
            expectError(try request(["date": "2025-01-09", "state": true]), code: -32602, id: nil, reason: "wrong_type", field: "state")
            #expect(try Self.rows(session, habit, "2025-01-09") == (0, 0))
        }
    }

    @Test("skips.set_range: on-days of every habit or one, done days stay done, bounds and rules")
    func setRange() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID(), stranger = UUID()
            // 2025-01-06 is a Monday; B starts on the 8th.
            let a = try #require(try worker.createHabit(user: user, name: "A", extra: [.init("activated_at", "2025-01-06T07:00:00Z")])["id"])
            let b = try #require(try worker.createHabit(user: user, name: "B", extra: [.init("activated_at", "2025-01-08T12:00:00Z")])["id"])
            try worker.call("completions.set", params(user, ["template_id": a, "date": "2025-01-07", "completed": true]))
            func range(_ members: [String: WireJSON], as acting: UUID? = nil) throws -> WorkerResponse {
                try worker.request("skips.set_range", params: params(acting ?? user, members))
            }

            let skipped = try range(["from": "2025-01-05", "to": "2025-01-09", "skipped": true])
            #expect(skipped.result == ["changed": 5, "days": ["2025-01-06", "2025-01-08", "2025-01-09"]], "\(skipped.raw)")
            #expect(try Self.rows(session, a, "2025-01-07") == (1, 0), "the done day stays done")
            #expect(try Self.rows(session, a, "2025-01-05") == (0, 0), "not on before its first day")
            #expect(try Self.rows(session, b, "2025-01-07") == (0, 0))
            #expect(try Self.rows(session, b, "2025-01-08") == (0, 1))
            #expect(try range(["from": "2025-01-05", "to": "2025-01-09", "skipped": true]).result == ["changed": 0, "days": []], "idempotent")

            let unskipB = try range(["template_id": b, "from": "2025-01-01", "to": "2025-01-31", "skipped": false])
            #expect(unskipB.result == ["changed": 2, "days": ["2025-01-08", "2025-01-09"]], "\(unskipB.raw)")
            #expect(try Self.rows(session, a, "2025-01-08") == (0, 1), "only B's skips went")
            #expect(try range(["template_id": a, "from": "2025-01-06", "to": "2025-01-06", "skipped": false]).result
                    == ["changed": 1, "days": ["2025-01-06"]])

            // Bounds: at most 366 days, to not before from.
            let year = try range(["template_id": b, "from": "2025-01-01", "to": "2026-01-01", "skipped": false])
            #expect(year.result == ["changed": 0, "days": []], "366 days: \(year.raw)")
            expectError(try range(["from": "2025-01-01", "to": "2026-01-02", "skipped": false]), code: -32602, id: nil, reason: "out_of_range", field: "to")
            expectError(try range(["from": "2025-01-09", "to": "2025-01-08", "skipped": true]), code: -32602, id: nil, reason: "out_of_range", field: "to")
            expectError(try range(["from": "2025-01-09", "skipped": true]), code: -32602, id: nil, reason: "required", field: "to")
            expectError(try range(["from": "2025-01-09", "to": "2025-01-09"]), code: -32602, id: nil, reason: "required", field: "skipped")

            // Skipping reaches at most today + 366 days; unskipping any range.
            let today = try session.today()
            let far = try range(["template_id": a, "from": .string(today.adding(days: 300).description),
                                 "to": .string(today.adding(days: 367).description), "skipped": true])
            expectError(far, code: -32002, id: nil, reason: "future_date")
            #expect(far.data?["today"] != nil, "\(far.raw)")
            let planned = try range(["template_id": a, "from": .string(today.adding(days: 300).description),
                                     "to": .string(today.adding(days: 366).description), "skipped": true])
            #expect(planned.result?["changed"] == 67, "\(planned.raw)")
            let cleared = try range(["from": .string(today.adding(days: 300).description), "to": .string(today.adding(days: 600).description), "skipped": false])
            #expect(cleared.result?["changed"] == 67, "\(cleared.raw)")

            // Not the user's habit (or no such habit): not found, nothing written.
            expectError(try range(["template_id": a, "from": "2025-01-10", "to": "2025-01-11", "skipped": true], as: stranger),
                        code: -32001, id: nil, reason: "not_found")
            expectError(try range(["template_id": .uuid(UUID()), "from": "2025-01-10", "to": "2025-01-11", "skipped": true]),
                        code: -32001, id: nil, reason: "not_found")
            #expect(try Self.rows(session, a, "2025-01-10") == (0, 0))
            // A user without habits skips nothing.
            #expect(try range(["from": "2025-01-10", "to": "2025-01-11", "skipped": true], as: stranger).result == ["changed": 0, "days": []])
        }
    }

    /// Two writes of one day at once (both held behind the admin's lock on the habit, then
    /// released together): they take turns on the habit's lock, the later replaces the earlier,
    /// both answer success, and the day ends as exactly one of done and skipped.
    @Test("a skip and a completion of the same day at once: both answered, never both rows")
    func concurrentSkipAndCompletion() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            let habit = try #require(try worker.createHabit(user: user, name: "Run", extra: [.init("activated_at", "2025-01-06T07:00:00Z")]))
            let id = try #require(habit.habitID), habitJSON = try #require(habit["id"])
            // pg_stat_activity is read once per transaction: the lock holder cannot watch.
            let observer = try session.database.connect()
            defer { observer.close() }
            // Two workers (one worker runs a user's requests in order, one at a time), like two
            // app servers: their requests really meet in the database.
            try session.withAnotherWorker { other in
            for (round, day) in ["2025-01-07", "2025-01-08", "2025-01-09"].enumerated() {
                try session.admin.withTransaction { connection in
                    try connection.execute("SELECT 1 FROM public.habit_templates WHERE id = \(id) AND user_id = \(user) FOR UPDATE")
                    try worker.sendRequest("completions.set", params: params(user, ["template_id": habitJSON, "date": .string(day), "state": "done"]),
                                           id: .string("done-\(round)"))
                    if round == 2 {
                        // The range's skip of the same day instead: it leaves a done day done.
                        try other.sendRequest("skips.set_range", params: params(user, ["from": .string(day), "to": .string(day), "skipped": true]),
                                              id: .string("skip-\(round)"))
                    } else {
                        try other.sendRequest("completions.set", params: params(user, ["template_id": habitJSON, "date": .string(day), "state": "skipped"]),
                                              id: .string("skip-\(round)"))
                    }
                    _ = try observer.workerBackendsWaitingForLocks(atLeast: 2)
                }
                let done = try worker.response(id: .string("done-\(round)")), skip = try other.response(id: .string("skip-\(round)"))
                #expect(done.result?["state"] == "done", "\(done.raw)")
                #expect(skip.error == nil, "\(skip.raw)")
                let rows = try Self.rows(session, habitJSON, day)
                #expect(rows.done + rows.skipped == 1, "exactly one of done and skipped: \(rows)")
                if round == 2 {
                    // Whichever ran first, the day ends done: a later range passes a done day
                    // over, a later completion replaces the skip.
                    #expect(rows == (1, 0))
                }
            }
            }
        }
    }
}
