import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Four workers behind one pgbouncer in transaction mode: many client connections take
/// turns on a few server connections, so one user's transaction runs on a session that
/// just served another user's. Nothing of one user may reach another, and no identity may
/// outlive its transaction.
@Suite("deployment: isolation through pgbouncer in transaction mode")
struct PgBouncerIsolationTests {
    static let dates = ["2025-03-10", "2025-03-11", "2025-03-12"]
    static let zones = ["UTC", "Europe/Berlin", "Asia/Tokyo", "America/Los_Angeles", "Australia/Sydney"]

    /// What the test created for one user.
    struct Owned {
        var habitA = UUID()
        var habitB = UUID()
        var list = UUID()
        var task = UUID()
    }

    @Test("4 workers, 50 users, 16 client connections on 2 server connections: only own rows seen or changed; no claims left on any server connection")
    func fiftyUsersFourWorkers() throws {
        try TestDatabase.with { database in
            // A pool of 2 server connections for 4 workers × 4 connections: every worker runs
            // transactions, so at least 4 client connections take turns on at most 2 server
            // connections — sharing is certain, not likely.
            try PgBouncer.with(poolSize: 2) { bouncer in
                let url = try bouncer.url(user: "habit_worker", database: database.name)
                let admin = try database.connect()
                defer { admin.close() }
                let off = ["--pool-size", "4", "--prepared-statements", "off"]
                let viaEnvironment = (arguments: ["--pool-size", "4"], environment: ["HABIT_PREPARED_STATEMENTS": "off"])
                // Two workers told by flag, two by environment variable.
                try Workers.with(databaseURL: url, configurations: [(off, [:]), viaEnvironment, (off, [:]), viaEnvironment]) { workers in
                    try runScenario(workers: workers, admin: admin)
                    // All 16 client connections are open, on at most 2 server connections.
                    #expect(try bouncer.clients(database: database.name, user: "habit_worker").count == 16)
                    #expect(try bouncer.servers(database: database.name, user: "habit_worker").count <= 2)
                    #expect(try admin.count("SELECT count(*) FROM pg_stat_activity WHERE datname = \(database.name) AND usename = 'habit_worker'") <= 2)
                    try Workers.stop(workers)
                }
                try expectNoIdentityLeftBehind(bouncer: bouncer, database: database, admin: admin)
            }
        }
    }

    /// Creates, changes, attacks and reads, with each user's requests spread over every
    /// worker and interleaved with everyone else's; then checks every row on the server.
    func runScenario(workers: [WorkerProcess], admin: Connection) throws {
        let users = (0..<50).map { _ in UUID() }
        let count = workers.count
        /// Request `k` of user `u` goes to worker (u + k) mod 4: each user's requests run on
        /// every worker, and every worker serves every user.
        func plan(_ requests: (Int, UUID) -> [Call]) -> (plan: [[Call]], origin: [[(user: Int, index: Int)]]) {
            var plan = Array(repeating: [Call](), count: count)
            var origin = Array(repeating: [(user: Int, index: Int)](), count: count)
            for (u, user) in users.enumerated() {
                for (k, call) in requests(u, user).enumerated() {
                    plan[(u + k) % count].append(call)
                    origin[(u + k) % count].append((u, k))
                }
            }
            return (plan, origin)
        }
        /// Runs a phase and returns, per user, the responses in the order of its requests.
        func run(_ requests: (Int, UUID) -> [Call]) throws -> [[WorkerResponse]] {
            let (calls, origin) = plan(requests)
            let responses = try exchange(workers, calls)
            var byUser = Array(repeating: [Int: WorkerResponse](), count: users.count)
            for worker in responses.indices {
                for (position, response) in responses[worker].enumerated() {
                    let (u, k) = origin[worker][position]
                    byUser[u][k] = response
                }
            }
            return byUser.map { responses in responses.keys.sorted().map { responses[$0]! } }
        }
        let (d1, d2, d3) = (Self.dates[0], Self.dates[1], Self.dates[2])

        // 1. Profiles, habits and lists.
        let created = try run { u, user in [
            Call(method: "profile.set", params: params(user, ["timezone": .string(Self.zones[u % Self.zones.count])])),
            Call(method: "habits.create", params: params(user, ["name": .string("U\(u) habit A"), "activated_at": "2020-01-01T00:00:00Z"])),
            Call(method: "habits.create", params: params(user, ["name": .string("U\(u) habit B"), "activated_at": "2020-01-01T00:00:00Z"])),
            Call(method: "lists.create", params: params(user, ["name": .string("U\(u) list")])),
        ] }
        var owned = [Owned]()
        for (u, responses) in created.enumerated() {
            for response in responses { #expect(response.isSuccess, "user \(u): \(response.raw)") }
            guard let a = responses[1].resultID, let b = responses[2].resultID, let list = responses[3].resultID else {
                Issue.record("user \(u): missing ids")
                return
            }
            owned.append(Owned(habitA: a, habitB: b, list: list))
        }

        // 2. Completions and a task, each user on their own rows.
        let changed = try run { u, user in [
            Call(method: "completions.set", params: params(user, ["template_id": .uuid(owned[u].habitA), "date": .string(d1), "completed": true])),
            Call(method: "completions.set", params: params(user, ["template_id": .uuid(owned[u].habitA), "date": .string(d2), "completed": true])),
            Call(method: "completions.toggle", params: params(user, ["template_id": .uuid(owned[u].habitB), "date": .string(d1)])),
            Call(method: "tasks.create", params: params(user, ["title": .string("U\(u) task"), "list_id": .uuid(owned[u].list)])),
        ] }
        for (u, responses) in changed.enumerated() {
            #expect(responses[0].result == ["completed": true, "state": "done", "changed": true], "user \(u): \(responses[0].raw)")
            #expect(responses[1].result == ["completed": true, "state": "done", "changed": true], "user \(u): \(responses[1].raw)")
            #expect(responses[2].result == ["completed": true], "user \(u): \(responses[2].raw)")
            guard let task = responses[3].resultID else {
                Issue.record("user \(u): tasks.create failed: \(responses[3].raw)")
                return
            }
            owned[u].task = task
        }

        // 3. Every user attacks the next user's rows with their ids, while every user reads
        //    their own data — all at once, on every worker.
        let attacks: (UUID, Owned) -> [Call] = { user, victim in [
            Call(method: "habits.update", params: params(user, ["id": .uuid(victim.habitA), "name": "Hijacked"])),
            Call(method: "habits.deactivate", params: params(user, ["id": .uuid(victim.habitA)])),
            Call(method: "habits.delete", params: params(user, ["id": .uuid(victim.habitB)])),
            Call(method: "completions.set", params: params(user, ["template_id": .uuid(victim.habitA), "date": .string(d1), "completed": false])),
            Call(method: "completions.set", params: params(user, ["template_id": .uuid(victim.habitA), "date": .string(d3), "completed": true])),
            Call(method: "completions.toggle", params: params(user, ["template_id": .uuid(victim.habitB), "date": .string(d1)])),
            Call(method: "lists.update", params: params(user, ["id": .uuid(victim.list), "name": "Hijacked"])),
            Call(method: "lists.delete", params: params(user, ["id": .uuid(victim.list)])),
            Call(method: "tasks.update", params: params(user, ["id": .uuid(victim.task), "title": "Hijacked"])),
            Call(method: "tasks.complete", params: params(user, ["id": .uuid(victim.task)])),
            Call(method: "tasks.delete", params: params(user, ["id": .uuid(victim.task)])),
            Call(method: "tasks.create", params: params(user, ["title": "Planted", "list_id": .uuid(victim.list)])),
            Call(method: "tasks.list", params: params(user, ["view": "list", "list_id": .uuid(victim.list)])),
        ] }
        let reads: (UUID) -> [Call] = { user in [
            Call(method: "habits.list", params: params(user, ["include_inactive": true])),
            Call(method: "day.get", params: params(user, ["date": .string(d1)])),
            Call(method: "day.get", params: params(user, ["date": .string(d2)])),
            Call(method: "lists.list", params: params(user)),
            Call(method: "profile.get", params: params(user)),
        ] }
        /// Attacks and reads alternate, so each worker's queue interleaves them; the user's
        /// own task list comes last. true = attack.
        func interleaved(_ attack: [Call], _ read: [Call]) -> [(attack: Bool, call: Call)] {
            var calls = [(attack: Bool, call: Call)]()
            for index in 0..<max(attack.count, read.count) {
                if index < attack.count { calls.append((true, attack[index])) }
                if index < read.count { calls.append((false, read[index])) }
            }
            return calls
        }
        var kinds = [[Bool]]()
        for (u, user) in users.enumerated() {
            kinds.append(interleaved(attacks(user, owned[(u + 1) % users.count]), reads(user)).map(\.attack))
        }
        let mixed = try run { u, user in
            interleaved(attacks(user, owned[(u + 1) % users.count]), reads(user)).map(\.call)
                + [Call(method: "tasks.list", params: params(user, ["view": "list", "list_id": .uuid(owned[u].list)]))]
        }
        for (u, responses) in mixed.enumerated() {
            let mine = owned[u]
            let attackResponses = zip(kinds[u], responses).filter { $0.0 }.map(\.1)
            let readResponses = zip(kinds[u], responses).filter { !$0.0 }.map(\.1)
            for response in attackResponses {
                #expect(response.code == Code.notFound && response.reason == "not_found", "user \(u) reached user \((u + 1) % users.count)'s rows: \(response.raw)")
            }
            let habits = readResponses[0].result?["habits"]?.arrayValue ?? []
            #expect(Set(habits.compactMap { $0["id"]?.stringValue }) == [mine.habitA, mine.habitB].map { $0.uuidString.lowercased() }.asSet,
                    "user \(u) habits.list: \(readResponses[0].raw)")
            #expect(habits.allSatisfy { $0["name"]?.stringValue?.hasPrefix("U\(u) habit ") == true && $0["is_active"] == true },
                    "user \(u) habits.list: \(readResponses[0].raw)")
            #expect(readResponses[1].result?["completed"] == .array([mine.habitA, mine.habitB].map { $0.uuidString.lowercased() }.sorted().map(WireJSON.string)),
                    "user \(u) day.get d1: \(readResponses[1].raw)")
            #expect(readResponses[2].result?["completed"] == .array([.uuid(mine.habitA)]), "user \(u) day.get d2: \(readResponses[2].raw)")
            let lists = readResponses[3].result?["lists"]?.arrayValue ?? []
            #expect(lists.count == 1 && lists.first?["id"] == .uuid(mine.list) && lists.first?["name"] == .string("U\(u) list"),
                    "user \(u) lists.list: \(readResponses[3].raw)")
            #expect(readResponses[4].result == ["user_id": .uuid(users[u]), "timezone": .string(Self.zones[u % Self.zones.count]), "week_start": "monday", "day_starts_at": "00:00"],
                    "user \(u) profile.get: \(readResponses[4].raw)")
            let tasks = responses.last?.result?["tasks"]?.arrayValue ?? []
            #expect(tasks.count == 1 && tasks.first?["id"] == .uuid(mine.task) && tasks.first?["title"] == .string("U\(u) task"),
                    "user \(u) tasks.list: \(responses.last?.raw ?? "")")
        }

        // 4. On the server (as superuser, past row-level security): exactly what each user
        //    made, unchanged since it was made.
        #expect(try admin.count("SELECT count(*) FROM habit_templates") == 100)
        #expect(try admin.count("SELECT count(*) FROM habit_completions") == 150)
        #expect(try admin.count("SELECT count(*) FROM task_lists") == 50)
        #expect(try admin.count("SELECT count(*) FROM tasks") == 50)
        #expect(try admin.count("SELECT count(*) FROM profiles") == 50)
        #expect(try admin.count("""
            SELECT (SELECT count(*) FROM habit_templates WHERE name ~ 'Hijacked' OR updated_at <> created_at OR NOT is_active)
                 + (SELECT count(*) FROM task_lists WHERE name ~ 'Hijacked' OR updated_at <> created_at)
                 + (SELECT count(*) FROM tasks WHERE title !~ '^U[0-9]+ task$' OR updated_at <> created_at)
            """) == 0)
        for (u, user) in users.enumerated() {
            let mine = owned[u]
            let habits = try admin.query("SELECT id, name FROM habit_templates WHERE user_id = \(user) ORDER BY name")
            #expect(try habits.map { try $0.decode(UUID.self, "id") } == [mine.habitA, mine.habitB], "user \(u)")
            #expect(try habits.map { try $0.decode(String.self, "name") } == ["U\(u) habit A", "U\(u) habit B"], "user \(u)")
            let completions = try admin.query("""
                SELECT template_id, completed_date::text AS day FROM habit_completions WHERE user_id = \(user) ORDER BY 2, 1
                """).map { "\(try $0.decode(UUID.self, "template_id"))@\(try $0.decode(String.self, "day"))" }
            #expect(completions.asSet == ["\(mine.habitA)@\(d1)", "\(mine.habitB)@\(d1)", "\(mine.habitA)@\(d2)"].asSet, "user \(u): \(completions)")
            #expect(try admin.count("SELECT count(*) FROM tasks WHERE user_id = \(user) AND id = \(mine.task) AND list_id = \(mine.list) AND completed_at IS NULL") == 1)
            #expect(try admin.count("SELECT count(*) FROM task_lists WHERE user_id = \(user) AND id = \(mine.list)") == 1)
        }
    }

    /// After the workers are gone, inspects every server connection pgbouncer kept for the
    /// worker's pool: through pgbouncer, hold one transaction per pooled server connection
    /// at once (so each lands on a different one) and read the session state the last
    /// transaction left there. pgbouncer resets nothing in transaction mode
    /// (server_reset_query_always = 0), so a leaked claim would still be there.
    func expectNoIdentityLeftBehind(bouncer: PgBouncer, database: TestDatabase, admin: Connection) throws {
        let pooled = try admin.query("""
            SELECT pid, state FROM pg_stat_activity WHERE datname = \(database.name) AND usename = 'habit_worker'
            """)
        let pooledPIDs = Set(try pooled.map { try $0.decode(Int.self, "pid") })
        #expect(!pooledPIDs.isEmpty && pooledPIDs.count <= bouncer.poolSize, "server connections of the pool: \(pooledPIDs)")
        #expect(try pooled.allSatisfy { try $0.decode(String.self, "state") == "idle" }, "a worker left a transaction open")
        let defaultTimeout = try admin.queryOne("SELECT current_setting('statement_timeout')").decode(String.self, at: 0)

        let url = try bouncer.url(user: "habit_worker", database: database.name)
        let connections = try (0..<bouncer.poolSize).map { _ in
            try Connection(url, applicationName: "habit-tests", preparedStatements: .off)
        }
        defer { for connection in connections { connection.close() } }
        var seen: [(pid: Int, claims: String, user: String, role: String, timeout: String)] = []
        func inspect(_ index: Int) throws {
            guard index < connections.count else { return }
            try connections[index].withTransaction { connection in
                let row = try connection.queryOne("""
                    SELECT pg_backend_pid() AS pid, coalesce(current_setting('request.jwt.claims', true), '') AS claims,
                           current_user::text AS who, current_setting('role') AS role, current_setting('statement_timeout') AS timeout
                    """)
                seen.append((try row.decode(Int.self, "pid"), try row.decode(String.self, "claims"), try row.decode(String.self, "who"),
                             try row.decode(String.self, "role"), try row.decode(String.self, "timeout")))
                try inspect(index + 1) // this transaction stays open meanwhile
            }
        }
        try inspect(0)
        #expect(Set(seen.map(\.pid)).count == seen.count, "two inspections shared a server connection: \(seen)")
        #expect(pooledPIDs.isSubset(of: Set(seen.map(\.pid))), "not every pooled server connection was inspected: \(pooledPIDs) vs \(seen)")
        for state in seen {
            #expect(state.claims == "", "request.jwt.claims survived on backend \(state.pid): \(state.claims)")
            #expect(state.user == "habit_worker" && state.role == "none", "role survived on backend \(state.pid): \(state)")
            #expect(state.timeout == defaultTimeout, "statement_timeout survived on backend \(state.pid): \(state)")
        }
    }

    @Test("why only transaction-scoped settings are safe: a session-level setting made through pgbouncer reaches the next client")
    func sessionStateLeaksInTransactionMode() throws {
        try TestDatabase.with { database in
            try PgBouncer.with(poolSize: 1) { bouncer in
                let url = try bouncer.url(user: "habit_worker", database: database.name)
                let first = try Connection(url, applicationName: "habit-tests", preparedStatements: .off)
                defer { first.close() }
                let second = try Connection(url, applicationName: "habit-tests", preparedStatements: .off)
                defer { second.close() }
                let claims = #"{"sub":"7d9f0e2a-3c41-4b8e-9a57-1f2e3d4c5b6a","role":"authenticated"}"#
                // What the worker never does: a session-level set_config (is_local = false)…
                let firstPID = try first.queryOne("SELECT pg_backend_pid(), set_config('request.jwt.claims', \(claims), false)").decode(Int.self, at: 0)
                // …is seen by another client, on the one server connection they share.
                let row = try second.queryOne("SELECT pg_backend_pid(), current_setting('request.jwt.claims', true)")
                #expect(try row.decode(Int.self, at: 0) == firstPID)
                #expect(try row.decode(String?.self, at: 1) == claims)
                // The transaction-scoped form the worker uses ends with the transaction.
                try first.execute("RESET request.jwt.claims")
                let local = try first.withTransaction { connection in
                    try connection.queryOne("SELECT set_config('request.jwt.claims', \(claims), true)").decode(String.self, at: 0)
                }
                #expect(local == claims)
                #expect(try second.queryOne("SELECT coalesce(current_setting('request.jwt.claims', true), '')").decode(String.self, at: 0) == "")
            }
        }
    }
}

extension Array where Element: Hashable {
    var asSet: Set<Element> { Set(self) }
}
