import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Issue 31, "The general guard": every method of docs/openrpc.json, driven through a spawned
/// worker with its most expensive valid params on a user with three years of history, stays
/// within the bounds docs/reliability.md documents for it ("Amplification bounds"), by counts:
///
/// * rows written: every row inserted, updated or deleted in any table of `public`, `habit`
///   and `auth`, counted by statement-level AFTER triggers with transition tables that this
///   test adds to its private database (their counts go to an UNLOGGED table: no WAL);
/// * row bytes written: `pg_column_size` of every row version inserted or updated;
/// * WAL bytes: `pg_current_wal_insert_lsn()` after minus before; the private server runs
///   nothing else (autovacuum off, no checkpoint, `wal_level = minimal`, full-page writes off);
/// * statements: `pg_stat_statements` calls (top level, utility statements such as BEGIN and
///   SET not counted) of every role but this test's superuser;
/// * response bytes: the answer's line.
///
/// The method list is read from openrpc.json and the bounds from the table at test time, so a
/// method added without a scenario here or a row there fails the test. No time is asserted.
@Suite(.serialized) struct AmplificationTests {
    struct Counts: CustomStringConvertible {
        var rows = 0
        var rowBytes = 0
        var walBytes = 0
        var statements = 0
        var responseBytes = 0
        var tables: [String: Int] = [:]

        static let columns = ["rows written", "row bytes written", "WAL bytes", "statements", "response bytes"]
        var values: [Int] { [rows, rowBytes, walBytes, statements, responseBytes] }

        var description: String {
            zip(Self.columns, values).map { "\($0) \($1)" }.joined(separator: ", ")
                + (tables.isEmpty ? "" : "; per table " + tables.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        }

        func exceeded(by bound: Counts) -> [String] {
            zip(Self.columns, zip(values, bound.values)).filter { $1.0 > $1.1 }.map { "\($0) \($1.0) > \($1.1)" }
        }
    }

    static var reliabilityDoc: URL { TestDatabase.repositoryRoot.appendingPathComponent("docs/reliability.md") }

    /// docs/openrpc.json's method names, in file order.
    static func documentedMethods() throws -> [String] {
        let data = try Data(contentsOf: TestDatabase.repositoryRoot.appendingPathComponent("docs/openrpc.json"))
        let document = try WireJSON.parse([UInt8](data))
        return try #require(document["methods"]?.arrayValue).compactMap { $0["name"]?.stringValue }
    }

    /// The table under "### Amplification bounds" in docs/reliability.md: one row per method,
    /// `| \`method\` | rows | row bytes | WAL bytes | statements | response bytes | … |`.
    static func documentedBounds() throws -> [String: Counts] {
        let text = try String(contentsOf: reliabilityDoc, encoding: .utf8)
        let lines = text.components(separatedBy: "\n")
        guard let heading = lines.firstIndex(where: { $0.hasPrefix("### Amplification bounds") }) else { return [:] }
        var bounds: [String: Counts] = [:]
        var inTable = false
        for line in lines[(heading + 1)...] {
            if line.hasPrefix("#") { break }
            guard line.hasPrefix("|") else {
                if inTable { break }
                continue
            }
            inTable = true
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).dropFirst().dropLast()
                .map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 6, cells[0].hasPrefix("`") else { continue }
            let method = cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            let numbers = cells[1...5].map { Int($0.replacingOccurrences(of: ",", with: "").replacingOccurrences(of: "*", with: "")) }
            guard numbers.allSatisfy({ $0 != nil }) else {
                Issue.record("docs/reliability.md, amplification bounds: row \(method) has a cell that is not a number: \(line)")
                continue
            }
            let n = numbers.map { $0! }
            if bounds[method] != nil { Issue.record("docs/reliability.md, amplification bounds: \(method) twice") }
            bounds[method] = Counts(rows: n[0], rowBytes: n[1], walBytes: n[2], statements: n[3], responseBytes: n[4])
        }
        return bounds
    }

    /// Statement-level AFTER triggers on every table of public, habit and auth that count the
    /// rows each statement wrote (and the bytes of the new versions) into an UNLOGGED table.
    static let countingTriggers = """
        CREATE SCHEMA amplification;
        CREATE UNLOGGED TABLE amplification.writes (rel text NOT NULL, rows bigint NOT NULL, bytes bigint NOT NULL);
        CREATE FUNCTION amplification.count_new() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
            SET search_path = pg_catalog, pg_temp AS $fn$
            BEGIN
                INSERT INTO amplification.writes
                SELECT TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME, count(*), coalesce(sum(pg_column_size(n.*)), 0) FROM new_rows n;
                RETURN NULL;
            END $fn$;
        CREATE FUNCTION amplification.count_old() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
            SET search_path = pg_catalog, pg_temp AS $fn$
            BEGIN
                INSERT INTO amplification.writes SELECT TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME, count(*), 0 FROM old_rows o;
                RETURN NULL;
            END $fn$;
        DO $do$
        DECLARE t regclass;
        BEGIN
            FOR t IN SELECT c.oid::regclass FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                     WHERE c.relkind = 'r' AND n.nspname IN ('public', 'habit', 'auth') LOOP
                EXECUTE format('CREATE TRIGGER zz_amplification_insert AFTER INSERT ON %s REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION amplification.count_new()', t);
                EXECUTE format('CREATE TRIGGER zz_amplification_update AFTER UPDATE ON %s REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION amplification.count_new()', t);
                EXECUTE format('CREATE TRIGGER zz_amplification_delete AFTER DELETE ON %s REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION amplification.count_old()', t);
            END LOOP;
        END $do$;
        """

    /// Three years of a realistic user, written as a superuser in a few set-based statements:
    /// six daily habits activated 1,095 days ago, ~70 % of their days done, ~5 % of the others
    /// skipped, three lists and 300 tasks (a third in a list, a third scheduled over the next
    /// 100 days, a third in the inbox) with 200-character notes.
    static func load(_ c: Connection, user: UUID, habits: [UUID], lists: [UUID]) throws {
        try c.withTransaction { c in
            _ = try c.execute("SELECT setseed(0.31)")
            _ = try c.execute("INSERT INTO public.profiles (user_id, timezone) VALUES (\(user), 'UTC')")
            for (index, habit) in habits.enumerated() {
                _ = try c.execute("""
                    INSERT INTO public.habit_templates (id, user_id, name, icon, color, activated_at, sort_order)
                    VALUES (\(habit), \(user), \("Habit \(index + 1)"), 'star.fill', '#3366FF',
                            ((now() AT TIME ZONE 'UTC')::date - 1095)::timestamp AT TIME ZONE 'UTC', \(index + 1))
                    """)
            }
            let ids = habits.map { $0.uuidString.lowercased() }.joined(separator: ",")
            _ = try c.execute(Query(unsafeSQL: """
                CREATE TEMP TABLE days ON COMMIT DROP AS
                SELECT h::uuid AS template_id, (now() AT TIME ZONE 'UTC')::date - d AS day, random() AS r
                FROM unnest('{\(ids)}'::text[]) AS h, generate_series(0, 1095) AS d
                """))
            _ = try c.execute("INSERT INTO public.habit_completions (user_id, template_id, completed_date) SELECT \(user), template_id, day FROM days WHERE r < 0.7")
            _ = try c.execute("INSERT INTO public.habit_skips (user_id, template_id, skipped_date) SELECT \(user), template_id, day FROM days WHERE r >= 0.95")
            for (index, list) in lists.enumerated() {
                _ = try c.execute("INSERT INTO public.task_lists (id, user_id, name) VALUES (\(list), \(user), \("List \(index + 1)"))")
            }
            _ = try c.execute("""
                INSERT INTO public.tasks (user_id, title, notes, list_id, scheduled_date, position)
                SELECT \(user), 'Task ' || n, repeat('n', 200),
                       CASE WHEN n % 3 = 0 THEN \(lists[0]) END,
                       CASE WHEN n % 3 = 1 THEN (now() AT TIME ZONE 'UTC')::date + n / 3 END, n
                FROM generate_series(1, 300) AS n
                """)
        }
    }

    @Test("every method of openrpc.json at its most expensive valid params stays within its documented bounds")
    func everyMethodWithinItsBounds() throws {
        let methods = try Self.documentedMethods()
        #expect(methods.count > 30, "openrpc.json lists \(methods.count) methods")
        let bounds = try Self.documentedBounds()
        let options = "-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track_utility=off "
            + "-c autovacuum=off -c full_page_writes=off -c checkpoint_timeout=1d -c max_wal_size=20GB "
            + "-c wal_level=minimal -c max_wal_senders=0"
        var measured: [String: Counts] = [:]
        var variants: [(method: String, label: String, counts: Counts)] = []
        try PrivatePostgresServer.with(options: options) { server in
            let admin = try Connection(server.adminURL, applicationName: "habit-tests")
            defer { admin.close() }
            try admin.execute("CREATE DATABASE habit")
            let url = server.adminURL.replacingOccurrences(of: "@/postgres?", with: "@/habit?")
            let db = try Connection(url, applicationName: "habit-tests")
            defer { db.close() }
            _ = try Migrator(directory: TestDatabase.migrationsDirectory).migrate(db)
            try db.execute("CREATE EXTENSION pg_stat_statements")
            try db.executeScript(unsafeSQL: Self.countingTriggers)

            let user = UUID()
            let habits = (0..<6).map { _ in UUID() }
            let lists = (0..<3).map { _ in UUID() }
            try Self.load(db, user: user, habits: habits, lists: lists)
            func date(_ sql: String) throws -> String {
                try db.queryOne(Query(unsafeSQL: "SELECT (\(sql))::date::text")).decode(String.self, at: 0)
            }
            let today = try date("(now() AT TIME ZONE 'UTC')::date")
            let yearAgo = try date("(now() AT TIME ZONE 'UTC')::date - 365")
            let firstDay = try date("(now() AT TIME ZONE 'UTC')::date - 1095")
            let nextYear = try date("(now() AT TIME ZONE 'UTC')::date + 366")
            let tomorrow = try date("(now() AT TIME ZONE 'UTC')::date + 1")
            // The latest reference date (protocol.md, "Date ranges"): UTC's today + 1 day + 5 years.
            let latest = try date("(now() AT TIME ZONE 'UTC')::date + 1 + interval '5 years'")
            let latestYearBefore = try date("(now() AT TIME ZONE 'UTC')::date + 1 + interval '5 years' - interval '365 days'")
            let tasks = try db.query("SELECT id FROM public.tasks WHERE user_id = \(user) ORDER BY position").map { try $0.decode(UUID.self, at: 0) }
            let superuser = try db.queryOne("SELECT current_user::text").decode(String.self, at: 0)

            let workerURL = url.replacingOccurrences(of: "postgres@", with: "habit_worker@")
            try WorkerProcess.withServe(databaseURL: workerURL, arguments: ["--pool-size", "1", "--statement-timeout-ms", "300000"]) { worker in
                var nextID = 0
                /// Sends one request and returns its answer line, passing over change notifications.
                func exchange(_ method: String, _ params: WireJSON?) throws -> (line: String, response: WorkerResponse) {
                    nextID += 1
                    let id = WireJSON.string("amp-\(nextID)")
                    try worker.sendRequest(method, params: params, id: id)
                    while true {
                        let line = try #require(worker.readLine(timeout: 600), "no answer to \(method); stderr: \(worker.stderrText.suffix(2_000))")
                        guard let json = try? WireJSON.parse(line), json["method"] == nil else { continue }
                        if json["id"] == id { return (line, try WorkerResponse(line: Array(line.utf8))) }
                    }
                }
                @discardableResult
                func call(_ method: String, _ params: WireJSON? = nil) throws -> WireJSON {
                    let answer = try exchange(method, params)
                    return try #require(answer.response.result, "\(method) failed: \(answer.line)")
                }
                @discardableResult
                func measure(_ method: String, _ label: String, _ params: WireJSON?) throws -> WireJSON {
                    try db.execute("TRUNCATE amplification.writes")
                    _ = try db.query("SELECT pg_stat_statements_reset()")
                    let start = try db.queryOne("SELECT pg_current_wal_insert_lsn()::text").decode(String.self, at: 0)
                    let answer = try exchange(method, params)
                    var counts = Counts()
                    counts.walBytes = try db.queryOne("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), \(start)::pg_lsn)::bigint").decode(Int.self, at: 0)
                    counts.responseBytes = answer.line.utf8.count
                    counts.statements = try db.queryOne("""
                        SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements
                        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
                          AND userid <> (SELECT oid FROM pg_roles WHERE rolname = \(superuser))
                        """).decode(Int.self, at: 0)
                    for row in try db.query("SELECT rel, sum(rows)::bigint, sum(bytes)::bigint FROM amplification.writes GROUP BY rel HAVING sum(rows) > 0") {
                        let rows = try row.decode(Int.self, at: 1)
                        counts.tables[try row.decode(String.self, at: 0)] = rows
                        counts.rows += rows
                        counts.rowBytes += try row.decode(Int.self, at: 2)
                    }
                    let result = try #require(answer.response.result, "\(method) (\(label)) failed: \(answer.line.prefix(1_000))")
                    variants.append((method, label, counts))
                    print("amplification: \(method) (\(label)): \(counts)")
                    var worst = measured[method] ?? Counts()
                    worst.rows = max(worst.rows, counts.rows); worst.rowBytes = max(worst.rowBytes, counts.rowBytes)
                    worst.walBytes = max(worst.walBytes, counts.walBytes); worst.statements = max(worst.statements, counts.statements)
                    worst.responseBytes = max(worst.responseBytes, counts.responseBytes)
                    measured[method] = worst
                    return result
                }
                func p(_ members: [String: WireJSON] = [:]) -> WireJSON { params(user, members) }

                // Warm up: the pool's connection, the zone list, the prepared statements.
                try call("system.ping")
                try call("day.get", p(["date": .string(today)]))
                try call("profile.get", p())

                // The largest texts the limits allow: names and titles in four-byte characters.
                let name100 = WireJSON.string(String(repeating: "𝔸", count: 100))
                let icon100 = WireJSON.string(String(repeating: "a", count: 49) + "." + String(repeating: "b", count: 50))
                let title500 = WireJSON.string(String(repeating: "𝔸", count: 500))
                let notes10000 = WireJSON.string(String(repeating: "𝔸", count: 10_000))

                try measure("system.ping", "", nil)
                try measure("system.health", "", nil)
                try measure("rpc.discover", "", nil)
                try measure("profile.get", "", p())
                try measure("profile.set", "zone and week start changed", p(["timezone": "Pacific/Kiritimati", "week_start": "sunday"]))
                try call("profile.set", p(["timezone": "UTC", "week_start": "monday"]))

                try measure("habits.list", "limit 1000, inactive too", p(["include_inactive": true, "limit": 1000]))
                try measure("habits.history", "three years", p(["id": .uuid(habits[0])]))
                for (label, day) in [("oldest", "1970-01-01"), ("today", today), ("newest", latest)] {
                    try measure("day.get", "\(label) with streaks", p(["date": .string(day), "include": ["streaks"]]))
                    try measure("week.counts", label, p(["date": .string(day), "week_start": "sunday"]))
                    try measure("habits.stats", "\(label), every habit", p(["date": .string(day)]))
                }
                for (label, from, to) in [("oldest", "1970-01-01", "1971-01-01"), ("last year", yearAgo, today), ("newest", latestYearBefore, latest)] {
                    try measure("stats.calendar", "\(label), 366 days, every habit", p(["from": .string(from), "to": .string(to)]))
                }

                let created = UUID()
                try measure("habits.create", "activated 1970-01-01, longest texts", p([
                    "id": .uuid(created), "name": name100, "icon": icon100, "color": "#ABCDEF", "sort_order": 2147483647,
                    "activated_at": "1970-01-01T00:00:00Z", "schedule": .object([.init("type", "weekdays"), .init("days", [1, 2, 3, 4, 5, 6, 7])]),
                ]))
                try measure("habits.update", "three years, schedule changed, longest texts", p([
                    "id": .uuid(habits[0]), "name": name100, "icon": icon100, "color": "#ABCDEF", "sort_order": -2147483648,
                    "schedule": .object([.init("type", "times_per_week"), .init("times", 3)]),
                ]))
                try measure("habits.deactivate", "three years", p(["id": .uuid(habits[1])]))
                try measure("habits.activate", "three years", p(["id": .uuid(habits[1])]))
                // After the habit numbered 2147483647: no room, so every habit of the user is
                // numbered again (habit.move_habit).
                try measure("habits.move", "renumbering every habit", p(["template_id": .uuid(habits[3]), "after": .uuid(created)]))
                try measure("habits.archive", "three years", p(["template_id": .uuid(habits[4])]))
                try measure("habits.unarchive", "three years", p(["template_id": .uuid(habits[4])]))

                // Areas (sql/0037): 99 areas numbered 1…99 by a direct insert, the 100th created;
                // moved between the first two (no room: every area numbered again); every habit
                // put in it, which its delete clears. The 99 go afterwards (not measured).
                try db.execute("INSERT INTO public.habit_areas (user_id, name, sort_order) SELECT \(user), 'Area ' || n, n FROM generate_series(1, 99) n")
                let area = UUID()
                try measure("areas.create", "the 100th, longest name", p(["id": .uuid(area), "name": name100]))
                try measure("areas.update", "longest name", p(["area_id": .uuid(area), "name": name100]))
                let firstArea = try db.queryOne("SELECT id FROM public.habit_areas WHERE user_id = \(user) AND sort_order = 1").decode(UUID.self, at: 0)
                try measure("areas.move", "renumbering 100 areas", p(["area_id": .uuid(area), "after": .uuid(firstArea)]))
                try measure("areas.list", "100 areas", p([:]))
                try db.execute("UPDATE public.habit_templates SET area_id = \(area) WHERE user_id = \(user)")
                try measure("areas.delete", "holding every habit", p(["area_id": .uuid(area)]))
                try db.execute("DELETE FROM public.habit_areas WHERE user_id = \(user)")

                try measure("completions.set", "1970-01-01", p(["template_id": .uuid(created), "date": "1970-01-01", "completed": true]))
                try measure("completions.set", "first day of three years, skipped", p(["template_id": .uuid(habits[2]), "date": .string(firstDay), "state": "skipped"]))
                try measure("completions.set", "first day of three years, none", p(["template_id": .uuid(habits[2]), "date": .string(firstDay), "state": "none"]))
                try measure("completions.set", "today", p(["template_id": .uuid(habits[2]), "date": .string(today), "completed": true]))
                try measure("completions.toggle", "1970-01-02", p(["template_id": .uuid(created), "date": "1970-01-02"]))
                try measure("completions.toggle", "first day of three years", p(["template_id": .uuid(habits[3]), "date": .string(firstDay)]))
                try measure("completions.toggle", "today", p(["template_id": .uuid(habits[3]), "date": .string(today)]))
                try measure("skips.set_range", "366 days to today, every habit", p(["from": .string(yearAgo), "to": .string(today), "skipped": true]))
                try measure("skips.set_range", "366 days to today, every habit, cleared", p(["from": .string(yearAgo), "to": .string(today), "skipped": false]))
                try measure("skips.set_range", "the next 366 days, every habit", p(["from": .string(tomorrow), "to": .string(nextYear), "skipped": true]))

                // Measurable habits, check-ins and notes (sql/0029): a measurable habit of three
                // years; today already holds 99 check-ins (the most a day takes is 100), the add
                // is the 100th and meets the target (a completion, its streak runs); the longest
                // note in four-byte characters on the oldest day.
                let measurableHabit = UUID()
                try call("habits.create", p(["id": .uuid(measurableHabit), "name": "Run", "kind": "measurable", "unit": "km", "target": "5",
                                             "activated_at": .string(firstDay + "T00:00:00Z")]))
                try db.execute("""
                    INSERT INTO public.habit_checkins (user_id, template_id, checkin_date, value, at_time, client_id)
                    SELECT \(user), \(measurableHabit), \(today)::date, 0.001, '12:00', repeat('c', 96) || lpad(n::text, 4, '0') FROM generate_series(1, 99) n
                    """)
                let added = try measure("checkins.add", "the 100th of a day, meeting the target, longest client id",
                                        p(["template_id": .uuid(measurableHabit), "date": .string(today), "value": "999999999.999",
                                           "time": "23:59:59", "client_id": .string(String(repeating: "k", count: 100))]))
                try measure("checkins.list", "a day of 100 check-ins", p(["template_id": .uuid(measurableHabit), "date": .string(today)]))
                try measure("checkins.remove", "the one that met the target", p(["checkin_id": try #require(added["id"])]))
                try measure("completions.set", "a value on the first day of three years", p(["template_id": .uuid(measurableHabit), "date": .string(firstDay), "value": "999999999.999"]))
                try measure("notes.set", "longest note, first day of three years", p(["template_id": .uuid(measurableHabit), "date": .string(firstDay),
                                                                                       "note": .string(String(repeating: "𝔸", count: 1000))]))
                try measure("notes.set", "cleared", p(["template_id": .uuid(measurableHabit), "date": .string(firstDay), "note": .null]))

                // Reminders (issue 33, item 3): a habit's 24, replaced by 24 others; the user's
                // list; tomorrow's window with them all firing, claimed and acknowledged.
                let reminders = WireJSON.array((0..<24).map { .object([.init("days", [1, 2, 3, 4, 5, 6, 7]), .init("time", .string(String(format: "%02d:00", $0)))]) })
                try call("reminders.set", p(["template_id": .uuid(measurableHabit), "reminders": reminders]))
                try measure("reminders.set", "24 replaced by 24", p(["template_id": .uuid(measurableHabit), "reminders": .array((0..<24).map {
                    .object([.init("time", .string(String(format: "%02d:30", $0)))])
                })]))
                try measure("reminders.list", "24", p())
                try measure("widget.get", "today, every habit due", p())
                let window = WireJSON.object([.init("from", .string(tomorrow + "T00:00:00Z")), .init("limit", 10_000), .init("to", .string(tomorrow + "T23:59:59Z"))])
                let firings = try measure("reminders.due", "a day of 24", window)["firings"]?.arrayValue ?? []
                #expect(firings.count == 24)
                let firingIDs = WireJSON.array(firings.compactMap { $0["firing_id"] })
                try measure("reminders.claim", "24", .object([.init("firing_ids", firingIDs), .init("lease_ms", 3_600_000),
                                                              .init("sender", .string(String(repeating: "s", count: 100)))]))
                try measure("reminders.ack", "24", .object([.init("firing_ids", firingIDs)]))

                try measure("lists.create", "longest name", p(["name": name100]))
                try measure("lists.update", "longest name", p(["id": .uuid(lists[1]), "name": name100]))
                try measure("lists.list", "limit 1000", p(["limit": 1000]))
                try measure("tasks.create", "longest title and notes", p([
                    "title": title500, "notes": notes10000, "list_id": .uuid(lists[1]), "scheduled_date": .string(today), "position": 2147483647,
                ]))
                try measure("tasks.update", "longest title and notes", p([
                    "id": .uuid(tasks[1]), "title": title500, "notes": notes10000, "list_id": .uuid(lists[2]),
                    "scheduled_date": .string(today), "position": -2147483648,
                ]))
                try measure("tasks.complete", "", p(["id": .uuid(tasks[1])]))
                try measure("tasks.uncomplete", "", p(["id": .uuid(tasks[1])]))
                try measure("tasks.cycle", "", p(["id": .uuid(tasks[3])]))
                try measure("tasks.set_state", "", p(["id": .uuid(tasks[4]), "state": "completed"]))
                try measure("tasks.today", "limit 1000", p(["date": .string(today), "limit": 1000]))
                for view in ["inbox", "upcoming"] {
                    try measure("tasks.list", "\(view), limit 1000", p(["view": .string(view), "limit": 1000]))
                }
                try measure("tasks.list", "list of 100, limit 1000", p(["view": "list", "list_id": .uuid(lists[0]), "limit": 1000]))
                try measure("tasks.delete", "longest title and notes", p(["id": .uuid(tasks[1])]))
                try measure("lists.delete", "a list of 100 tasks", p(["id": .uuid(lists[0])]))
                try measure("habits.delete", "three years of history", p(["id": .uuid(habits[5])]))

                try measure("sync.pull", "from the start, limit 10000", p(["limit": 10_000]))
                // A push of the dearest mutation, every habit's 366 days skipped and cleared in
                // turn; its bound is per mutation (docs/reliability.md).
                let pushed = Scale.int("AMPLIFICATION_PUSH", default: 2)
                let mutations: [WireJSON] = (0..<pushed).map { index in
                    .object([.init("mutation_id", .string("skip-\(index)")), .init("method", "skips.set_range"),
                             .init("params", .object([.init("from", .string(yearAgo)), .init("to", .string(today)),
                                                      .init("skipped", .bool(index % 2 == 0))]))])
                }
                let push = try measure("sync.push", "\(pushed) × skips.set_range over 366 days, every habit", p(["client_id": "amplifier", "mutations": .array(mutations)]))
                let applied = push["results"]?.arrayValue?.filter { $0["result"] != nil }.count ?? -1
                #expect(applied == pushed, "the push applied \(applied) of \(pushed) mutations: \(push.encoded.prefix(500))")
                if var worst = measured["sync.push"], pushed > 0 {
                    // Per mutation.
                    worst.rows /= pushed; worst.rowBytes /= pushed; worst.walBytes /= pushed
                    worst.statements /= pushed; worst.responseBytes /= pushed
                    measured["sync.push"] = worst
                }

                let export = try measure("account.export", "whole account, limit 10000", p(["limit": 10_000]))
                #expect(export["has_more"]?.boolValue == false, "the export did not fit one page")
                let document = try #require(export["document"])
                // The dearest import: its own export under new ids, so every row is written again.
                let importParams = p(["document": document, "mode": "merge", "ids": "new"])
                let line = WorkerProcess.envelope(method: "account.import", params: importParams, id: "x").encoded
                #expect(line.utf8.count < 1 << 20, "the import line is \(line.utf8.count) bytes")
                try measure("account.import", "its own export of \(line.utf8.count) bytes as a copy (ids new)", importParams)

                try measure("changes.subscribe", "", p())
                try measure("changes.unsubscribe", "", p())
                try measure("account.delete", "three years of history", p(["confirm": .uuid(user)]))
            }
        }

        for method in methods.sorted() {
            let worst = measured[method] ?? Counts()
            Figures.record("amplification", ["method": method, "rows": worst.rows, "row_bytes": worst.rowBytes, "wal_bytes": worst.walBytes,
                                             "statements": worst.statements, "response_bytes": worst.responseBytes])
        }
        let missingScenario = methods.filter { measured[$0] == nil }
        #expect(missingScenario.isEmpty, "methods of openrpc.json this test does not drive (add a scenario and a bound): \(missingScenario)")
        let missingBound = methods.filter { bounds[$0] == nil }
        #expect(missingBound.isEmpty, "methods without a row in docs/reliability.md's amplification bounds: \(missingBound)")
        let stale = Set(bounds.keys).subtracting(methods)
        #expect(stale.isEmpty, "rows of the amplification bounds for methods openrpc.json does not list: \(stale.sorted())")
        for (method, worst) in measured.sorted(by: { $0.key < $1.key }) {
            guard let bound = bounds[method] else { continue }
            let over = worst.exceeded(by: bound)
            #expect(over.isEmpty, "\(method) is past its documented bound: \(over.joined(separator: "; ")) — every variant: \(variants.filter { $0.method == method }.map { "\($0.label): \($0.counts)" })")
        }
    }
}
