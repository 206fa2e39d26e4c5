import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Ready for sharding by `user_id` (issue 20), the statements' side: every statement the
/// worker sends that names a user-owned table also names the user, so Citus could route it to
/// one shard. A private PostgreSQL with pg_stat_statements runs a representative worker
/// session over the pipes (every method of the registry at least once, the calls of
/// OpenRPCTests.resultsMatchTheirSchemas), then the test reads what the worker's connections
/// ran (habit_worker and the roles it switches to: every role but the test's superuser).
///
/// The check is a parser-free heuristic (docs/scaling.md, "What the tests prove"): a table is
/// "named" after FROM, JOIN, UPDATE or INTO; a statement that names one must have a
/// `user_id = …`, `… = user_id`, `user_id IN (…)` or `user_id = ANY (…)` predicate, and an
/// INSERT must list `user_id` among its columns. A `habit.*` function the worker calls whose
/// body names a user-owned table must take the user as an argument (an argument whose name
/// contains `user`). Blind spots: the second table of a comma join, a predicate on the wrong
/// table's `user_id` in a join, the statements inside functions (only that they get the user).
@Suite(.serialized) struct ShardingStatementsTests {
    /// Statements (normalized by pg_stat_statements) the check lets through, with the reason.
    /// Empty: the worker calls none of the batch or admin functions (habit.weekly_counts,
    /// admin.*), which are the documented cross-user exceptions of docs/scaling.md.
    static let exceptions: [String: String] = [:]

    /// Functions the worker calls that span users, by signature, with the reason.
    static let functionExceptions: [String: String] = [
        "habit.prune_sync(interval)": "the worker's retention job (SyncPrune): expired tombstones and replay records of every user; a multi-shard DELETE on Citus",
        "habit.prune_reminder_firings(interval)": "the same job: reminder claims of every user past the retention",
        "habit.reminders_due(timestamp with time zone,timestamp with time zone,integer)": "the push sender's window (a service method, no user): every user's reminders in it",
        "habit.claim_reminder_firings(text[],interval,text)": "the sender's claim of firings of many users",
        "habit.ack_reminder_firings(text[])": "the sender's acknowledgement of firings of many users",
    ]

    /// Lowercased, whitespace collapsed.
    static func normalized(_ sql: String) -> String {
        sql.lowercased().split(whereSeparator: { $0.isWhitespace }).joined(separator: " ")
    }

    static func matches(_ pattern: String, _ text: String) -> [[String]] {
        let regex = try! NSRegularExpression(pattern: pattern)
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { match in
            (0..<match.numberOfRanges).map { index in
                Range(match.range(at: index), in: text).map { String(text[$0]) } ?? ""
            }
        }
    }

    /// The user-owned tables `sql` names after FROM, JOIN, UPDATE or INTO: [match, verb, table].
    static func named(_ sql: String, tables: Set<String>) -> [[String]] {
        matches(#"\b(from|join|update|into)\s+(?:only\s+)?(?:[a-z_]+\.)?"?([a-z_]+)"?"#, normalized(sql)).filter { tables.contains($0[2]) }
    }

    /// What is wrong with `sql` for a router query, or nil. `tables` are bare names of the
    /// user-owned tables (schema dropped: statements may or may not qualify them).
    static func problem(_ sql: String, tables: Set<String>) -> String? {
        let text = normalized(sql)
        let references = named(sql, tables: tables)
        guard !references.isEmpty else { return nil }
        var problems: [String] = []
        let hasPredicate = !matches(#"\buser_id\s*(?:=|in\b)|=\s*(?:[a-z_]+\.)?user_id\b"#, text).isEmpty
        for reference in references {
            if reference[1] == "into" {
                let columns = matches(#"\binto\s+(?:[a-z_]+\.)?"# + NSRegularExpression.escapedPattern(for: reference[2])
                                      + #"(?:\s+as\s+[a-z_]+)?\s*\(([^)]*)\)"#, text)
                if !columns.contains(where: { $0[1].contains("user_id") }) { problems.append("INSERT INTO \(reference[2]) without a user_id column") }
            } else if !hasPredicate {
                problems.append("\(reference[1].uppercased()) \(reference[2]) without a user_id predicate")
            }
        }
        return problems.isEmpty ? nil : problems.joined(separator: "; ")
    }

    @Test("the heuristic itself: what it passes and what it flags")
    func heuristic() {
        let tables: Set<String> = ["habit_templates", "habit_completions"]
        #expect(Self.problem("SELECT id FROM public.habit_templates WHERE user_id = $1 AND id = $2", tables: tables) == nil)
        #expect(Self.problem("SELECT c.id FROM habit_completions c JOIN habit_templates t ON t.id = c.template_id AND t.user_id = c.user_id WHERE c.user_id = $1", tables: tables) == nil)
        #expect(Self.problem("INSERT INTO public.habit_templates AS h (id, user_id, name) VALUES ($1, $2, $3)", tables: tables) == nil)
        #expect(Self.problem("SELECT habit.local_date(now(), $1)", tables: tables) == nil)
        #expect(Self.problem("SELECT id FROM public.habit_templates WHERE id = $1", tables: tables) != nil)
        #expect(Self.problem("UPDATE habit_completions SET state = $1 WHERE id = $2", tables: tables) != nil)
        #expect(Self.problem("INSERT INTO habit_templates (id, name) VALUES ($1, $2)", tables: tables) != nil)
        #expect(Self.problem("DELETE FROM habit_completions WHERE template_id = $1", tables: tables) != nil)
    }

    @Test("every statement a worker session sent names its user; every function it called takes the user")
    func workerStatementsNameTheUser() throws {
        let document = try OpenRPCTests.fileDocument()
        try PrivatePostgresServer.with(options: "-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track_utility=off") { server in
            let admin = try Connection(server.adminURL, applicationName: "habit-tests")
            defer { admin.close() }
            try admin.execute("CREATE DATABASE habit")
            let url = server.adminURL.replacingOccurrences(of: "@/postgres?", with: "@/habit?")
            let database = try Connection(url, applicationName: "habit-tests")
            defer { database.close() }
            _ = try Migrator(directory: TestDatabase.migrationsDirectory).migrate(database)
            try database.execute("CREATE EXTENSION pg_stat_statements")
            let tables = try database.query("""
                SELECT n.nspname, c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE c.relkind IN ('r', 'p') AND n.nspname IN ('public', 'habit', 'auth')
                  AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'user_id' AND NOT a.attisdropped)
                """).map { try $0.decode(String.self, at: 1) }
            #expect(tables.count >= 10, "user-owned tables: \(tables)")
            try database.execute("SELECT pg_stat_statements_reset()")

            var covered = Set<String>()
            let workerURL = url.replacingOccurrences(of: "postgres@", with: "habit_worker@")
            try WorkerProcess.withServe(databaseURL: workerURL, arguments: ["--pool-size", "2"]) { worker in
                try Self.representativeSession(worker) { covered.insert($0) }
            }
            #expect(covered == Set(OpenRPCTests.methodNames(document)),
                    "methods the session did not call: \(Set(OpenRPCTests.methodNames(document)).subtracting(covered).sorted())")

            // Everything but this test's own superuser sessions: habit_worker, and the roles its
            // transactions switch to (authenticated), which pg_stat_statements records instead.
            let statements = try database.query("""
                SELECT s.query, s.calls::bigint FROM pg_stat_statements s
                WHERE s.dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
                  AND s.userid <> (SELECT oid FROM pg_roles WHERE rolname = current_user)
                ORDER BY s.query
                """).map { (query: try $0.decode(String.self, at: 0), calls: try $0.decode(Int.self, at: 1)) }
            #expect(statements.count > 20, "the worker's statements were not recorded: \(statements.count)")
            let owned = Set(tables)
            var naming = 0
            for statement in statements where Self.exceptions[Self.normalized(statement.query)] == nil {
                if !Self.named(statement.query, tables: owned).isEmpty { naming += 1 }
                if let problem = Self.problem(statement.query, tables: owned) {
                    Issue.record("\(problem): \(statement.query)")
                }
            }
            #expect(naming > 5, "only \(naming) statements named a user-owned table: the check saw almost nothing")

            // Functions: every habit.* function called by a recorded statement whose body names a
            // user-owned table takes the user as an argument.
            let called = Set(statements.flatMap { Self.matches(#"\bhabit\.([a-z_]+)\s*\("#, Self.normalized($0.query)).map { $0[1] } })
            #expect(!called.isEmpty, "no habit.* function calls recorded")
            let functions = try database.query("""
                SELECT p.proname::text, p.oid::regprocedure::text, coalesce(array_to_string(p.proargnames, ','), ''), p.prosrc
                FROM pg_proc p WHERE p.pronamespace = 'habit'::regnamespace
                """).map { (name: try $0.decode(String.self, at: 0), signature: try $0.decode(String.self, at: 1),
                            arguments: try $0.decode(String.self, at: 2), body: try $0.decode(String.self, at: 3)) }
            for function in functions where called.contains(function.name) && Self.functionExceptions[function.signature] == nil {
                if !Self.named(function.body, tables: owned).isEmpty && !function.arguments.lowercased().contains("user") {
                    Issue.record("\(function.signature) names a user-owned table but takes no user argument (\(function.arguments))")
                }
            }
        }
    }

    /// Every registry method at least once; `called` hears each method name.
    static func representativeSession(_ worker: WorkerProcess, called: (String) -> Void) throws {
        let user = UUID()
        @discardableResult
        func record(_ method: String, _ params: WireJSON? = nil) throws -> WireJSON {
            let result = try worker.call(method, params)
            called(method)
            return result
        }
        try record("system.ping")
        try record("system.health")
        try record("profile.get", params(user))
        try record("profile.set", params(user, ["timezone": "Asia/Tokyo"]))
        let early = try record("sync.pull", params(user))
        let habit = try #require(try record("habits.create", params(user, ["name": "Run", "activated_at": "2020-01-01T07:00:00Z"]))["id"])
        let other = try #require(try record("habits.create", params(user, ["name": "Read", "activated_at": "2020-01-01T00:00:00Z"]))["id"])
        try record("habits.update", params(user, ["id": habit, "schedule": try WireJSON.parse(#"{"type":"weekdays","days":[1,5]}"#)]))
        try record("habits.history", params(user, ["id": habit]))
        try record("habits.deactivate", params(user, ["id": other]))
        try record("habits.activate", params(user, ["id": other]))
        try record("habits.move", params(user, ["template_id": other, "before": habit]))
        try record("habits.archive", params(user, ["template_id": other]))
        try record("habits.unarchive", params(user, ["template_id": other]))
        let area = try #require(try record("areas.create", params(user, ["name": "Health"]))["id"])
        let work = try #require(try record("areas.create", params(user, ["name": "Work"]))["id"])
        try record("areas.update", params(user, ["area_id": work, "name": "Job"]))
        try record("areas.move", params(user, ["area_id": work, "before": area]))
        try record("areas.list", params(user))
        try record("habits.update", params(user, ["id": habit, "area_id": area]))
        try record("areas.delete", params(user, ["area_id": area]))
        let page = try record("habits.list", params(user, ["include_inactive": true, "limit": 1]))
        try record("habits.list", params(user, ["cursor": try #require(page["next_cursor"])]))
        try record("completions.set", params(user, ["template_id": habit, "date": "2020-06-01", "completed": true]))
        try record("completions.toggle", params(user, ["template_id": other, "date": "2020-06-01", "timezone": "UTC"]))
        try record("skips.set_range", params(user, ["template_id": habit, "from": "2020-06-03", "to": "2020-06-04", "skipped": true]))
        let measured = try #require(try record("habits.create", params(user, ["name": "Run km", "kind": "measurable", "unit": "km", "target": "5",
                                                                              "activated_at": "2020-01-01T00:00:00Z"]))["id"])
        let checkin = try #require(try record("checkins.add", params(user, ["template_id": measured, "date": "2020-06-01", "value": "2.5", "client_id": "c1"]))["id"])
        try record("checkins.list", params(user, ["template_id": measured, "date": "2020-06-01"]))
        try record("checkins.remove", params(user, ["checkin_id": checkin]))
        try record("completions.set", params(user, ["template_id": measured, "date": "2020-06-02", "value": "4.5"]))
        try record("notes.set", params(user, ["template_id": measured, "date": "2020-06-01", "note": "windy"]))
        try record("reminders.set", params(user, ["template_id": measured, "reminders": [["time": "07:30"]]]))
        try record("reminders.list", params(user, ["template_id": measured]))
        try record("widget.get", params(user, ["date": "2020-06-01"]))
        let due = try record("reminders.due", .object([.init("from", "2020-06-03T00:00:00Z"), .init("to", "2020-06-04T00:00:00Z")]))
        let firingIDs = WireJSON.array((due["firings"]?.arrayValue ?? []).compactMap { $0["firing_id"] })
        try record("reminders.claim", .object([.init("firing_ids", firingIDs), .init("lease_ms", 60_000)]))
        try record("reminders.ack", .object([.init("firing_ids", firingIDs)]))
        try record("day.get", params(user, ["date": "2020-06-01", "include": ["streaks"]]))
        try record("week.counts", params(user, ["date": "2020-06-01", "week_start": "sunday"]))
        try record("habits.stats", params(user, ["date": "2020-06-03"]))
        try record("habits.stats", params(user, ["id": habit]))
        try record("stats.calendar", params(user, ["from": "2020-05-30", "to": "2020-06-04"]))
        try record("habits.delete", params(user, ["id": other]))
        let list = try #require(try record("lists.create", params(user, ["name": "Home"]))["id"])
        try record("lists.update", params(user, ["id": list, "name": "House"]))
        try record("lists.list", params(user, ["limit": 1]))
        let task = try #require(try record("tasks.create", params(user, ["title": "Milk", "list_id": list, "scheduled_date": "2020-06-01"]))["id"])
        let inbox = try #require(try record("tasks.create", params(user, ["title": "Someday"]))["id"])
        try record("tasks.update", params(user, ["id": inbox, "notes": "n", "list_id": list]))
        try record("tasks.cycle", params(user, ["id": task]))
        try record("tasks.complete", params(user, ["id": task]))
        try record("tasks.uncomplete", params(user, ["id": task]))
        try record("tasks.set_state", params(user, ["id": task, "state": "completed"]))
        try record("tasks.today", params(user, ["date": "2020-06-01"]))
        for view in ["inbox", "upcoming"] { try record("tasks.list", params(user, ["view": .string(view)])) }
        try record("tasks.list", params(user, ["view": "list", "list_id": list]))
        try record("tasks.delete", params(user, ["id": inbox]))
        try record("lists.delete", params(user, ["id": list]))
        try record("sync.push", params(user, ["client_id": "phone", "mutations": [
            .object([.init("mutation_id", "1"), .init("method", "tasks.create"), .init("params", .object([.init("title", "Synced")]))]),
        ]]))
        try record("sync.pull", params(user, ["cursor": try #require(early["cursor"]), "limit": 10_000]))
        let exported = try record("account.export", params(user, ["limit": 10_000]))
        try record("account.delete", params(user, ["confirm": .uuid(user)]))
        try record("account.import", params(user, ["document": try #require(exported["document"]), "mode": "merge"]))
        try record("rpc.discover")
        // changes.*: the listener's notifications may come before the answers; skipped.
        let changes = ["changes.subscribe", "changes.unsubscribe"]
        for (index, method) in changes.enumerated() { try worker.sendRequest(method, params: params(user), id: .int(index)) }
        var answered = 0
        while answered < changes.count {
            let json = try WireJSON.parse(try #require(worker.readLine(), "no answer to changes.*"))
            guard json["method"]?.stringValue != "changes" else { continue }
            #expect(json["result"] != nil, "\(json)")
            called(changes[try #require(json["id"]?.intValue)])
            answered += 1
        }
    }
}
