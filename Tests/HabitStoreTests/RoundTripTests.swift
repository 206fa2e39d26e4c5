import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Every repository method made of one statement costs one round trip: BEGIN, the user's
/// role and claims, the statement and COMMIT travel in one pipeline (UserScope.query/run/
/// execute). Counted on the wire by a relay between the repository and the server.
@Suite struct RoundTripTests {
    /// The repositories on one connection through a counter, as the worker's login role.
    static func with(_ body: (HabitRepository, TaskRepository, RoundTripCounter, Connection) throws -> Void) throws {
        try TestDatabase.with { database in
            try RoundTripCounter.with { counter in
                var settings = counter.conninfo
                settings["user"] = "habit_worker"
                let connection = try Connection(try database.url(overriding: settings), applicationName: "habit-tests")
                // Zone names are read once per process; load them before counting.
                _ = try TimeZoneNames.shared.isValid("UTC", using: connection)
                // A connection's first request asks once whether the database is a Citus
                // coordinator (UserScope.isCitusCoordinator): asked before counting.
                #expect(try UserScope(connection: connection).isCitusCoordinator() == (CitusCluster.current != nil))
                try body(HabitRepository(connection: connection), TaskRepository(connection: connection), counter, connection)
            }
        }
    }

    @Test func habitMethodsOfOneStatementTakeOneRoundTrip() throws {
        try Self.with { habits, _, counter, _ in
            let user = UUID()
            var habit: Habit?
            let day = date("2026-03-02")
            let costs: [(String, Int)] = [
                ("habits.create", try counter.count { habit = try habits.createHabit(user: user, HabitDraft(name: "Walk", activatedAt: instant("2026-01-01T00:00:00Z"))) }),
                ("profile.set", try counter.count { _ = try habits.setTimeZone(user: user, timeZone: "Europe/Berlin") }),
                ("profile.get", try counter.count { _ = try habits.profile(user: user) }),
                ("habits.update", try counter.count { _ = try habits.updateHabit(user: user, id: habit!.id, HabitChanges(name: "Walk far")) }),
                ("habits.list", try counter.count { _ = try habits.listHabits(user: user) }),
                ("completions.set", try counter.count { _ = try habits.setCompletion(user: user, template: habit!.id, date: day, completed: true) }),
                ("completions.set with a zone", try counter.count {
                    _ = try habits.setCompletion(user: user, template: habit!.id, date: day, completed: false, timeZone: "Asia/Tokyo")
                }),
                ("day.get", try counter.count { _ = try habits.day(user: user, date: day) }),
                ("day.get with streaks", try counter.count { _ = try habits.day(user: user, date: day, includeStreaks: true) }),
                ("habits.stats", try counter.count { _ = try habits.stats(user: user, template: nil, date: day) }),
                ("habits.stats of one", try counter.count { _ = try habits.stats(user: user, template: habit!.id, date: nil) }),
                ("stats.calendar", try counter.count { _ = try habits.statsCalendar(user: user, template: habit!.id, from: day, to: day.adding(days: 365)) }),
                ("completed ids", try counter.count { _ = try habits.completedTemplateIDs(user: user, on: day) }),
                ("week.counts", try counter.count { _ = try habits.weekCounts(user: user, containing: day, weekStart: .monday) }),
                ("habits.deactivate", try counter.count { _ = try habits.deactivateHabit(user: user, id: habit!.id) }),
                ("habits.activate", try counter.count { _ = try habits.activateHabit(user: user, id: habit!.id) }),
                ("habits.delete", try counter.count { try habits.deleteHabit(user: user, id: habit!.id) }),
            ]
            for (method, cost) in costs { #expect(cost == 1, "\(method) took \(cost) round trips") }
            // A refusal is the statement's answer, not a server error: still one round trip.
            let kept = try habits.createHabit(user: user, HabitDraft(name: "Read", activatedAt: instant("2026-01-01T00:00:00Z")))
            var refused: Error?
            let refusal = counter.count {
                do { _ = try habits.setCompletion(user: user, template: kept.id, date: day.adding(days: 3650), completed: true) } catch { refused = error }
            }
            #expect(refusal == 1)
            guard case .futureDate? = refused as? StoreError else { Issue.record("expected futureDate, got \(String(describing: refused))"); return }
            // The toggle is one statement too (habit.toggle_day locks, reads and flips).
            let toggle = try counter.count { _ = try habits.toggleCompletion(user: user, template: kept.id, date: day) }
            #expect(toggle == 1)
        }
    }

    @Test func taskMethodsOfOneStatementTakeOneRoundTrip() throws {
        try Self.with { _, tasks, counter, _ in
            let user = UUID()
            let day = date("2026-03-02")
            var list: TaskList?
            var task: TaskItem?
            let costs: [(String, Int)] = [
                ("lists.create", try counter.count { list = try tasks.createList(user: user, name: "Errands") }),
                ("lists.update", try counter.count { _ = try tasks.renameList(user: user, id: list!.id, name: "Chores") }),
                ("lists.list", try counter.count { _ = try tasks.lists(user: user) }),
                ("tasks.create", try counter.count { task = try tasks.createTask(user: user, TaskDraft(title: "Milk", listID: list!.id, scheduledDate: day)) }),
                ("tasks.update", try counter.count {
                    _ = try tasks.updateTask(user: user, id: task!.id, TaskChanges(title: "Oat milk", scheduledDate: .some(day.adding(days: 1))))
                }),
                ("task", try counter.count { _ = try tasks.task(user: user, id: task!.id) }),
                ("tasks.today", try counter.count { _ = try tasks.today(user: user, date: day) }),
                ("tasks.today in a zone", try counter.count { _ = try tasks.today(user: user, timeZone: "Asia/Tokyo") }),
                ("tasks.list inbox", try counter.count { _ = try tasks.listTasks(user: user, .inbox) }),
                ("tasks.list upcoming", try counter.count { _ = try tasks.listTasks(user: user, .upcoming) }),
                ("tasks.list list", try counter.count { _ = try tasks.listTasks(user: user, .list(list!.id)) }),
                ("tasks.delete", try counter.count { try tasks.deleteTask(user: user, id: task!.id) }),
                ("lists.delete", try counter.count { try tasks.deleteList(user: user, id: list!.id) }),
            ]
            for (method, cost) in costs { #expect(cost == 1, "\(method) took \(cost) round trips") }
            // notFound is the statement's answer (no row), not a server error: one round trip.
            let missingDelete = counter.count { #expect(throws: StoreError.notFound) { try tasks.deleteTask(user: user, id: UUID()) } }
            let missingRead = counter.count { #expect(throws: StoreError.notFound) { try tasks.task(user: user, id: UUID()) } }
            #expect(missingDelete == 1 && missingRead == 1)
            // A state change locks the task, decides in Swift and writes (two statements, then
            // COMMIT); leading to the state it is in already skips the write.
            let other = try tasks.createTask(user: user, TaskDraft(title: "Call"))
            let cycle = try counter.count { _ = try tasks.cycleTask(user: user, id: other.id) }
            let same = try counter.count { _ = try tasks.setTaskState(user: user, id: other.id, state: .active) }
            #expect(cycle == 3 && same == 2)
        }
    }

    /// The counter counts what it should: statements sent one at a time cost one each.
    @Test func theCounterSeesEachWait() throws {
        try Self.with { _, _, counter, connection in
            let one = try counter.count { _ = try connection.query("SELECT 1") }
            let stepwise = try counter.count {
                try connection.withTransaction { connection in
                    _ = try connection.query("SELECT 1")
                    _ = try connection.query("SELECT 2")
                }
            }
            #expect(one == 1)
            #expect(stepwise == 3) // BEGIN with SELECT 1, SELECT 2, COMMIT
        }
    }
}
