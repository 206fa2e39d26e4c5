import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// `sync.push` over the pipes: each (client_id, mutation_id) takes effect exactly once, its
/// outcome recorded next to its effect (issue 18).
@Suite("habit serve: sync.push")
struct SyncPushTests {
    static func mutation(_ id: String, _ method: String, _ members: [String: WireJSON] = [:]) -> WireJSON {
        .object([.init("mutation_id", .string(id)), .init("method", .string(method)),
                 .init("params", .object(members.sorted { $0.key < $1.key }.map { WireJSON.Member($0.key, $0.value) }))])
    }

    static func push(_ user: UUID, client: String, _ mutations: [WireJSON]) -> WireJSON {
        params(user, ["client_id": .string(client), "mutations": .array(mutations)])
    }

    /// What a push changed, as psql sees it: every synced table's rows of the user.
    static func snapshot(_ admin: Connection, user: UUID) throws -> [String] {
        try admin.query("""
            SELECT 'habit ' || name || ' ' || is_active FROM habit_templates WHERE user_id = \(user)
            UNION ALL SELECT 'completion ' || template_id || ' ' || completed_date FROM habit_completions WHERE user_id = \(user)
            UNION ALL SELECT 'task ' || title || ' ' || state FROM tasks WHERE user_id = \(user)
            UNION ALL SELECT 'list ' || name FROM task_lists WHERE user_id = \(user)
            ORDER BY 1
            """).map { try $0.decode(String.self, at: 0) }
    }

    @Test("a repeated push answers the recorded outcomes and applies nothing again; a failing mutation is recorded and the next ones run")
    func repeatedPushAppliesNothingAgain() throws {
        try WorkerSession.with { session in
            let worker = session.worker, user = UUID(), habit = UUID(), missing = UUID()
            let today = try session.today().description
            let mutations = [
                Self.mutation("m1", "habits.create", ["id": .uuid(habit), "name": "Walk"]),
                Self.mutation("m2", "completions.toggle", ["template_id": .uuid(habit), "date": .string(today)]),
                Self.mutation("m3", "habits.update", ["id": .uuid(missing), "name": "Nobody"]),
                Self.mutation("m4", "tasks.create", ["title": "Milk"]),  // no client id: a second run would add a row
                Self.mutation("m5", "habits.update", ["id": .uuid(habit), "name": ""]),
                Self.mutation("m6", "lists.create", ["name": "Errands", "user_id": .uuid(user)]),
            ]
            let first = try worker.call("sync.push", Self.push(user, client: "phone", mutations))
            let results = try #require(first["results"]?.arrayValue)
            #expect(results.map { $0["mutation_id"]?.stringValue } == ["m1", "m2", "m3", "m4", "m5", "m6"])
            #expect(results[0]["result"]?["id"] == .uuid(habit))
            #expect(results[1]["result"]?["completed"] == true, "\(results[1])")
            #expect(results[2]["error"]?["code"]?.intValue == -32001 && results[2]["error"]?["data"]?["reason"] == "not_found")
            #expect(results[3]["result"]?["title"] == "Milk")
            #expect(results[4]["error"]?["code"]?.intValue == -32602 && results[4]["error"]?["data"]?["field"] == "name")
            #expect(results[5]["result"]?["name"] == "Errands")
            #expect(first["cursor"]?.stringValue?.hasPrefix("v4.") == true)
            let after = try Self.snapshot(session.admin, user: user)
            #expect(after == ["completion \(habit.uuidString.lowercased()) \(today)", "habit Walk true", "list Errands", "task Milk not_started"])

            // The answer was lost: the same push again, and once more with one new mutation.
            let again = try worker.call("sync.push", Self.push(user, client: "phone", mutations))
            #expect(again["results"] == first["results"])
            let more = try worker.call("sync.push", Self.push(user, client: "phone", mutations + [Self.mutation("m7", "tasks.create", ["title": "Bread"])]))
            #expect(more["results"]?.arrayValue?.prefix(6).map { $0 } == results[...].map { $0 })
            #expect(try Self.snapshot(session.admin, user: user) == (after + ["task Bread not_started"]).sorted())
            // Each record holds its outcome; the ones that changed something, the change number.
            let records = try session.admin.query("""
                SELECT mutation_id, outcome ? 'result', change_seq IS NOT NULL FROM habit.sync_mutations
                WHERE user_id = \(user) AND client_id = 'phone' ORDER BY mutation_id
                """).map { "\(try $0.decode(String.self, at: 0)) \(try $0.decode(Bool.self, at: 1)) \(try $0.decode(Bool.self, at: 2))" }
            #expect(records == ["m1 true true", "m2 true true", "m3 false false", "m4 true true", "m5 false false", "m6 true true", "m7 true true"])
            // Another client's ids are its own.
            let tablet = try worker.call("sync.push", Self.push(user, client: "tablet", [Self.mutation("m4", "tasks.create", ["title": "Eggs"])]))
            #expect(tablet["results"]?[0]?["result"]?["title"] == "Eggs")
        }
    }

    @Test("user_mismatch, method_not_allowed, unknown methods and bad params are recorded outcomes; the push's own params are checked first")
    func refusedMutations() throws {
        try WorkerSession.with { session in
            let worker = session.worker, user = UUID(), other = UUID()
            let mutations = [
                Self.mutation("a", "habits.create", ["user_id": .uuid(other), "name": "Theirs"]),
                Self.mutation("b", "sync.pull"),
                Self.mutation("c", "changes.subscribe"),
                Self.mutation("d", "system.ping"),
                Self.mutation("e", "rpc.discover"),
                Self.mutation("f", "habits.frobnicate"),
                Self.mutation("g", "habits.create", ["name": "Walk", "colour": "#aabbcc"]),
                Self.mutation("h", "habits.create", ["name": "Mine"]),
            ]
            let results = try #require(try worker.call("sync.push", Self.push(user, client: "c", mutations))["results"]?.arrayValue)
            let errors = results.map { "\($0["error"]?["code"]?.intValue ?? 0) \($0["error"]?["data"]?["reason"]?.stringValue ?? "-")" }
            #expect(errors == ["-32018 user_mismatch", "-32019 method_not_allowed", "-32019 method_not_allowed", "-32019 method_not_allowed",
                               "-32019 method_not_allowed", "-32601 unknown_method", "-32602 unknown_key", "0 -"])
            #expect(try session.habitCount(user: user) == 1 && session.habitCount(user: other) == 0)
            #expect(try session.admin.queryOne("SELECT count(*) FROM habit.sync_mutations WHERE user_id = \(user) AND outcome ? 'error'")
                .decode(Int.self, at: 0) == 7)

            // The push's own params: nothing runs, nothing is recorded.
            let bad: [(WireJSON, String, String)] = [
                (params(user, ["client_id": "", "mutations": []]), "client_id", "empty"),
                (params(user, ["client_id": .string(String(repeating: "x", count: 201)), "mutations": []]), "client_id", "too_long"),
                (params(user, ["client_id": "c", "mutations": [.object([.init("method", "habits.list")])]]), "mutations[0].mutation_id", "required"),
                (params(user, ["client_id": "c", "mutations": [Self.mutation("z", "habits.list").with("extra", 1)]]), "mutations[0].extra", "unknown_key"),
                (params(user, ["client_id": "c", "mutations": ["m"]]), "mutations[0]", "wrong_type"),
                (params(user, ["client_id": "c", "mutations": .array(Array(repeating: Self.mutation("z", "habits.list"), count: 1_001))]),
                 "mutations", "out_of_range"),
            ]
            for (parameters, field, reason) in bad {
                expectError(try worker.request("sync.push", params: parameters), code: -32602, id: nil, reason: reason, field: field)
            }
            #expect(try session.admin.queryOne("SELECT count(*) FROM habit.sync_mutations WHERE mutation_id = 'z'").decode(Int.self, at: 0) == 0)
        }
    }

    /// The same mutations pushed at once through two workers: the claim's primary key makes the
    /// second wait for the first, which then answers the first's record. A toggle applied twice
    /// would undo itself; a create without a client id would make two rows.
    @Test("the same push sent concurrently through two workers applies once, and both answer the same outcomes")
    func concurrentPushesApplyOnce() throws {
        try WorkerSession.with { session in
            let user = UUID(), habit = UUID()
            _ = try session.worker.call("habits.create", params(user, ["id": .uuid(habit), "name": "Walk", "activated_at": "2020-01-01T00:00:00Z"]))
            let today = try session.today()
            try session.withAnotherWorker { other in
                for round in 0..<20 {
                    let date = today.adding(days: -round).description
                    let push = Self.push(user, client: "phone", [
                        Self.mutation("toggle \(round)", "completions.toggle", ["template_id": .uuid(habit), "date": .string(date)]),
                        Self.mutation("task \(round)", "tasks.create", ["title": .string("Task \(round)")]),
                    ])
                    try session.worker.sendRequest("sync.push", params: push, id: .int(round))
                    try other.sendRequest("sync.push", params: push, id: .int(round))
                    let answers = [try session.worker.response(id: .int(round)), try other.response(id: .int(round))]
                    #expect(answers[0].result?["results"] != nil && answers[0].result?["results"] == answers[1].result?["results"], "\(answers)")
                }
            }
            #expect(try session.completionCount(user: user) == 20)
            #expect(try session.admin.queryOne("SELECT count(*) FROM tasks WHERE user_id = \(user)").decode(Int.self, at: 0) == 20)
        }
    }

    /// SIGKILL after a push committed its first mutation and before it answered: the retry on a
    /// new worker answers the first from its record and applies the second once.
    @Test("a worker killed between a mutation's commit and the push's answer: the retry on a new worker applies each mutation once")
    func killedBetweenCommitAndAnswer() throws {
        try WorkerSession.with { session in
            let user = UUID(), habit = UUID(), task = UUID()
            _ = try session.worker.call("habits.create", params(user, ["id": .uuid(habit), "name": "Walk"]))
            _ = try session.worker.call("tasks.create", params(user, ["id": .uuid(task), "title": "Milk"]))
            let today = try session.today().description
            let push = Self.push(user, client: "phone", [
                Self.mutation("1", "completions.toggle", ["template_id": .uuid(habit), "date": .string(today)]),
                Self.mutation("2", "tasks.update", ["id": .uuid(task), "title": "Bread"]),
            ])
            try session.withAnotherWorker { doomed in
                // Mutation 2 waits for another session's row lock on the task: mutation 1 has
                // committed by then, and the push has not answered.
                let holder = try session.database.connect()
                defer { holder.close() }
                try holder.withTransaction { connection in
                    try connection.execute("SELECT 1 FROM public.tasks WHERE id = \(task) AND user_id = \(user) FOR UPDATE")
                    try doomed.sendRequest("sync.push", params: push, id: 1)
                    // A row lock's wait (not a relation extension's, which a busy server shows too).
                    _ = try session.admin.workerBackendsWaitingForLocks(atLeast: 1, event: "transactionid")
                    #expect(try session.admin.queryOne("SELECT count(*) FROM habit.sync_mutations WHERE user_id = \(user)").decode(Int.self, at: 0) == 1)
                    #expect(doomed.terminate(signal: SIGKILL))
                }
                #expect(doomed.waitForExit() != nil)
            }
            #expect(try session.completionCount(user: user) == 1)
            let retry = try session.worker.call("sync.push", push)
            #expect(retry["results"]?[0]?["result"]?["completed"] == true && retry["results"]?[1]?["result"]?["title"] == "Bread", "\(retry)")
            #expect(try session.admin.queryOne("SELECT count(*) FROM habit.sync_mutations WHERE user_id = \(user)").decode(Int.self, at: 0) == 2)
            #expect(try Self.snapshot(session.admin, user: user) == ["completion \(habit.uuidString.lowercased()) \(today)", "habit Walk true",
                                                                      "task Bread not_started"])
        }
    }
}
