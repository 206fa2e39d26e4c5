import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// SyncRepository.pull against the real database: walks with small pages over random states
/// with random writes between pages (a seeded property against a tiny client model), and the
/// cursor's expiry rules.
@Suite struct SyncPullTests {
    /// What a client keeps: every row by key, as pulls deliver them.
    struct ClientState: Equatable {
        var profile: Profile?
        var areas: [UUID: Area] = [:]
        var habits: [UUID: Habit] = [:]
        var periods: [UUID: SyncPeriod] = [:]
        var completions: [DayKey: SyncCompletion] = [:]
        var skips: Set<DayKey> = []
        var lists: [UUID: TaskList] = [:]
        var tasks: [UUID: TaskItem] = [:]
        var checkins: [UUID: Checkin] = [:]
        var notes: [DayKey: SyncNote] = [:]
        var reminders: [UUID: Reminder] = [:]

        mutating func apply(_ page: SyncPage) {
            if let profile = page.profile { self.profile = profile }
            for area in page.areas { areas[area.id] = area }
            for habit in page.habits { habits[habit.id] = habit }
            for period in page.periods { periods[period.id] = period }
            for completion in page.completions { completions[DayKey(templateID: completion.templateID, date: completion.date)] = completion }
            skips.formUnion(page.skips)
            for list in page.lists { lists[list.id] = list }
            for task in page.tasks { tasks[task.id] = task }
            for checkin in page.checkins { checkins[checkin.id] = checkin }
            for note in page.notes { notes[note.day] = note }
            for reminder in page.reminders { reminders[reminder.id] = reminder }
            if page.deleted.profile { profile = nil }
            for id in page.deleted.areas { areas[id] = nil }
            for id in page.deleted.habits { habits[id] = nil }
            for id in page.deleted.periods { periods[id] = nil }
            for key in page.deleted.completions { completions[key] = nil }
            skips.subtract(page.deleted.skips)
            for id in page.deleted.lists { lists[id] = nil }
            for id in page.deleted.tasks { tasks[id] = nil }
            for id in page.deleted.checkins { checkins[id] = nil }
            for key in page.deleted.notes { notes[key] = nil }
            for id in page.deleted.reminders { reminders[id] = nil }
        }

        /// The keys, for comparing with a plain SQL read of the tables.
        var keys: [String: Set<String>] {
            ["profile": profile == nil ? [] : [""],
             "areas": Set(areas.values.map { "\($0.id.lowercaseString) \($0.name)" }),
             // A habit with its area: deleting an area must reach the habits it held.
             "habits": Set(habits.values.map { "\($0.id.lowercaseString) \($0.areaID?.lowercaseString ?? "-")" }), "periods": Set(periods.keys.map(\.lowercaseString)),
             "completions": Set(completions.keys.map { "\($0.templateID.lowercaseString)/\($0.date)" }),
             "skips": Set(skips.map { "\($0.templateID.lowercaseString)/\($0.date)" }),
             "lists": Set(lists.keys.map(\.lowercaseString)), "tasks": Set(tasks.keys.map(\.lowercaseString)),
             "checkins": Set(checkins.values.map { "\($0.id.lowercaseString) \($0.value.text)" }),
             "notes": Set(notes.values.map { "\($0.day.templateID.lowercaseString)/\($0.day.date) \($0.note)" }),
             "reminders": Set(reminders.values.map { "\($0.id.lowercaseString) \($0.time)" })]
        }
    }

    /// Random writes of one user through SQL (a superuser, as psql: the triggers number every
    /// writer). A write the rules refuse (a skip on a completed day…) is simply not made.
    struct Writer {
        let admin: Connection
        let user: UUID

        func ids(_ table: String) throws -> [UUID] {
            try admin.query(Query(unsafeSQL: "SELECT id FROM public.\(table) WHERE user_id = '\(user.lowercaseString)' ORDER BY id"))
                .map { try $0.decode(UUID.self, at: 0) }
        }

        func randomWrite(_ random: inout SeededGenerator) throws {
            let habits = try ids("habit_templates"), lists = try ids("task_lists"), tasks = try ids("tasks")
            let habit = habits.randomElement(using: &random), list = lists.randomElement(using: &random)
            let task = tasks.randomElement(using: &random), checkin = try ids("habit_checkins").randomElement(using: &random)
            let reminder = try ids("habit_reminders").randomElement(using: &random)
            let area = try ids("habit_areas").randomElement(using: &random)
            let day = "2025-03-\(String(format: "%02d", Int.random(in: 1...6, using: &random)))"
            let name = "n\(Int.random(in: 0...999, using: &random))"
            let minute = String(format: "%02d:%02d", Int.random(in: 0...23, using: &random), Int.random(in: 0...59, using: &random))
            let statement: Query? = switch Int.random(in: 0..<27, using: &random) {
            case 0, 1: "INSERT INTO habit_templates (user_id, name, activated_at) VALUES (\(user), \(name), '2025-01-01Z')"
            case 2: habit.map { "UPDATE habit_templates SET name = \(name) WHERE id = \($0)" }
            case 3: habit.map { "UPDATE habit_templates SET is_active = NOT is_active WHERE id = \($0)" }
            case 4: habit.map { "DELETE FROM habit_templates WHERE id = \($0)" }
            case 5, 6: habit.map { "INSERT INTO habit_completions (user_id, template_id, completed_date) VALUES (\(user), \($0), \(day)::date) ON CONFLICT DO NOTHING" }
            case 7: habit.map { "DELETE FROM habit_completions WHERE template_id = \($0) AND completed_date = \(day)::date" }
            case 8: habit.map { "INSERT INTO habit_skips (user_id, template_id, skipped_date) VALUES (\(user), \($0), \(day)::date) ON CONFLICT DO NOTHING" }
            case 9: habit.map { "DELETE FROM habit_skips WHERE template_id = \($0) AND skipped_date = \(day)::date" }
            case 10: "INSERT INTO task_lists (user_id, name) VALUES (\(user), \(name))"
            case 11: list.map { "DELETE FROM task_lists WHERE id = \($0)" } // its tasks are updated (list_id NULL)
            case 12: "INSERT INTO tasks (user_id, title, list_id, position) VALUES (\(user), \(name), \(list), 1)"
            case 13: task.map { "UPDATE tasks SET title = \(name) WHERE id = \($0)" }
            case 14: task.map { "DELETE FROM tasks WHERE id = \($0)" }
            // Check-ins and notes (sql/0029): a check-in follows the day's completion; a note
            // is upserted, so its row changes in place.
            case 16: habit.map { "INSERT INTO habit_checkins (user_id, template_id, checkin_date, value) VALUES (\(user), \($0), \(day)::date, 1)" }
            case 17: checkin.map { "DELETE FROM habit_checkins WHERE id = \($0)" }
            case 18: habit.map { "INSERT INTO habit_day_notes (user_id, template_id, note_date, note) VALUES (\(user), \($0), \(day)::date, \(name)) ON CONFLICT (user_id, template_id, note_date) DO UPDATE SET note = excluded.note" }
            case 19: habit.map { "DELETE FROM habit_day_notes WHERE template_id = \($0) AND note_date = \(day)::date" }
            // Reminders (sql/0036): added, moved to another time, deleted.
            case 20: habit.map { "INSERT INTO habit_reminders (user_id, template_id, local_time) VALUES (\(user), \($0), \(minute)::time)" }
            case 21: reminder.map { "UPDATE habit_reminders SET local_time = \(minute)::time WHERE id = \($0)" }
            case 22: reminder.map { "DELETE FROM habit_reminders WHERE id = \($0)" }
            // Areas (sql/0037): added, renamed, given to a habit, deleted (its habits are updated).
            case 23: "INSERT INTO habit_areas (user_id, name) VALUES (\(user), \(name))"
            case 24: area.map { "UPDATE habit_areas SET name = \(name) WHERE id = \($0)" }
            case 25: habit.map { "UPDATE habit_templates SET area_id = \(area) WHERE id = \($0)" }
            case 26: area.map { "DELETE FROM habit_areas WHERE id = \($0)" }
            default:
                Bool.random(using: &random)
                    ? "INSERT INTO profiles (user_id, timezone) VALUES (\(user), \(["UTC", "Europe/Paris", "Asia/Tokyo"].randomElement(using: &random)!)) ON CONFLICT (user_id) DO UPDATE SET timezone = excluded.timezone"
                    : "DELETE FROM profiles WHERE user_id = \(user)"
            }
            guard let statement else { return }
            do {
                _ = try admin.execute(statement)
            } catch let error as PostgresError where error.sqlState.map({ $0.isInClass("HB") || $0.isInClass("23") }) == true {
                // Refused by a rule of the database: nothing was written.
            }
        }

        /// Every key of the user's rows, by a plain read of the tables.
        func keys() throws -> [String: Set<String>] {
            let u = user.lowercaseString
            func set(_ sql: String) throws -> Set<String> {
                Set(try admin.query(Query(unsafeSQL: sql)).map { try $0.decode(String.self, at: 0) })
            }
            return [
                "profile": try set("SELECT '' FROM profiles WHERE user_id = '\(u)'"),
                "areas": try set("SELECT id::text || ' ' || name FROM habit_areas WHERE user_id = '\(u)'"),
                "habits": try set("SELECT id::text || ' ' || coalesce(area_id::text, '-') FROM habit_templates WHERE user_id = '\(u)'"),
                "periods": try set("SELECT id::text FROM habit_periods WHERE user_id = '\(u)'"),
                "completions": try set("SELECT template_id::text || '/' || completed_date::text FROM habit_completions WHERE user_id = '\(u)'"),
                "skips": try set("SELECT template_id::text || '/' || skipped_date::text FROM habit_skips WHERE user_id = '\(u)'"),
                "lists": try set("SELECT id::text FROM task_lists WHERE user_id = '\(u)'"),
                "tasks": try set("SELECT id::text FROM tasks WHERE user_id = '\(u)'"),
                "checkins": try set("SELECT id::text || ' ' || trim_scale(value)::text FROM habit_checkins WHERE user_id = '\(u)'"),
                "notes": try set("SELECT template_id::text || '/' || note_date::text || ' ' || note FROM habit_day_notes WHERE user_id = '\(u)'"),
                "reminders": try set("SELECT id::text || ' ' || to_char(local_time, 'HH24:MI') FROM habit_reminders WHERE user_id = '\(u)'"),
            ]
        }
    }

    static let retention = Duration.seconds(3600)

    /// A walk with pages of 1, 2, 3 or 7 items over a random state, with random writes between
    /// the pages, ends (has_more false) with the client equal to a fresh one-page pull of the
    /// database and to the tables' keys; then more writes and an incremental pull from the
    /// caught-up cursor agree again. Seeded: a failure names its seed and limit.
    @Test(arguments: [1, 2, 3, 7])
    func walksWithWritesBetweenPagesEndEqualToTheDatabase(limit: Int) throws {
        try HabitFixture.with { fixture throws in
            let sync = SyncRepository(connection: fixture.workerConnection)
            for seed: UInt64 in [UInt64(limit) * 1_000 + 1, UInt64(limit) * 1_000 + 2, UInt64(limit) * 1_000 + 3] {
                var random = SeededGenerator(seed: seed)
                let user = UUID()
                let writer = Writer(admin: fixture.admin, user: user)
                for _ in 0..<25 { try writer.randomWrite(&random) }
                var client = ClientState()
                var cursor: SyncCursor? = nil
                for round in 0..<3 {
                    var pages = 0
                    while true {
                        let page = try sync.pull(user: user, cursor: cursor, limit: limit, retention: Self.retention)
                        #expect(page.count <= limit, "seed \(seed)")
                        #expect(page.hasMore || page.cursor.rank == 11, "seed \(seed)") // caught up: after the eleven kinds
                        client.apply(page)
                        cursor = page.cursor
                        pages += 1
                        if !page.hasMore { break }
                        // Writes between pages, during the first pages only, so that the walk ends.
                        if pages < 12 { for _ in 0..<Int.random(in: 0...2, using: &random) { try writer.randomWrite(&random) } }
                        try #require(pages < 2_000, "seed \(seed): the walk does not end")
                    }
                    let fresh = try sync.pull(user: user, cursor: nil, limit: SyncRepository.maxLimit, retention: Self.retention)
                    #expect(!fresh.hasMore)
                    var expected = ClientState()
                    expected.apply(fresh)
                    #expect(client == expected, "seed \(seed) round \(round) limit \(limit)")
                    #expect(client.keys == (try writer.keys()), "seed \(seed) round \(round) limit \(limit)")
                    // Nothing new: same position, nothing sent.
                    let again = try sync.pull(user: user, cursor: cursor, limit: limit, retention: Self.retention)
                    #expect(again.count == 0 && !again.hasMore && again.cursor.seq == cursor?.seq)
                    for _ in 0..<8 { try writer.randomWrite(&random) }
                }
            }
        }
    }

    /// A multi-row write in one transaction shares one change number: a page may end inside it
    /// and the next page continues after the exact key.
    @Test func pagesSplitOneChangeNumberByKey() throws {
        try HabitFixture.with { fixture throws in
            let sync = SyncRepository(connection: fixture.workerConnection)
            let user = UUID()
            _ = try fixture.admin.execute("""
                INSERT INTO tasks (user_id, title, position) SELECT \(user), 'task ' || n, n FROM generate_series(1, 10) n
                """)
            var seen: [UUID] = []
            var cursor: SyncCursor? = nil
            repeat {
                let page = try sync.pull(user: user, cursor: cursor, limit: 3, retention: .seconds(60))
                seen += page.tasks.map(\.id)
                cursor = page.cursor
                if !page.hasMore { break }
            } while true
            let ids = try fixture.admin.query("SELECT id FROM tasks WHERE user_id = \(user) ORDER BY id").map { try $0.decode(UUID.self, at: 0) }
            #expect(seen == ids)
        }
    }

    /// Expiry: issued longer ago than the retention; below what prune removed; after a reset
    /// (every cursor, while a fresh walk works); from the future (a restored database). And
    /// text this service never wrote is refused as invalid.
    @Test func cursorsExpireAndMalformedOnesAreRefused() throws {
        try HabitFixture.with { fixture throws in
            let sync = SyncRepository(connection: fixture.workerConnection)
            let user = UUID()
            let habit = UUID()
            _ = try fixture.admin.execute("INSERT INTO habit_templates (id, user_id, name) VALUES (\(habit), \(user), 'Run')")
            let old = try sync.pull(user: user, cursor: nil, limit: 100, retention: .seconds(60)).cursor
            _ = try fixture.admin.execute("DELETE FROM habit_templates WHERE id = \(habit)")
            // The deletion reaches the old cursor while its tombstone is kept…
            #expect(try sync.pull(user: user, cursor: old, limit: 100, retention: .seconds(60)).deleted.habits == [habit])
            // …and once it was pruned, the old cursor has expired; a fresh walk works.
            // Written with immutable operators: Citus refuses a STABLE one (timestamptz - interval)
            // fed a column in a multi-shard UPDATE.
            _ = try fixture.admin.execute("UPDATE habit.sync_tombstones SET deleted_at = ((deleted_at AT TIME ZONE 'UTC') - interval '2 days') AT TIME ZONE 'UTC'")
            let pruned = try fixture.admin.queryOne("SELECT tombstones FROM habit.prune_sync('1 day')").decode(Int64.self, at: 0)
            #expect(pruned == 2) // the habit and its period
            #expect(throws: StoreError.cursorExpired) { try sync.pull(user: user, cursor: old, limit: 100, retention: .seconds(60)) }
            let fresh = try sync.pull(user: user, cursor: nil, limit: 100, retention: .seconds(60))
            #expect(fresh.count == 0 && !fresh.hasMore)
            #expect(try sync.pull(user: user, cursor: fresh.cursor, limit: 100, retention: .seconds(60)).count == 0)

            // sync_reset expires every cursor, the caught-up one included; a fresh walk works.
            _ = try fixture.admin.execute("SELECT habit.sync_reset(\(user))")
            #expect(throws: StoreError.cursorExpired) { try sync.pull(user: user, cursor: fresh.cursor, limit: 100, retention: .seconds(60)) }
            let afterReset = try sync.pull(user: user, cursor: nil, limit: 100, retention: .seconds(60)).cursor
            #expect(try sync.pull(user: user, cursor: afterReset, limit: 100, retention: .seconds(60)).count == 0)

            // Issued longer ago than the retention.
            let now = Int64(Date().timeIntervalSince1970)
            let aged = try SyncCursor(text: Self.cursorText(seq: afterReset.seq, rank: 11, key: "", fresh: afterReset.seq, issued: now - 120))
            #expect(throws: StoreError.cursorExpired) { try sync.pull(user: user, cursor: aged, limit: 100, retention: .seconds(60)) }
            // From the future: the clock is behind the cursor.
            let future = try SyncCursor(text: Self.cursorText(seq: afterReset.seq + 5, rank: 11, key: "", fresh: 0, issued: now))
            #expect(throws: StoreError.cursorExpired) { try sync.pull(user: user, cursor: future, limit: 100, retention: .seconds(60)) }
            // The codec round-trips what it wrote.
            #expect(try SyncCursor(text: afterReset.text) == afterReset)

            let id = "a0000000-0000-0000-0000-00000000000b"
            let malformed = [
                "", "v4.", "v5." + Self.base64URL("1.11..1.1"), Self.base64URL("1.11..1.1"), "v4.!!!!",
                "v4." + Self.base64URL("1.11..1"), "v4." + Self.base64URL("1.12..1.1"), "v4." + Self.base64URL("x.11..1.1"),
                "v4." + Self.base64URL("-2.11..1.1"), "v4." + Self.base64URL("1.11.x.1.1"), "v4." + Self.base64URL("1.2..1.1"),
                "v4." + Self.base64URL("1.2.\(id.uppercased()).1.1"), "v4." + Self.base64URL("1.4.\(id).1.1"),
                "v4." + Self.base64URL("1.4.\(id)/2025-02-30.1.1"), "v4." + Self.base64URL("1.2.\(id).1.1") + "=",
                "v4." + Self.base64URL("1.11..1.1.1"), "v4." + Self.base64URL("1.11..-1.1"),
                // A check-in's key is an id, a note's a day key (sql/0029), a reminder's an id
                // (sql/0036), an area's an id (sql/0037, rank 1).
                "v4." + Self.base64URL("1.8.\(id)/2025-02-03.1.1"), "v4." + Self.base64URL("1.9.\(id).1.1"),
                "v4." + Self.base64URL("1.10.\(id)/2025-02-03.1.1"), "v4." + Self.base64URL("1.10..1.1"),
                "v4." + Self.base64URL("1.1..1.1"), "v4." + Self.base64URL("1.1.\(id)/2025-02-03.1.1"),
                // v1, v2 and v3 text this service never wrote: invalid, not expired.
                "v1.", "v1." + Self.base64URL("1.8..1.1"), "v1." + Self.base64URL("1.7.\(id).1.1"), "v1." + Self.base64URL("x.7..1.1"),
                "v2.", "v2.!!!!", "v2." + Self.base64URL("1.10..1.1"), "v2." + Self.base64URL("1.9.x.1.1"),
                "v3.", "v3.!!!!", "v3." + Self.base64URL("1.11..1.1"), "v3." + Self.base64URL("1.9.x.1.1"),
            ]
            for text in malformed {
                #expect(throws: StoreError.invalidCursor, "\(text)") { try SyncCursor(text: text) }
            }
            // Positions of the newer kinds read back.
            #expect(try SyncCursor(text: "v4." + Self.base64URL("1.1.\(id).1.1")).rank == 1)
            #expect(try SyncCursor(text: "v4." + Self.base64URL("1.8.\(id).1.1")).rank == 8)
            #expect(try SyncCursor(text: "v4." + Self.base64URL("1.9.\(id)/2025-02-03.1.1")).rank == 9)
            #expect(try SyncCursor(text: "v4." + Self.base64URL("1.10.\(id).1.1")).rank == 10)
            // A v1 cursor (written before check-ins and notes were pulled), a v2 one (before
            // reminders were) or a v3 one (before areas were): its holder never got those rows,
            // so it has expired, caught up or mid-walk: the client pulls from scratch once.
            for legacy in ["1.7..1.1", "1.3.\(id)/2025-02-03.1.1", "1.6.\(id).1.1", "-1.0..0.1"] {
                #expect(throws: StoreError.cursorExpired, "\(legacy)") { try SyncCursor(text: "v1." + Self.base64URL(legacy)) }
            }
            for legacy in ["1.9..1.1", "1.8.\(id)/2025-02-03.1.1", "1.7.\(id).1.1", "-1.0..0.1"] {
                #expect(throws: StoreError.cursorExpired, "\(legacy)") { try SyncCursor(text: "v2." + Self.base64URL(legacy)) }
            }
            for legacy in ["1.10..1.1", "1.9.\(id).1.1", "1.8.\(id)/2025-02-03.1.1", "1.3.\(id)/2025-02-03.1.1", "-1.0..0.1"] {
                #expect(throws: StoreError.cursorExpired, "\(legacy)") { try SyncCursor(text: "v3." + Self.base64URL(legacy)) }
            }
            #expect(throws: StoreError.self) { try sync.pull(user: user, cursor: nil, limit: 0, retention: .seconds(60)) }
            #expect(throws: StoreError.self) { try sync.pull(user: user, cursor: nil, limit: 10_001, retention: .seconds(60)) }
        }
    }

    static func base64URL(_ text: String) -> String {
        Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func cursorText(seq: Int64, rank: Int, key: String, fresh: Int64, issued: Int64) -> String {
        "v4." + base64URL("\(seq).\(rank).\(key).\(fresh).\(issued)")
    }
}
