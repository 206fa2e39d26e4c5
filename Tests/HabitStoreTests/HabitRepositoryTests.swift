import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

@Suite struct HabitRepositoryTests {
    @Test func createListUpdateDeactivateActivateDelete() throws {
        try HabitFixture.with { fixture throws in
            let repository = fixture.repository
            let user = UUID()
            let run = try repository.createHabit(user: user, HabitDraft(name: "  Morning Run \n", icon: "figure.run", color: "#ff8800"))
            #expect(run.name == "Morning Run")
            #expect(run.icon == "figure.run")
            #expect(run.color == "#FF8800")
            #expect(run.isActive && run.deactivatedAt == nil)
            #expect(run.sortOrder == 1)
            let read = try repository.createHabit(user: user, HabitDraft(name: "Read"))
            #expect(read.sortOrder == 2)
            #expect(read.icon == nil && read.color == nil)
            #expect(try repository.listHabits(user: user).map(\.id) == [run.id, read.id])

            let renamed = try repository.updateHabit(user: user, id: read.id, HabitChanges(name: "Read 20 min", icon: .some("book"), sortOrder: .some(0)))
            #expect(renamed.name == "Read 20 min" && renamed.icon == "book" && renamed.sortOrder == 0)
            #expect(renamed.updatedAt >= read.updatedAt)
            #expect(try repository.listHabits(user: user).map(\.id) == [read.id, run.id])
            let cleared = try repository.updateHabit(user: user, id: read.id, HabitChanges(icon: .some(nil), sortOrder: .some(nil)))
            #expect(cleared.icon == nil && cleared.sortOrder == nil && cleared.name == "Read 20 min")
            #expect(try repository.listHabits(user: user).map(\.id) == [run.id, read.id]) // NULL sort_order last

            let deactivated = try repository.deactivateHabit(user: user, id: run.id)
            #expect(!deactivated.isActive && deactivated.deactivatedAt != nil)
            let again = try repository.deactivateHabit(user: user, id: run.id)
            #expect(again.deactivatedAt == deactivated.deactivatedAt)
            #expect(again.updatedAt == deactivated.updatedAt) // a no-op leaves updated_at alone
            #expect(try repository.listHabits(user: user).map(\.id) == [read.id])
            #expect(try repository.listHabits(user: user, includeInactive: true).map(\.id) == [run.id, read.id])
            let reactivated = try repository.activateHabit(user: user, id: run.id)
            #expect(reactivated.isActive && reactivated.deactivatedAt == nil)
            #expect(reactivated.activatedAt == run.activatedAt)

            try repository.deleteHabit(user: user, id: run.id)
            #expect(throws: StoreError.notFound) { try repository.deleteHabit(user: user, id: run.id) }
            #expect(try repository.listHabits(user: user, includeInactive: true).map(\.id) == [read.id])
        }
    }

    @Test func deleteCascadesToCompletions() throws {
        try HabitFixture.with { fixture throws in
            let user = UUID()
            let habit = try fixture.repository.createHabit(user: user, HabitDraft(name: "Water", activatedAt: instant("2026-01-01T00:00:00Z")))
            let other = try fixture.repository.createHabit(user: user, HabitDraft(name: "Stretch", activatedAt: instant("2026-01-01T00:00:00Z")))
            for day in ["2026-03-01", "2026-03-02"] {
                _ = try fixture.repository.setCompletion(user: user, template: habit.id, date: date(day), completed: true)
                _ = try fixture.repository.setCompletion(user: user, template: other.id, date: date(day), completed: true)
            }
            #expect(try fixture.completionCount(user: user) == 4)
            try fixture.repository.deleteHabit(user: user, id: habit.id)
            #expect(try fixture.completionCount(user: user) == 2)
        }
    }

    @Test func validationNamesTheField() throws {
        try HabitFixture.with { fixture throws in
            let repository = fixture.repository
            let user = UUID()
            let cases: [(HabitDraft, String)] = [
                (HabitDraft(name: "   "), "name"),
                (HabitDraft(name: String(repeating: "x", count: 101)), "name"),
                (HabitDraft(name: "tab\tinside"), "name"),
                (HabitDraft(name: "ok", icon: "Figure.Run"), "icon"),
                (HabitDraft(name: "ok", icon: "figure..run"), "icon"),
                (HabitDraft(name: "ok", icon: ""), "icon"),
                (HabitDraft(name: "ok", color: "red"), "color"),
                (HabitDraft(name: "ok", color: "#12345G"), "color"),
                (HabitDraft(name: "ok", sortOrder: Int(Int32.max) + 1), "sort_order"),
            ]
            for (draft, field) in cases {
                let error = try #require(throws: StoreError.self) { try repository.createHabit(user: user, draft) }
                guard case .invalidInput(let reported, _, _) = error else { Issue.record("\(error)"); continue }
                #expect(reported == field)
            }
            // Exactly 100 characters (code points, here multi-byte ones) is fine.
            let long = try repository.createHabit(user: user, HabitDraft(name: String(repeating: "é", count: 100)))
            #expect(long.name.unicodeScalars.count == 100)
            #expect(throws: StoreError.invalidInput(field: "timezone", reason: .invalidTimeZone, message: "not a time zone PostgreSQL knows (pg_timezone_names)")) {
                try repository.setTimeZone(user: user, timeZone: "Mars/Olympus")
            }
            #expect(throws: StoreError.self) { try repository.day(user: user, date: date("2026-01-01"), timeZone: "EST5EDT-ish") }
            // The database enforces the same rules on its own (an admin in psql).
            let check = try #require(throws: PostgresError.self) {
                try fixture.admin.execute("INSERT INTO habit_templates (user_id, name) VALUES (\(user), ' padded')")
            }
            #expect(check.constraint == "habit_templates_name_check")
            #expect(throws: PostgresError.self) {
                try fixture.admin.execute("INSERT INTO profiles (user_id, timezone) VALUES (\(user), 'Nowhere/Town')")
            }
        }
    }

    @Test func profileDefaultsToUTCAndStoresTheZone() throws {
        try HabitFixture.with { fixture throws in
            let user = UUID()
            #expect(try fixture.repository.profile(user: user) == Profile(userID: user, timeZone: "UTC"))
            #expect(try fixture.repository.setTimeZone(user: user, timeZone: "Pacific/Auckland").timeZone == "Pacific/Auckland")
            #expect(try fixture.repository.setTimeZone(user: user, timeZone: "America/Los_Angeles").timeZone == "America/Los_Angeles")
            #expect(try fixture.repository.profile(user: user).timeZone == "America/Los_Angeles")
        }
    }

    /// The spec's case: created at 23:30 in Los Angeles on 21 November, it shows on the 21st.
    @Test func activationDayIsLocal() throws {
        try HabitFixture.with { fixture throws in
            let user = UUID()
            _ = try fixture.repository.setTimeZone(user: user, timeZone: "America/Los_Angeles")
            let late = try fixture.repository.createHabit(user: user, HabitDraft(name: "Late", activatedAt: instant("2026-11-21T23:30:00-08:00")))
            #expect(try fixture.repository.activeTemplates(user: user, on: date("2026-11-21")).map(\.id) == [late.id])
            #expect(try fixture.repository.activeTemplates(user: user, on: date("2026-11-20")).isEmpty)
            // The naive filter misses it: this is what the test guards against.
            let naive = try fixture.admin.queryOne("""
                SELECT count(*) FROM habit_templates WHERE user_id = \(user) AND activated_at <= '2026-11-21'::date
                """).decode(Int.self, at: 0)
            #expect(naive == 0)
            // A per-request zone overrides the profile: in UTC it is already the 22nd.
            #expect(try fixture.repository.activeTemplates(user: user, on: date("2026-11-21"), timeZone: "UTC").isEmpty)
            #expect(try fixture.repository.activeTemplates(user: user, on: date("2026-11-22"), timeZone: "UTC").map(\.id) == [late.id])
        }
    }

    /// Pacific/Auckland leaves daylight time on 2026-04-05 (03:00 NZDT → 02:00 NZST) and
    /// enters it on 2026-09-27: activation days follow the offset in force at each instant.
    @Test func activationDayAcrossAucklandDST() throws {
        try HabitFixture.with { fixture throws in
            let user = UUID()
            _ = try fixture.repository.setTimeZone(user: user, timeZone: "Pacific/Auckland")
            let cases: [(String, String)] = [
                ("2026-04-04T10:30:00Z", "2026-04-04"), // 23:30 NZDT (+13)
                ("2026-04-04T12:30:00Z", "2026-04-05"), // 01:30 NZDT, before the change
                ("2026-04-05T11:30:00Z", "2026-04-05"), // 23:30 NZST (+12): UTC+13 would say the 6th
                ("2026-09-26T13:30:00Z", "2026-09-27"), // 01:30 NZST, before the spring change
                ("2026-09-27T10:30:00Z", "2026-09-27"), // 23:30 NZDT (+13)
            ]
            for (activation, expectedDay) in cases {
                let habit = try fixture.repository.createHabit(user: user, HabitDraft(name: activation, activatedAt: instant(activation)))
                let dayBefore = date(expectedDay).adding(days: -1)
                #expect(try fixture.repository.activeTemplates(user: user, on: date(expectedDay)).contains { $0.id == habit.id }, "\(activation)")
                #expect(try !fixture.repository.activeTemplates(user: user, on: dayBefore).contains { $0.id == habit.id }, "\(activation)")
            }
        }
    }

    @Test func setCompletionIsIdempotent() throws {
        try HabitFixture.with { fixture throws in
            let user = UUID()
            let habit = try fixture.repository.createHabit(user: user, HabitDraft(name: "Meditate", activatedAt: instant("2026-01-01T00:00:00Z")))
            let day = date("2026-02-10")
            #expect(try fixture.repository.setCompletion(user: user, template: habit.id, date: day, completed: false) == CompletionChange(completed: false, changed: false))
            #expect(try fixture.repository.setCompletion(user: user, template: habit.id, date: day, completed: true) == CompletionChange(completed: true, changed: true))
            #expect(try fixture.repository.setCompletion(user: user, template: habit.id, date: day, completed: true) == CompletionChange(completed: true, changed: false))
            #expect(try fixture.completionCount(user: user) == 1)
            #expect(try fixture.repository.completedTemplateIDs(user: user, on: day) == [habit.id])
            #expect(try fixture.repository.completedTemplateIDs(user: user, on: day.adding(days: 1)).isEmpty)
            #expect(try fixture.repository.setCompletion(user: user, template: habit.id, date: day, completed: false) == CompletionChange(completed: false, changed: true))
            #expect(try fixture.completionCount(user: user) == 0)
        }
    }

    @Test func toggleFlipsAndReturnsTheNewState() throws {
        try HabitFixture.with { fixture throws in
            let user = UUID()
            let habit = try fixture.repository.createHabit(user: user, HabitDraft(name: "Stretch", activatedAt: instant("2026-01-01T00:00:00Z")))
            let day = date("2026-03-03")
            #expect(try fixture.repository.toggleCompletion(user: user, template: habit.id, date: day) == true)
            #expect(try fixture.repository.completedTemplateIDs(user: user, on: day) == [habit.id])
            #expect(try fixture.repository.toggleCompletion(user: user, template: habit.id, date: day) == false)
            #expect(try fixture.completionCount(user: user) == 0)
        }
    }

    @Test func rulesForCompletions() throws {
        try HabitFixture.with { fixture throws in
            let repository = fixture.repository
            let user = UUID()
            let habit = try repository.createHabit(user: user, HabitDraft(name: "Floss", activatedAt: instant("2026-01-10T12:00:00Z")))
            // Before its activation day.
            #expect(throws: StoreError.habitNotActive) { try repository.setCompletion(user: user, template: habit.id, date: date("2026-01-09"), completed: true) }
            #expect(throws: StoreError.habitNotActive) { try repository.toggleCompletion(user: user, template: habit.id, date: date("2026-01-09")) }
            _ = try repository.setCompletion(user: user, template: habit.id, date: date("2026-01-10"), completed: true)
            // Deactivated (issue 16): no completions from today on; its past active days keep
            // their history and can still be completed and un-completed.
            _ = try repository.deactivateHabit(user: user, id: habit.id)
            let today = try fixture.today(in: "UTC")
            #expect(throws: StoreError.habitNotActive) { try repository.setCompletion(user: user, template: habit.id, date: today, completed: true) }
            #expect(throws: StoreError.habitNotActive) { try repository.toggleCompletion(user: user, template: habit.id, date: today) }
            #expect(try repository.toggleCompletion(user: user, template: habit.id, date: date("2026-01-10")) == false)
            #expect(try repository.toggleCompletion(user: user, template: habit.id, date: date("2026-01-10")) == true)
            #expect(try repository.toggleCompletion(user: user, template: habit.id, date: date("2026-01-10")) == false)
            // Unknown template.
            #expect(throws: StoreError.notFound) { try repository.setCompletion(user: user, template: UUID(), date: date("2026-01-10"), completed: true) }
            #expect(throws: StoreError.notFound) { try repository.toggleCompletion(user: user, template: UUID(), date: date("2026-01-10")) }
            #expect(throws: StoreError.notFound) { try repository.updateHabit(user: user, id: UUID(), HabitChanges(name: "x")) }
            #expect(try fixture.completionCount(user: user) == 0)
        }
    }

    /// "Today" is the user's local today: accepted; local tomorrow is refused. Kiritimati
    /// (UTC+14) and Los Angeles are a day apart for most of each UTC day.
    @Test(arguments: ["Pacific/Kiritimati", "America/Los_Angeles", "Pacific/Auckland", "UTC"])
    func futureIsLocal(zone: String) throws {
        try HabitFixture.with { fixture throws in
            let repository = fixture.repository
            let user = UUID()
            _ = try repository.setTimeZone(user: user, timeZone: zone)
            let habit = try repository.createHabit(user: user, HabitDraft(name: "Walk", activatedAt: instant("2020-01-01T00:00:00Z")))
            let today = try fixture.today(in: zone)
            #expect(try repository.setCompletion(user: user, template: habit.id, date: today, completed: true).changed)
            #expect(throws: StoreError.futureDate(today: today)) {
                try repository.setCompletion(user: user, template: habit.id, date: today.adding(days: 1), completed: true)
            }
            #expect(throws: StoreError.futureDate(today: today)) {
                try repository.toggleCompletion(user: user, template: habit.id, date: today.adding(days: 1))
            }
            let view = try repository.day(user: user, date: today.adding(days: 1))
            #expect(view.today == today && view.isFuture && view.habits.map(\.id) == [habit.id])
            #expect(try !repository.day(user: user, date: today).isFuture)
            // The same user with a per-request zone 26 hours away gets that zone's today.
            let other = zone == "Pacific/Kiritimati" ? "Pacific/Pago_Pago" : "Pacific/Kiritimati"
            #expect(try repository.day(user: user, date: today, timeZone: other).today == fixture.today(in: other))
        }
    }

    @Test func dayViewCombinesHabitsAndCompletions() throws {
        try HabitFixture.with { fixture throws in
            let repository = fixture.repository
            let user = UUID()
            let early = try repository.createHabit(user: user, HabitDraft(name: "A", activatedAt: instant("2026-01-01T00:00:00Z"), sortOrder: 2))
            let first = try repository.createHabit(user: user, HabitDraft(name: "B", activatedAt: instant("2026-01-01T00:00:00Z"), sortOrder: 1))
            _ = try repository.createHabit(user: user, HabitDraft(name: "Later", activatedAt: instant("2026-06-01T00:00:00Z")))
            let gone = try repository.createHabit(user: user, HabitDraft(name: "Gone", activatedAt: instant("2026-01-01T00:00:00Z")))
            _ = try repository.deactivateHabit(user: user, id: gone.id)
            _ = try repository.setCompletion(user: user, template: early.id, date: date("2026-02-01"), completed: true)
            let view = try repository.day(user: user, date: date("2026-02-01"))
            // A habit deactivated now still shows on its past active days (issue 16).
            #expect(view.habits.map(\.id) == [first.id, early.id, gone.id])
            #expect(view.completed == [early.id])
            #expect(view.date == date("2026-02-01") && !view.isFuture)
            let empty = try repository.day(user: UUID(), date: date("2026-02-01"))
            #expect(empty.habits.isEmpty && empty.completed.isEmpty)
        }
    }

    @Test func weekCountsFollowActivationAndWeekStart() throws {
        try HabitFixture.with { fixture throws in
            let repository = fixture.repository
            let user = UUID()
            // 2026-11-16 is a Monday.
            let old = try repository.createHabit(user: user, HabitDraft(name: "Old", activatedAt: instant("2026-01-01T00:00:00Z")))
            let midweek = try repository.createHabit(user: user, HabitDraft(name: "Mid", activatedAt: instant("2026-11-18T09:00:00Z")))
            for day in ["2026-11-16", "2026-11-18", "2026-11-20"] {
                _ = try repository.setCompletion(user: user, template: old.id, date: date(day), completed: true)
            }
            _ = try repository.setCompletion(user: user, template: midweek.id, date: date("2026-11-18"), completed: true)
            let monday = try repository.weekCounts(user: user, containing: date("2026-11-19"), weekStart: .monday)
            #expect(monday.map(\.date) == (0..<7).map { date("2026-11-16").adding(days: $0) })
            #expect(monday.map(\.completed) == [1, 0, 2, 0, 1, 0, 0])
            #expect(monday.map(\.active) == [1, 1, 2, 2, 2, 2, 2])
            let sunday = try repository.weekCounts(user: user, containing: date("2026-11-19"), weekStart: .sunday)
            #expect(sunday.first?.date == date("2026-11-15"))
            #expect(sunday.map(\.completed) == [0, 1, 0, 2, 0, 1, 0])
            // A Sunday belongs to the week before with Monday weeks, and starts its own with Sunday weeks.
            #expect(try repository.weekCounts(user: user, containing: date("2026-11-22"), weekStart: .monday).first?.date == date("2026-11-16"))
            #expect(try repository.weekCounts(user: user, containing: date("2026-11-22"), weekStart: .sunday).first?.date == date("2026-11-22"))
        }
    }

    @Test func updatedAtIsMaintainedByTheDatabase() throws {
        try HabitFixture.with { fixture throws in
            let user = UUID()
            let habit = try fixture.repository.createHabit(user: user, HabitDraft(name: "Tea"))
            // An admin's UPDATE in psql moves updated_at too (a later transaction, a later now()).
            try fixture.admin.execute("UPDATE habit_templates SET name = 'Green tea' WHERE id = \(habit.id)")
            let row = try fixture.admin.queryOne("SELECT updated_at, created_at FROM habit_templates WHERE id = \(habit.id)")
            #expect(try row.decode(PostgresTimestamp.self, at: 0) > habit.updatedAt)
            #expect(try row.decode(PostgresTimestamp.self, at: 1) == habit.createdAt)
        }
    }

    @Test func claimsAndRoleNeverOutliveATransaction() throws {
        try HabitFixture.with { fixture throws in
            let user = UUID()
            _ = try fixture.repository.createHabit(user: user, HabitDraft(name: "X"))
            let connection = fixture.workerConnection
            let row = try connection.queryOne("""
                SELECT current_user::text, coalesce(current_setting('request.jwt.claims', true), ''), current_setting('statement_timeout')
                """)
            #expect(try row.decode(String.self, at: 0) == "habit_worker")
            #expect(try row.decode(String.self, at: 1) == "")
            #expect(try row.decode(String.self, at: 2) == "0")
            // And the login role alone can read nothing.
            let denied = try #require(throws: PostgresError.self) { try connection.query("SELECT * FROM habit_templates") }
            #expect(denied.sqlState == .insufficientPrivilege)
        }
    }

    @Test func indexesServeTheQueries() throws {
        try HabitFixture.with { fixture throws in
            // Enough rows for the planner to prefer the indexes on its own.
            try fixture.admin.executeScript(unsafeSQL: """
                INSERT INTO habit_templates (id, user_id, name, activated_at)
                SELECT md5('t' || u || '-' || h)::uuid, md5('u' || u)::uuid, 'habit ' || h, '2026-01-01'
                FROM generate_series(1, 2000) u, generate_series(1, 5) h;
                INSERT INTO habit_completions (user_id, template_id, completed_date)
                SELECT md5('u' || u)::uuid, md5('t' || u || '-' || h)::uuid, '2026-01-01'::date + d
                FROM generate_series(1, 2000) u, generate_series(1, 5) h, generate_series(0, 9) d;
                ANALYZE habit_templates, habit_completions;
                """)
            let user = try fixture.admin.queryOne("SELECT md5('u1')::uuid").decode(UUID.self, at: 0)
            func plan(_ sql: String) throws -> String {
                try fixture.admin.query(Query(unsafeSQL: "EXPLAIN " + sql.replacingOccurrences(of: "$USER", with: "'\(user.uuidString)'")))
                    .map { try $0.decode(String.self, at: 0) }.joined(separator: "\n")
            }
            // (user_id, change_seq, id) since sql/0012, which dropped the plain (user_id) index.
            #expect(try plan("SELECT * FROM habit_templates WHERE user_id = $USER AND is_active").contains("habit_templates_user_change_seq_idx"))
            #expect(try plan("SELECT template_id FROM habit_completions WHERE user_id = $USER AND completed_date = '2026-01-05'").contains("habit_completions_user_date_idx"))
        }
    }
}
