import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// `sync.push` does bounded work and keeps bounded records (issue 31, items 2, 3 and 10): reads
/// are refused, an outcome is at most 64 KiB, a user keeps at most 10,000 records and 16 MiB of
/// outcomes, and a push stops at its deadline. Asserted by outcomes and counts, never by time.
@Suite("habit serve: sync.push bounds")
struct SyncPushBoundsTests {
    static func mutation(_ id: String, _ method: String, _ members: [String: WireJSON] = [:]) -> WireJSON {
        SyncPushTests.mutation(id, method, members)
    }

    static func reasons(_ answer: WireJSON) -> [String] {
        (answer["results"]?.arrayValue ?? []).map { entry in
            if let error = entry["error"] { return "\(error["code"]?.intValue ?? 0) \(error["data"]?["reason"]?.stringValue ?? "-")" }
            return "ok"
        }
    }

    static func recordCount(_ admin: Connection, user: UUID) throws -> Int {
        try admin.queryOne("SELECT count(*) FROM habit.sync_mutations WHERE user_id = \(user)").decode(Int.self, at: 0)
    }

    /// Item 2's report: 20 `tasks.list` of 700 tasks with 10 KB notes left 137 MB of records.
    /// Item 10's: `account.export` in a push was recorded as -32603 with nothing logged.
    @Test("reads in a push are refused with method_not_allowed and keep only the small refusal; writes run")
    func readsAreRefused() throws {
        try WorkerSession.with { session in
            let worker = session.worker, user = UUID(), habit = UUID()
            _ = try worker.call("habits.create", params(user, ["id": .uuid(habit), "name": "Walk"]))
            let notes = String(repeating: "n", count: 10_000)
            for index in 0..<20 { _ = try worker.call("tasks.create", params(user, ["title": .string("Task \(index)"), "notes": .string(notes)])) }
            let today = try session.today().description
            let reads = ["tasks.list", "tasks.today", "habits.list", "habits.history", "day.get", "week.counts", "habits.stats",
                         "stats.calendar", "lists.list", "profile.get", "account.export"]
            var mutations = reads.enumerated().map { index, method -> WireJSON in
                switch method {
                case "day.get", "week.counts": Self.mutation("r\(index)", method, ["date": .string(today)])
                case "habits.history": Self.mutation("r\(index)", method, ["id": .uuid(habit)])
                case "stats.calendar": Self.mutation("r\(index)", method, ["from": .string(today), "to": .string(today)])
                default: Self.mutation("r\(index)", method)
                }
            }
            mutations += (0..<20).map { Self.mutation("t\($0)", "tasks.list") }
            mutations.append(Self.mutation("w", "tasks.create", ["title": "Bread"]))
            let answer = try worker.call("sync.push", SyncPushTests.push(user, client: "phone", mutations))
            let reasons = Self.reasons(answer)
            #expect(reasons == Array(repeating: "-32019 method_not_allowed", count: reads.count + 20) + ["ok"], "\(answer)")
            // Every record is a small refusal, or the write's result.
            let bytes = try session.admin.queryOne("""
                SELECT count(*), coalesce(max(octet_length(outcome::text)), 0) FROM habit.sync_mutations WHERE user_id = \(user)
                """)
            #expect(try bytes.decode(Int.self, at: 0) == reads.count + 21)
            #expect(try bytes.decode(Int.self, at: 1) < 1_000)
            #expect(try session.admin.queryOne("SELECT count(*) FROM tasks WHERE user_id = \(user) AND title = 'Bread'").decode(Int.self, at: 0) == 1)
            #expect(!worker.stderrText.contains("internal error"), "\(worker.stderrText.suffix(2_000))")
        }
    }

    @Test("an outcome is at most 64 KiB: the largest write's result is recorded whole, and the table refuses a larger one")
    func outcomeSizeIsBounded() throws {
        try WorkerSession.with { session in
            let worker = session.worker, user = UUID()
            // The largest result a write answers: 500-character title, 10,000 four-byte notes.
            let title = String(repeating: "😀", count: 500), notes = String(repeating: "😀", count: 10_000)
            let answer = try worker.call("sync.push", SyncPushTests.push(user, client: "phone", [
                Self.mutation("big", "tasks.create", ["title": .string(title), "notes": .string(notes)]),
            ]))
            #expect(answer["results"]?[0]?["result"]?["notes"]?.stringValue == notes)
            let size = try session.admin.queryOne("SELECT octet_length(outcome::text) FROM habit.sync_mutations WHERE user_id = \(user)")
                .decode(Int.self, at: 0)
            #expect(size > 40_000 && size <= 65_536)
            // A direct writer meets the same bound (0022's CHECK).
            let refusal = #expect(throws: PostgresError.self) {
                try session.admin.execute("""
                    INSERT INTO habit.sync_mutations (user_id, client_id, mutation_id, outcome)
                    VALUES (\(user), 'psql', 'huge', jsonb_build_object('result', repeat('x', 70000)))
                    """)
            }
            #expect(refusal?.withFieldsCitusDrops.constraint == "sync_mutations_outcome_size", "\(String(describing: refusal))")
            #expect(try Self.recordCount(session.admin, user: user) == 1)
        }
    }

    @Test("per user, replay records are capped at 10,000 and 16 MiB of outcomes, the oldest pruned first")
    func replayRecordsAreCapped() throws {
        try WorkerSession.with { session in
            let worker = session.worker, user = UUID(), other = UUID()
            // 10,050 small old records, then 450 of ~51 KB of base64 random bytes (23 MB stored,
            // which pglz cannot shrink much),
            // newer than those, older than the push; another user's 10,050 stay as they are.
            for owner in [user, other] {
                try session.admin.execute("""
                    INSERT INTO habit.sync_mutations (user_id, client_id, mutation_id, outcome, created_at)
                    SELECT \(owner), 'old', 's' || g, '{"result": {"ok": true}}', now() - interval '2 days' - g * interval '1 second'
                    FROM generate_series(1, 10050) g
                    """)
            }
            try session.admin.execute("""
                INSERT INTO habit.sync_mutations (user_id, client_id, mutation_id, outcome, created_at)
                SELECT \(user), 'old', 'b' || g,
                       jsonb_build_object('result', (SELECT translate(encode(string_agg(decode(md5(random()::text || g || i), 'hex'), ''), 'base64'), chr(10), '')
                                                     FROM generate_series(1, 2400) i)),
                       now() - interval '1 day' - g * interval '1 second'
                FROM generate_series(1, 450) g
                """)
            let answer = try worker.call("sync.push", SyncPushTests.push(user, client: "phone", [Self.mutation("new", "tasks.create", ["title": "Milk"])]))
            #expect(Self.reasons(answer) == ["ok"])
            let kept = try session.admin.queryOne("""
                SELECT count(*), sum(pg_column_size(outcome)), count(*) FILTER (WHERE mutation_id LIKE 's%'),
                       count(*) FILTER (WHERE mutation_id = 'new'), min(mutation_id) FILTER (WHERE mutation_id LIKE 'b%')
                FROM habit.sync_mutations WHERE user_id = \(user)
                """)
            #expect(try kept.decode(Int.self, at: 0) <= 10_000)
            #expect(try kept.decode(Int.self, at: 1) <= 16 * 1_048_576)
            // The bytes cap bites inside the large records: none of the older small ones is left,
            // the newest large ones and the push's record are.
            #expect(try kept.decode(Int.self, at: 2) == 0)
            #expect(try kept.decode(Int.self, at: 3) == 1)
            #expect(try kept.decode(String.self, at: 4) == "b1")
            #expect(try Self.recordCount(session.admin, user: other) == 10_050)

            // Only the count cap: 10,050 small records of a third user and one push keep 10,000.
            let third = UUID()
            try session.admin.execute("""
                INSERT INTO habit.sync_mutations (user_id, client_id, mutation_id, outcome, created_at)
                SELECT \(third), 'old', 's' || g, '{"result": {"ok": true}}', now() - interval '2 days' - g * interval '1 second'
                FROM generate_series(1, 10050) g
                """)
            _ = try worker.call("sync.push", SyncPushTests.push(third, client: "phone", [Self.mutation("new", "tasks.create", ["title": "Eggs"])]))
            #expect(try Self.recordCount(session.admin, user: third) == 10_000)
            // The oldest went: s10050 … s10000 (51 of them, the push added one).
            #expect(try session.admin.queryOne("""
                SELECT count(*) FROM habit.sync_mutations WHERE user_id = \(third) AND mutation_id IN ('s10000', 's9999', 'new')
                """).decode(Int.self, at: 0) == 2)
        }
    }

    /// Item 3: a push whose second mutation waits on a row lock another session holds. At the
    /// push's limit the waiting mutation is cancelled and rolled back, the later ones never
    /// start; they are answered deadline_exceeded, nothing of them is recorded, and once the
    /// lock is gone the same push applies them. No time is measured: the lock makes the
    /// mutation wait for as long as the push allows, whatever the machine's speed.
    static func stopsAtItsLimit(_ session: WorkerSession, deadline: Int?) throws {
        let worker = session.worker, user = UUID()
        var tasks: [UUID] = []
        for name in ["A", "B", "C"] {
            let id = UUID()
            _ = try worker.call("tasks.create", params(user, ["id": .uuid(id), "title": .string(name)]))
            tasks.append(id)
        }
        let created = UUID()
        let mutations = [
            Self.mutation("1", "tasks.create", ["id": .uuid(created), "title": "New"]),
            Self.mutation("2", "tasks.update", ["id": .uuid(tasks[0]), "title": "A2"]),
            Self.mutation("3", "tasks.update", ["id": .uuid(tasks[1]), "title": "B2"]),
            Self.mutation("4", "tasks.cycle", ["id": .uuid(tasks[2])]),
        ]
        var push = SyncPushTests.push(user, client: "phone", mutations)
        if let deadline { push = push.with("deadline_ms", .number(String(deadline))) }
        let holder = try session.database.connect()
        defer { holder.close() }
        let first = try holder.withTransaction { connection in
            try connection.lockUserRowForUpdate("public.tasks", id: tasks[0])
            return try worker.call("sync.push", push)
        }
        #expect(Self.reasons(first) == ["ok", "-32016 deadline_exceeded", "-32016 deadline_exceeded", "-32016 deadline_exceeded"], "\(first)")
        #expect(try SyncPushTests.snapshot(session.admin, user: user) == ["task A not_started", "task B not_started", "task C not_started",
                                                                           "task New not_started"])
        #expect(try session.admin.query("SELECT mutation_id FROM habit.sync_mutations WHERE user_id = \(user)")
            .map { try $0.decode(String.self, at: 0) } == ["1"])
        // Pushed again, with the lock gone: the first answers its record, the others run.
        let again = try worker.call("sync.push", SyncPushTests.push(user, client: "phone", mutations))
        #expect(Self.reasons(again) == ["ok", "ok", "ok", "ok"], "\(again)")
        #expect(again["results"]?[0] == first["results"]?[0])
        #expect(try SyncPushTests.snapshot(session.admin, user: user) == ["task A2 not_started", "task B2 not_started", "task C active",
                                                                           "task New not_started"])
        #expect(try Self.recordCount(session.admin, user: user) == 4)
    }

    @Test("a push stops at its deadline_ms: the cut-off and unstarted mutations are not applied, not recorded, and can be pushed again")
    func pushStopsAtItsDeadline() throws {
        try WorkerSession.with { session in try Self.stopsAtItsLimit(session, deadline: 1_500) }
    }

    @Test("without deadline_ms, a push stops --statement-timeout-ms after it began (the per-push ceiling)")
    func pushStopsAtItsCeiling() throws {
        try WorkerSession.with(arguments: ["--statement-timeout-ms", "1500"]) { session in try Self.stopsAtItsLimit(session, deadline: nil) }
    }
}
