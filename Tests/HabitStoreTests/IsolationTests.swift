import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

@Suite struct IsolationTests {
    /// Two users with the same habit names; B knows A's ids and still reaches nothing.
    @Test func userBCannotReachUserAsHabits() throws {
        try HabitFixture.with { fixture throws in
            let repository = fixture.repository
            let alice = UUID(), bob = UUID()
            let alicesRun = try repository.createHabit(user: alice, HabitDraft(name: "Run", activatedAt: instant("2026-01-01T00:00:00Z")))
            let bobsRun = try repository.createHabit(user: bob, HabitDraft(name: "Run", activatedAt: instant("2026-01-01T00:00:00Z")))
            let day = date("2026-02-02")
            _ = try repository.setCompletion(user: alice, template: alicesRun.id, date: day, completed: true)

            #expect(try repository.listHabits(user: alice, includeInactive: true).map(\.id) == [alicesRun.id])
            #expect(try repository.listHabits(user: bob, includeInactive: true).map(\.id) == [bobsRun.id])
            #expect(try repository.day(user: bob, date: day).completed.isEmpty)
            #expect(try repository.day(user: bob, date: day).habits.map(\.id) == [bobsRun.id])
            #expect(try repository.completedTemplateIDs(user: bob, on: day).isEmpty)
            #expect(try repository.weekCounts(user: bob, containing: day, weekStart: .monday).allSatisfy { $0.completed == 0 && $0.active == 1 })

            let id = alicesRun.id
            #expect(throws: StoreError.notFound) { try repository.updateHabit(user: bob, id: id, HabitChanges(name: "Hacked")) }
            #expect(throws: StoreError.notFound) { try repository.deactivateHabit(user: bob, id: id) }
            #expect(throws: StoreError.notFound) { try repository.activateHabit(user: bob, id: id) }
            #expect(throws: StoreError.notFound) { try repository.deleteHabit(user: bob, id: id) }
            #expect(throws: StoreError.notFound) { try repository.setCompletion(user: bob, template: id, date: day, completed: true) }
            #expect(throws: StoreError.notFound) { try repository.setCompletion(user: bob, template: id, date: day, completed: false) }
            #expect(throws: StoreError.notFound) { try repository.toggleCompletion(user: bob, template: id, date: day) }

            // Alice's data is exactly as she left it.
            let after = try repository.listHabits(user: alice, includeInactive: true)
            #expect(after.items == [alicesRun])
            #expect(try repository.completedTemplateIDs(user: alice, on: day) == [alicesRun.id])
        }
    }

    /// The second wall: straight SQL under B's claims, bypassing the repository.
    @Test func rowLevelSecurityStopsRawSQL() throws {
        try HabitFixture.with { fixture throws in
            let alice = UUID(), bob = UUID()
            let habit = try fixture.repository.createHabit(user: alice, HabitDraft(name: "Secret", activatedAt: instant("2026-01-01T00:00:00Z")))
            _ = try fixture.repository.setCompletion(user: alice, template: habit.id, date: date("2026-02-02"), completed: true)
            _ = try fixture.repository.setTimeZone(user: alice, timeZone: "Europe/Paris")
            let scope = UserScope(connection: try fixture.database.connect(user: "habit_worker"))

            try scope.transaction(as: bob) { connection throws in
                #expect(try connection.queryOne("SELECT count(*) FROM habit_templates").decode(Int.self, at: 0) == 0)
                #expect(try connection.queryOne("SELECT count(*) FROM habit_completions").decode(Int.self, at: 0) == 0)
                #expect(try connection.queryOne("SELECT count(*) FROM profiles").decode(Int.self, at: 0) == 0)
                #expect(try connection.execute("UPDATE habit_templates SET name = 'x' WHERE id = \(habit.id)") == 0)
                #expect(try connection.execute("DELETE FROM habit_completions WHERE template_id = \(habit.id)") == 0)
                #expect(try connection.queryOne("SELECT habit.user_time_zone(\(alice), NULL)").decode(String.self, at: 0) == "UTC")
            }
            // Referencing A's template as B: the composite foreign key refuses it…
            let foreignKey = try #require(throws: StoreError.self) {
                try scope.transaction(as: bob) { connection throws in
                    try connection.execute("INSERT INTO habit_completions (user_id, template_id, completed_date) VALUES (\(bob), \(habit.id), '2026-02-03')")
                }
            }
            #expect(foreignKey == .notFound) // 23503, mapped
            // …and writing A's user_id is refused by the policy.
            let policy = try #require(throws: PostgresError.self) {
                try scope.transaction(as: bob) { connection throws in
                    try connection.execute("INSERT INTO habit_completions (user_id, template_id, completed_date) VALUES (\(alice), \(habit.id), '2026-02-03')")
                }
            }
            #expect(policy.sqlState == .insufficientPrivilege)
            // The anon role sees nothing at all.
            #expect(throws: PostgresError.self) {
                try fixture.admin.withTransaction(prelude: ["SET LOCAL ROLE anon"]) { connection throws in
                    try connection.query("SELECT * FROM habit_templates")
                }
            }
            // Even the table owner cannot attach a completion to another user's habit.
            let owner = try #require(throws: PostgresError.self) {
                try fixture.admin.execute("INSERT INTO habit_completions (user_id, template_id, completed_date) VALUES (\(bob), \(habit.id), '2026-02-04')")
            }
            #expect(owner.sqlState == .foreignKeyViolation)
            #expect(owner.withFieldsCitusDrops.constraint == "habit_completions_template_fkey")
        }
    }

    @Test func batchAndAdminRolesReadButDoNotWrite() throws {
        try HabitFixture.with { fixture throws in
            let alice = UUID()
            let habit = try fixture.repository.createHabit(user: alice, HabitDraft(name: "Read"))
            for role in ["habit_batch", "habit_admin"] {
                try fixture.admin.withTransaction(prelude: [Query(unsafeSQL: "SET LOCAL ROLE \(role)")]) { connection throws in
                    #expect(try connection.queryOne("SELECT count(*) FROM habit_templates").decode(Int.self, at: 0) == 1)
                }
                let denied = try #require(throws: PostgresError.self) {
                    try fixture.admin.withTransaction(prelude: [Query(unsafeSQL: "SET LOCAL ROLE \(role)")]) { connection throws in
                        try connection.execute("DELETE FROM habit_templates WHERE id = \(habit.id)")
                    }
                }
                #expect(denied.sqlState == .insufficientPrivilege)
            }
        }
    }

    /// 50 concurrent set/toggle calls on one (user, template, date): no error, 0 or 1 row.
    @Test func concurrentSetAndToggleNeverDuplicateOrFail() throws {
        try HabitFixture.with { fixture throws in
            let user = UUID()
            let habit = try fixture.repository.createHabit(user: user, HabitDraft(name: "Busy", activatedAt: instant("2026-01-01T00:00:00Z")))
            let database = fixture.database
            let day = date("2026-05-05")
            let errors = runConcurrently(50) { index in
                let repository = HabitRepository(connection: try database.connect(user: "habit_worker"))
                switch index % 3 {
                case 0: _ = try repository.toggleCompletion(user: user, template: habit.id, date: day)
                case 1: _ = try repository.setCompletion(user: user, template: habit.id, date: day, completed: true)
                default: _ = try repository.setCompletion(user: user, template: habit.id, date: day, completed: false)
                }
            }
            #expect(errors.isEmpty, "\(errors)")
            #expect(try fixture.completionCount(user: user) <= 1)
        }
    }

    /// Concurrent toggles each flip once: an odd number leaves the habit completed.
    @Test(arguments: [20, 21])
    func concurrentTogglesAreNeverLost(count: Int) throws {
        try HabitFixture.with { fixture throws in
            let user = UUID()
            let habit = try fixture.repository.createHabit(user: user, HabitDraft(name: "Flip", activatedAt: instant("2026-01-01T00:00:00Z")))
            let database = fixture.database
            let results = LockedBox<[Bool]>([])
            let errors = runConcurrently(count) { _ in
                let repository = HabitRepository(connection: try database.connect(user: "habit_worker"))
                let state = try repository.toggleCompletion(user: user, template: habit.id, date: date("2026-05-05"))
                results.withValue { $0.append(state) }
            }
            #expect(errors.isEmpty, "\(errors)")
            #expect(try fixture.completionCount(user: user) == count % 2)
            let states = results.withValue { $0 }
            #expect(states.filter { $0 }.count == (count + 1) / 2)
        }
    }
}
