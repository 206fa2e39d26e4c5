import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// A migrated test database with a task repository connected as the worker's login role
/// (habit_worker), plus a habit repository on the same connection for profile settings.
struct TaskFixture {
    let database: TestDatabase
    let repository: TaskRepository
    let habits: HabitRepository
    /// Superuser connection for arranging and inspecting rows behind the repository's back.
    let admin: Connection

    static func with(_ body: (TaskFixture) throws -> Void) throws {
        try TestDatabase.with { database in
            let connection = try database.connect(user: "habit_worker")
            let fixture = TaskFixture(
                database: database,
                repository: TaskRepository(connection: connection),
                habits: HabitRepository(connection: connection),
                admin: try database.connect()
            )
            try body(fixture)
        }
    }

    /// Today in `zone`, as PostgreSQL computes it.
    func today(in zone: String) throws -> CalendarDate {
        try admin.queryOne("SELECT habit.local_date(now(), \(zone))").decode(CalendarDate.self, at: 0)
    }

    func taskCount(user: UUID) throws -> Int {
        try admin.queryOne("SELECT count(*) FROM tasks WHERE user_id = \(user)").decode(Int.self, at: 0)
    }
}

@Suite struct TaskRepositoryTests {
    // MARK: - Create, update, delete

    @Test func createDefaultsAndPositions() throws {
        try TaskFixture.with { fixture throws in
            let repository = fixture.repository
            let user = UUID()
            let day = date("2026-03-10")
            let first = try repository.createTask(user: user, TaskDraft(title: "  Buy milk \n", notes: "  2 litres\n", scheduledDate: day))
            #expect(first.title == "Buy milk")
            #expect(first.notes == "  2 litres\n") // notes are kept as written
            #expect(first.state == .notStarted && first.completedAt == nil)
            #expect(first.scheduledDate == day && first.listID == nil)
            #expect(first.position == 1)
            #expect(first.createdAt == first.updatedAt)
            // Positions count per scheduled date; the inbox (no date) is its own sequence.
            let second = try repository.createTask(user: user, TaskDraft(title: "Call mum", scheduledDate: day))
            let inbox = try repository.createTask(user: user, TaskDraft(title: "Someday"))
            let placed = try repository.createTask(user: user, TaskDraft(title: "Placed", scheduledDate: day, position: 10))
            let after = try repository.createTask(user: user, TaskDraft(title: "After", scheduledDate: day))
            let otherDay = try repository.createTask(user: user, TaskDraft(title: "Other day", scheduledDate: day.adding(days: 1)))
            #expect(second.position == 2)
            #expect(inbox.position == 1 && inbox.scheduledDate == nil)
            #expect(placed.position == 10)
            #expect(after.position == 11)
            #expect(otherDay.position == 1)
            // Another user's positions are their own.
            #expect(try repository.createTask(user: UUID(), TaskDraft(title: "Elsewhere", scheduledDate: day)).position == 1)
        }
    }

    @Test func updateChangesAndClearsFields() throws {
        try TaskFixture.with { fixture throws in
            let repository = fixture.repository
            let user = UUID()
            let day = date("2026-03-10")
            let list = try repository.createList(user: user, name: "Errands")
            _ = try repository.createTask(user: user, TaskDraft(title: "Existing", scheduledDate: day))
            _ = try repository.createTask(user: user, TaskDraft(title: "Inbox one"))
            let task = try repository.createTask(user: user, TaskDraft(title: "Groceries", notes: "eggs"))
            #expect(task.position == 2)

            // Scheduling without a position: after the last task of the new date.
            let scheduled = try repository.updateTask(user: user, id: task.id, TaskChanges(
                title: "Groceries ", notes: .some("eggs, milk"), listID: .some(list.id), scheduledDate: .some(day)))
            #expect(scheduled.title == "Groceries" && scheduled.notes == "eggs, milk")
            #expect(scheduled.listID == list.id && scheduled.scheduledDate == day)
            #expect(scheduled.position == 2)
            #expect(scheduled.updatedAt > task.updatedAt && scheduled.createdAt == task.createdAt)
            #expect(scheduled.state == .notStarted && scheduled.completedAt == nil)

            // The same date again keeps the position; an explicit position wins.
            #expect(try repository.updateTask(user: user, id: task.id, TaskChanges(scheduledDate: .some(day))).position == 2)
            #expect(try repository.updateTask(user: user, id: task.id, TaskChanges(position: -5)).position == -5)

            // Absent fields are kept; explicit nil clears notes, list and date (back to the inbox, at its end).
            let kept = try repository.updateTask(user: user, id: task.id, TaskChanges(title: "Groceries!"))
            #expect(kept.notes == "eggs, milk" && kept.listID == list.id && kept.scheduledDate == day && kept.position == -5)
            let cleared = try repository.updateTask(user: user, id: task.id, TaskChanges(notes: .some(nil), listID: .some(nil), scheduledDate: .some(nil)))
            #expect(cleared.notes == nil && cleared.listID == nil && cleared.scheduledDate == nil)
            #expect(cleared.position == 2)
            #expect(cleared.title == "Groceries!")

            // An update that changes nothing leaves updated_at alone.
            let same = try repository.updateTask(user: user, id: task.id, TaskChanges())
            #expect(same == cleared)

            // A state change never touches the date or position.
            let moved = try repository.updateTask(user: user, id: task.id, TaskChanges(scheduledDate: .some(day), position: 7))
            let cycled = try repository.cycleTask(user: user, id: task.id)
            #expect(cycled.scheduledDate == day && cycled.position == 7 && cycled.title == moved.title)

            try repository.deleteTask(user: user, id: task.id)
            #expect(throws: StoreError.notFound) { try repository.deleteTask(user: user, id: task.id) }
            #expect(throws: StoreError.notFound) { try repository.updateTask(user: user, id: task.id, TaskChanges(title: "x")) }
            #expect(throws: StoreError.notFound) { try repository.task(user: user, id: task.id) }
            #expect(try fixture.taskCount(user: user) == 2)
        }
    }

    @Test func validationNamesTheField() throws {
        try TaskFixture.with { fixture throws in
            let repository = fixture.repository
            let user = UUID()
            let cases: [(TaskDraft, String)] = [
                (TaskDraft(title: "   "), "title"),
                (TaskDraft(title: String(repeating: "x", count: 501)), "title"),
                (TaskDraft(title: "tab\tinside"), "title"),
                (TaskDraft(title: "ok", notes: String(repeating: "n", count: 10_001)), "notes"),
                (TaskDraft(title: "ok", notes: "nul\u{0}"), "notes"),
                (TaskDraft(title: "ok", position: Int(Int32.max) + 1), "position"),
            ]
            for (draft, field) in cases {
                let error = try #require(throws: StoreError.self) { try repository.createTask(user: user, draft) }
                guard case .invalidInput(let reported, _, _) = error else { Issue.record("\(error)"); continue }
                #expect(reported == field)
            }
            // Exactly 500 characters (code points) and 10 000 characters of notes are fine.
            let long = try repository.createTask(user: user, TaskDraft(title: String(repeating: "é", count: 500),
                                                                        notes: String(repeating: "\n", count: 10_000)))
            #expect(long.title.unicodeScalars.count == 500)
            let task = try repository.createTask(user: user, TaskDraft(title: "ok"))
            #expect(throws: StoreError.invalidInput(field: "title", reason: .empty, message: "must not be empty")) {
                try repository.updateTask(user: user, id: task.id, TaskChanges(title: " "))
            }
            for name in ["", "  ", String(repeating: "l", count: 101)] {
                let error = try #require(throws: StoreError.self) { try repository.createList(user: user, name: name) }
                #expect(error == (name.count > 100 ? .invalidInput(field: "name", reason: .tooLong, message: "must be at most 100 characters")
                                                    : .invalidInput(field: "name", reason: .empty, message: "must not be empty")))
            }
            #expect(throws: StoreError.self) { try repository.today(user: user, timeZone: "Mars/Olympus") }
            #expect(throws: StoreError.self) { try repository.listTasks(user: user, .upcoming, timeZone: "Mars/Olympus") }

            // The database enforces the same rules on its own (an admin in psql).
            func violated(_ sql: Query) throws -> String? {
                let error = try #require(throws: PostgresError.self) { try fixture.admin.execute(sql) }
                return error.constraint
            }
            #expect(try violated("INSERT INTO tasks (user_id, title, position) VALUES (\(user), ' padded', 1)") == "tasks_title_check")
            #expect(try violated("INSERT INTO tasks (user_id, title, notes, position) VALUES (\(user), 'ok', repeat('n', 10001), 1)") == "tasks_notes_check")
            #expect(try violated("INSERT INTO task_lists (user_id, name) VALUES (\(user), '')") == "task_lists_name_check")
            #expect(try violated("UPDATE tasks SET state = 'done' WHERE id = \(task.id)") == "tasks_state_check")
            // completed_at goes with the completed state, both ways.
            #expect(try violated("UPDATE tasks SET state = 'completed' WHERE id = \(task.id)") == "tasks_completed_at_check")
            #expect(try violated("UPDATE tasks SET completed_at = now() WHERE id = \(task.id)") == "tasks_completed_at_check")
            _ = try repository.completeTask(user: user, id: task.id)
            #expect(try violated("UPDATE tasks SET state = 'active' WHERE id = \(task.id)") == "tasks_completed_at_check")
            #expect(try violated("UPDATE tasks SET completed_at = NULL WHERE id = \(task.id)") == "tasks_completed_at_check")
        }
    }

    // MARK: - State transitions

    @Test func completeSetsCompletedAtOnceAndIsIdempotent() throws {
        try TaskFixture.with { fixture throws in
            let repository = fixture.repository
            let user = UUID()
            let task = try repository.createTask(user: user, TaskDraft(title: "Write report", scheduledDate: date("2026-04-01")))
            let completed = try repository.completeTask(user: user, id: task.id)
            #expect(completed.state == .completed)
            let completedAt = try #require(completed.completedAt)
            #expect(completedAt == completed.updatedAt) // both the transaction's now()
            #expect(completed.updatedAt > task.updatedAt)
            #expect(completed.scheduledDate == task.scheduledDate && completed.position == task.position)

            // Completing again is no error and changes nothing: first completed_at, same updated_at.
            let again = try repository.completeTask(user: user, id: task.id)
            #expect(again == completed)
            #expect(try repository.task(user: user, id: task.id) == completed)

            // From active too.
            let other = try repository.createTask(user: user, TaskDraft(title: "Other"))
            #expect(try repository.setTaskState(user: user, id: other.id, state: .active).completedAt == nil)
            let fromActive = try repository.completeTask(user: user, id: other.id)
            #expect(fromActive.state == .completed && fromActive.completedAt != nil)
            #expect(throws: StoreError.notFound) { try repository.completeTask(user: user, id: UUID()) }
        }
    }

    @Test func uncompleteRules() throws {
        try TaskFixture.with { fixture throws in
            let repository = fixture.repository
            let user = UUID()
            let task = try repository.createTask(user: user, TaskDraft(title: "Undo me"))
            let completed = try repository.completeTask(user: user, id: task.id)
            let reopened = try repository.uncompleteTask(user: user, id: task.id)
            #expect(reopened.state == .notStarted && reopened.completedAt == nil)
            #expect(reopened.updatedAt > completed.updatedAt)
            // Not started: a no-op (a retried uncomplete is safe).
            #expect(try repository.uncompleteTask(user: user, id: task.id) == reopened)
            // Active: never completed, so refused, and left as it is.
            let active = try repository.setTaskState(user: user, id: task.id, state: .active)
            let error = try #require(throws: StoreError.self) { try repository.uncompleteTask(user: user, id: task.id) }
            guard case .invalidState = error else { Issue.record("expected invalidState, got \(error)"); return }
            #expect(try repository.task(user: user, id: task.id) == active)
            #expect(throws: StoreError.notFound) { try repository.uncompleteTask(user: user, id: UUID()) }
        }
    }

    @Test func cycleFollowsTheStateMachine() throws {
        try TaskFixture.with { fixture throws in
            let repository = fixture.repository
            let user = UUID()
            let day = date("2026-04-02")
            let task = try repository.createTask(user: user, TaskDraft(title: "Tap me", scheduledDate: day))
            let active = try repository.cycleTask(user: user, id: task.id)
            #expect(active.state == .active && active.completedAt == nil)
            #expect(active.updatedAt > task.updatedAt)
            let completed = try repository.cycleTask(user: user, id: task.id)
            #expect(completed.state == .completed)
            #expect(completed.completedAt == completed.updatedAt)
            let restarted = try repository.cycleTask(user: user, id: task.id)
            #expect(restarted.state == .notStarted && restarted.completedAt == nil)
            #expect(restarted.updatedAt > completed.updatedAt)
            for step in [active, completed, restarted] {
                #expect(step.scheduledDate == day && step.position == task.position && step.title == task.title)
            }
            // A second round sets a new completed_at (the first was cleared on leaving completed).
            _ = try repository.cycleTask(user: user, id: task.id)
            let completedAgain = try repository.cycleTask(user: user, id: task.id)
            let firstCompletion = try #require(completed.completedAt)
            let secondCompletion = try #require(completedAgain.completedAt)
            #expect(secondCompletion > firstCompletion)
            #expect(TaskState.allCases.map(\.next) == [.active, .completed, .notStarted])
            #expect(throws: StoreError.notFound) { try repository.cycleTask(user: user, id: UUID()) }
        }
    }

    @Test(arguments: TaskState.allCases)
    func setStateFromEveryStateToEveryState(from: TaskState) throws {
        try TaskFixture.with { fixture throws in
            let repository = fixture.repository
            let user = UUID()
            for to in TaskState.allCases {
                let task = try repository.createTask(user: user, TaskDraft(title: "\(from) to \(to)", scheduledDate: date("2026-04-03")))
                let start = try repository.setTaskState(user: user, id: task.id, state: from)
                #expect(start.state == from && (start.completedAt != nil) == (from == .completed))
                let end = try repository.setTaskState(user: user, id: task.id, state: to)
                #expect(end.state == to)
                #expect((end.completedAt != nil) == (to == .completed))
                #expect(end.scheduledDate == task.scheduledDate && end.position == task.position)
                if from == to {
                    #expect(end == start) // the same state is a no-op: same completed_at and updated_at
                } else {
                    #expect(end.updatedAt > start.updatedAt)
                }
            }
        }
    }

    // MARK: - Today

    @Test func todayOrdersByStateThenPositionAndCounts() throws {
        try TaskFixture.with { fixture throws in
            let repository = fixture.repository
            let user = UUID()
            let day = date("2026-05-05")
            func make(_ title: String, _ position: Int, _ state: TaskState, on date: CalendarDate? = day) throws -> TaskItem {
                let task = try repository.createTask(user: user, TaskDraft(title: title, scheduledDate: date, position: position))
                return try repository.setTaskState(user: user, id: task.id, state: state)
            }
            let doneFirst = try make("done 1", 1, .completed)
            let todo3 = try make("todo 3", 3, .notStarted)
            let active5 = try make("active 5", 5, .active)
            let todo2 = try make("todo 2", 2, .notStarted)
            let done4 = try make("done 4", 4, .completed)
            let active6 = try make("active 6", 6, .active)
            // Not on this day: yesterday's unfinished task is not rolled over, nor are others.
            let yesterday = try make("yesterday", 1, .active, on: day.adding(days: -1))
            _ = try make("tomorrow", 1, .notStarted, on: day.adding(days: 1))
            _ = try make("inbox", 1, .notStarted, on: nil)

            let view = try repository.today(user: user, date: day)
            #expect(view.date == day)
            #expect(view.tasks.map(\.id) == [active5, active6, todo2, todo3, doneFirst, done4].map(\.id))
            #expect(view.completedCount == 2 && view.totalCount == 6)

            // Completing a task keeps it listed, now at the bottom (by position among completed).
            _ = try repository.completeTask(user: user, id: todo2.id)
            let after = try repository.today(user: user, date: day)
            #expect(after.tasks.map(\.id) == [active5, active6, todo3, doneFirst, todo2, done4].map(\.id))
            #expect(after.completedCount == 3 && after.totalCount == 6)
            // Ties in position fall back to creation order.
            let tie = try make("tie 3", 3, .notStarted)
            #expect(try Array(repository.today(user: user, date: day).tasks.map(\.id).prefix(4)) == [active5, active6, todo3, tie].map(\.id))

            #expect(try repository.today(user: user, date: day.adding(days: -1)).tasks.map(\.id) == [yesterday.id])
            let empty = try repository.today(user: user, date: date("2020-01-01"))
            #expect(empty.date == date("2020-01-01") && empty.tasks.isEmpty && empty.completedCount == 0 && empty.totalCount == 0)
        }
    }

    /// "Today" is the date in the user's zone. Kiritimati (UTC+14) and Pago Pago (UTC−11)
    /// are always on different dates, so one of them is always past a midnight the other
    /// has not reached: the same instant is two different todays.
    @Test func todayIsTheUsersLocalDateAcrossMidnight() throws {
        try TaskFixture.with { fixture throws in
            let repository = fixture.repository
            let user = UUID()
            let east = "Pacific/Kiritimati", west = "Pacific/Pago_Pago"
            let eastToday = try fixture.today(in: east)
            let westToday = try fixture.today(in: west)
            #expect(eastToday > westToday)
            let eastTask = try repository.createTask(user: user, TaskDraft(title: "east", scheduledDate: eastToday))
            let westTask = try repository.createTask(user: user, TaskDraft(title: "west", scheduledDate: westToday))
            let completedWest = try repository.completeTask(user: user, id: westTask.id)

            // No profile: UTC.
            #expect(try repository.today(user: user).date == fixture.today(in: "UTC"))
            _ = try fixture.habits.setTimeZone(user: user, timeZone: east)
            let inEast = try repository.today(user: user)
            #expect(inEast.date == eastToday)
            #expect(inEast.tasks.map(\.id) == [eastTask.id]) // the west date is "yesterday" here: not carried over
            #expect(inEast.completedCount == 0 && inEast.totalCount == 1)
            // Where the day is not over yet, the completed task is still listed.
            _ = try fixture.habits.setTimeZone(user: user, timeZone: west)
            let inWest = try repository.today(user: user)
            #expect(inWest.date == westToday)
            #expect(inWest.tasks.items == [completedWest])
            #expect(inWest.completedCount == 1 && inWest.totalCount == 1)
            // A per-request zone overrides the profile; an explicit date overrides both.
            #expect(try repository.today(user: user, timeZone: east).tasks.map(\.id) == [eastTask.id])
            #expect(try repository.today(user: user, date: eastToday, timeZone: west).date == eastToday)
            // Upcoming starts after the user's today: the east task is upcoming in the west.
            #expect(try repository.listTasks(user: user, .upcoming).map(\.id) == [eastTask.id])
            #expect(try repository.listTasks(user: user, .upcoming, timeZone: east).isEmpty)
        }
    }

    // MARK: - Inbox, upcoming, lists

    @Test func inboxUpcomingAndListViews() throws {
        try TaskFixture.with { fixture throws in
            let repository = fixture.repository
            let user = UUID()
            let today = try fixture.today(in: "UTC")
            let work = try repository.createList(user: user, name: "Work")
            let home = try repository.createList(user: user, name: "Home")
            func make(_ title: String, _ date: CalendarDate?, _ position: Int? = nil, list: TaskList? = nil) throws -> TaskItem {
                try repository.createTask(user: user, TaskDraft(title: title, listID: list?.id, scheduledDate: date, position: position))
            }
            let inboxB = try make("inbox b", nil, 2, list: work)
            let inboxA = try make("inbox a", nil, 1)
            let past = try make("past", today.adding(days: -3), list: work)
            let now = try make("today", today, list: work)
            let nextWeek = try make("next week", today.adding(days: 7), 1, list: work)
            let tomorrow2 = try make("tomorrow 2", today.adding(days: 1), 2)
            let tomorrow1 = try make("tomorrow 1", today.adding(days: 1), 1, list: home)
            _ = try repository.completeTask(user: user, id: inboxB.id)

            #expect(try repository.listTasks(user: user, .inbox).map(\.id) == [inboxA.id, inboxB.id])
            #expect(try repository.listTasks(user: user, .upcoming).map(\.id) == [tomorrow1.id, tomorrow2.id, nextWeek.id])
            #expect(try repository.listTasks(user: user, .list(work.id)).map(\.id) == [inboxB.id, past.id, now.id, nextWeek.id])
            #expect(try repository.listTasks(user: user, .list(home.id)).map(\.id) == [tomorrow1.id])
            let empty = try repository.createList(user: user, name: "Empty")
            #expect(try repository.listTasks(user: user, .list(empty.id)).isEmpty)
            #expect(throws: StoreError.notFound) { try repository.listTasks(user: user, .list(UUID())) }

            #expect(try repository.lists(user: user).map(\.name) == ["Work", "Home", "Empty"])
            let renamed = try repository.renameList(user: user, id: home.id, name: "  House ")
            #expect(renamed.name == "House" && renamed.createdAt == home.createdAt && renamed.updatedAt > home.updatedAt)
            #expect(throws: StoreError.notFound) { try repository.renameList(user: user, id: UUID(), name: "x") }
            // A list that does not exist cannot be used.
            #expect(throws: StoreError.notFound) { try repository.createTask(user: user, TaskDraft(title: "x", listID: UUID())) }
            #expect(throws: StoreError.notFound) { try repository.updateTask(user: user, id: inboxA.id, TaskChanges(listID: .some(UUID()))) }
        }
    }

    @Test func deletingAListKeepsItsTasks() throws {
        try TaskFixture.with { fixture throws in
            let repository = fixture.repository
            let user = UUID()
            let list = try repository.createList(user: user, name: "Trip")
            let dated = try repository.createTask(user: user, TaskDraft(title: "Pack", listID: list.id, scheduledDate: date("2026-07-01")))
            let done = try repository.completeTask(user: user, id: try repository.createTask(user: user, TaskDraft(title: "Book", listID: list.id)).id)
            try repository.deleteList(user: user, id: list.id)
            #expect(throws: StoreError.notFound) { try repository.deleteList(user: user, id: list.id) }
            #expect(try repository.lists(user: user).isEmpty)
            let keptDated = try repository.task(user: user, id: dated.id)
            #expect(keptDated.listID == nil && keptDated.scheduledDate == dated.scheduledDate && keptDated.position == dated.position)
            let keptDone = try repository.task(user: user, id: done.id)
            #expect(keptDone.listID == nil && keptDone.state == .completed && keptDone.completedAt == done.completedAt)
            #expect(try repository.listTasks(user: user, .inbox).map(\.id) == [done.id])
            #expect(throws: StoreError.notFound) { try repository.listTasks(user: user, .list(list.id)) }
        }
    }

    // MARK: - Isolation

    /// Two users; B knows A's task and list ids and still reaches nothing, through every method.
    @Test func userBCannotReachUserAsTasksOrLists() throws {
        try TaskFixture.with { fixture throws in
            let repository = fixture.repository
            let alice = UUID(), bob = UUID()
            let day = try fixture.today(in: "UTC")
            let alicesList = try repository.createList(user: alice, name: "Private")
            let alicesTask = try repository.createTask(user: alice, TaskDraft(title: "Secret", notes: "n", listID: alicesList.id, scheduledDate: day))
            let alicesInbox = try repository.createTask(user: alice, TaskDraft(title: "Inbox secret"))
            let alicesUpcoming = try repository.createTask(user: alice, TaskDraft(title: "Later", scheduledDate: day.adding(days: 2)))
            let bobsTask = try repository.createTask(user: bob, TaskDraft(title: "Mine", scheduledDate: day))

            // Reads show only B's own rows.
            #expect(try repository.today(user: bob).tasks.map(\.id) == [bobsTask.id])
            #expect(try repository.today(user: bob, date: day).totalCount == 1)
            #expect(try repository.listTasks(user: bob, .inbox).isEmpty)
            #expect(try repository.listTasks(user: bob, .upcoming).isEmpty)
            #expect(try repository.lists(user: bob).isEmpty)
            #expect(throws: StoreError.notFound) { try repository.listTasks(user: bob, .list(alicesList.id)) }

            // Every write with A's ids is notFound.
            for id in [alicesTask.id, alicesInbox.id, alicesUpcoming.id] {
                #expect(throws: StoreError.notFound) { try repository.task(user: bob, id: id) }
                #expect(throws: StoreError.notFound) { try repository.updateTask(user: bob, id: id, TaskChanges(title: "Hacked")) }
                #expect(throws: StoreError.notFound) { try repository.updateTask(user: bob, id: id, TaskChanges(notes: .some(nil))) }
                #expect(throws: StoreError.notFound) { try repository.completeTask(user: bob, id: id) }
                #expect(throws: StoreError.notFound) { try repository.uncompleteTask(user: bob, id: id) }
                #expect(throws: StoreError.notFound) { try repository.cycleTask(user: bob, id: id) }
                for state in TaskState.allCases {
                    #expect(throws: StoreError.notFound) { try repository.setTaskState(user: bob, id: id, state: state) }
                }
                #expect(throws: StoreError.notFound) { try repository.deleteTask(user: bob, id: id) }
            }
            #expect(throws: StoreError.notFound) { try repository.renameList(user: bob, id: alicesList.id, name: "Mine now") }
            #expect(throws: StoreError.notFound) { try repository.deleteList(user: bob, id: alicesList.id) }
            // B cannot file tasks into A's list (the composite foreign key refuses it).
            #expect(throws: StoreError.notFound) { try repository.createTask(user: bob, TaskDraft(title: "Sneak", listID: alicesList.id)) }
            #expect(throws: StoreError.notFound) { try repository.updateTask(user: bob, id: bobsTask.id, TaskChanges(listID: .some(alicesList.id))) }
            // B's positions ignore A's tasks.
            #expect(try repository.createTask(user: bob, TaskDraft(title: "Second", scheduledDate: day)).position == 2)

            // A's data is exactly as she left it.
            #expect(try repository.task(user: alice, id: alicesTask.id) == alicesTask)
            #expect(try repository.task(user: alice, id: alicesInbox.id) == alicesInbox)
            #expect(try repository.task(user: alice, id: alicesUpcoming.id) == alicesUpcoming)
            #expect(try repository.lists(user: alice).map(\.name) == ["Private"])
            #expect(try repository.listTasks(user: alice, .list(alicesList.id)).map(\.id) == [alicesTask.id])
            #expect(try repository.today(user: alice, date: day).tasks.map(\.id) == [alicesTask.id])
            #expect(try fixture.taskCount(user: alice) == 3)
        }
    }

    /// The second wall: straight SQL under B's claims, bypassing the repository.
    @Test func rowLevelSecurityStopsRawSQL() throws {
        try TaskFixture.with { fixture throws in
            let alice = UUID(), bob = UUID()
            let list = try fixture.repository.createList(user: alice, name: "A")
            let task = try fixture.repository.createTask(user: alice, TaskDraft(title: "A's", listID: list.id))
            let scope = UserScope(connection: try fixture.database.connect(user: "habit_worker"))
            try scope.transaction(as: bob) { connection throws in
                #expect(try connection.queryOne("SELECT count(*) FROM tasks").decode(Int.self, at: 0) == 0)
                #expect(try connection.queryOne("SELECT count(*) FROM task_lists").decode(Int.self, at: 0) == 0)
                #expect(try connection.execute("UPDATE tasks SET title = 'x' WHERE id = \(task.id)") == 0)
                #expect(try connection.execute("DELETE FROM task_lists WHERE id = \(list.id)") == 0)
            }
            // Writing A's user_id is refused by the policy.
            let policy = try #require(throws: PostgresError.self) {
                try scope.transaction(as: bob) { connection throws in
                    try connection.execute("INSERT INTO tasks (user_id, title, position) VALUES (\(alice), 'forged', 1)")
                }
            }
            #expect(policy.sqlState == .insufficientPrivilege)
            // Even the table owner cannot put B's task in A's list.
            let owner = try #require(throws: PostgresError.self) {
                try fixture.admin.execute("INSERT INTO tasks (user_id, title, position, list_id) VALUES (\(bob), 'x', 1, \(list.id))")
            }
            #expect(owner.sqlState == .foreignKeyViolation && owner.constraint == "tasks_list_fkey")
            // anon and habit_batch (weekly counts never read tasks) see nothing; admin reads but does not write.
            for role in ["anon", "habit_batch"] {
                let denied = try #require(throws: PostgresError.self) {
                    try fixture.admin.withTransaction(prelude: [Query(unsafeSQL: "SET LOCAL ROLE \(role)")]) { connection throws in
                        try connection.query("SELECT * FROM tasks")
                    }
                }
                #expect(denied.sqlState == .insufficientPrivilege, "\(role)")
            }
            for role in ["habit_admin"] {
                try fixture.admin.withTransaction(prelude: [Query(unsafeSQL: "SET LOCAL ROLE \(role)")]) { connection throws in
                    #expect(try connection.queryOne("SELECT count(*) FROM tasks").decode(Int.self, at: 0) == 1)
                    #expect(try connection.queryOne("SELECT count(*) FROM task_lists").decode(Int.self, at: 0) == 1)
                }
                let denied = try #require(throws: PostgresError.self) {
                    try fixture.admin.withTransaction(prelude: [Query(unsafeSQL: "SET LOCAL ROLE \(role)")]) { connection throws in
                        try connection.execute("UPDATE tasks SET state = 'active' WHERE id = \(task.id)")
                    }
                }
                #expect(denied.sqlState == .insufficientPrivilege)
            }
        }
    }

    // MARK: - Concurrency

    /// Concurrent cycles of one task each advance it one step: the end state and the states
    /// returned are those of `count` sequential cycles.
    @Test(arguments: [20, 21])
    func concurrentCyclesAreNeverLost(count: Int) throws {
        try TaskFixture.with { fixture throws in
            let user = UUID()
            let task = try fixture.repository.createTask(user: user, TaskDraft(title: "Busy", scheduledDate: date("2026-06-06")))
            let database = fixture.database
            let results = LockedBox<[TaskState]>([])
            let errors = runConcurrently(count) { _ in
                let repository = TaskRepository(connection: try database.connect(user: "habit_worker"))
                let state = try repository.cycleTask(user: user, id: task.id).state
                results.withValue { $0.append(state) }
            }
            #expect(errors.isEmpty, "\(errors)")

            var sequential: [TaskState] = []
            var state = TaskState.notStarted
            for _ in 0..<count {
                state = state.next
                sequential.append(state)
            }
            let final = try fixture.repository.task(user: user, id: task.id)
            #expect(final.state == state)
            #expect((final.completedAt != nil) == (state == .completed))
            #expect(final.scheduledDate == task.scheduledDate && final.position == task.position)
            let returned = results.withValue { $0 }
            #expect(returned.sorted { $0.rawValue < $1.rawValue } == sequential.sorted { $0.rawValue < $1.rawValue })
        }
    }

    // MARK: - Database rules

    @Test func updatedAtIsMaintainedByTheDatabase() throws {
        try TaskFixture.with { fixture throws in
            let user = UUID()
            let list = try fixture.repository.createList(user: user, name: "L")
            let task = try fixture.repository.createTask(user: user, TaskDraft(title: "Tea"))
            try fixture.admin.execute("UPDATE tasks SET title = 'Green tea' WHERE id = \(task.id)")
            try fixture.admin.execute("UPDATE task_lists SET name = 'M' WHERE id = \(list.id)")
            let row = try fixture.admin.queryOne("SELECT updated_at, created_at FROM tasks WHERE id = \(task.id)")
            #expect(try row.decode(PostgresTimestamp.self, at: 0) > task.updatedAt)
            #expect(try row.decode(PostgresTimestamp.self, at: 1) == task.createdAt)
            let listRow = try fixture.admin.queryOne("SELECT updated_at FROM task_lists WHERE id = \(list.id)")
            #expect(try listRow.decode(PostgresTimestamp.self, at: 0) > list.updatedAt)
        }
    }

    @Test func indexesServeTheQueries() throws {
        try TaskFixture.with { fixture throws in
            // Enough rows for the planner to prefer the indexes on its own.
            try fixture.admin.executeScript(unsafeSQL: """
                INSERT INTO task_lists (id, user_id, name)
                SELECT md5('l' || u)::uuid, md5('u' || u)::uuid, 'list ' || u FROM generate_series(1, 2000) u;
                INSERT INTO tasks (user_id, title, list_id, scheduled_date, position)
                SELECT md5('u' || u)::uuid, 'task ' || t, CASE WHEN t % 2 = 0 THEN md5('l' || u)::uuid END,
                       CASE WHEN t % 5 = 0 THEN NULL ELSE '2026-01-01'::date + t END, t
                FROM generate_series(1, 2000) u, generate_series(1, 20) t;
                ANALYZE tasks, task_lists;
                """)
            let user = try fixture.admin.queryOne("SELECT md5('u1')::uuid").decode(UUID.self, at: 0)
            let list = try fixture.admin.queryOne("SELECT md5('l1')::uuid").decode(UUID.self, at: 0)
            func plan(_ sql: String) throws -> String {
                let text = sql.replacingOccurrences(of: "$USER", with: "'\(user.uuidString)'")
                    .replacingOccurrences(of: "$LIST", with: "'\(list.uuidString)'")
                return try fixture.admin.query(Query(unsafeSQL: "EXPLAIN " + text))
                    .map { try $0.decode(String.self, at: 0) }.joined(separator: "\n")
            }
            let byDate = "tasks_user_date_position_idx"
            #expect(try plan("SELECT * FROM tasks WHERE user_id = $USER AND scheduled_date = '2026-01-05'").contains(byDate))
            #expect(try plan("SELECT * FROM tasks WHERE user_id = $USER AND scheduled_date IS NULL ORDER BY position").contains(byDate))
            #expect(try plan("SELECT * FROM tasks WHERE user_id = $USER AND scheduled_date > '2026-01-15' ORDER BY scheduled_date, position").contains(byDate))
            #expect(try plan("SELECT * FROM tasks WHERE user_id = $USER AND list_id = $LIST").contains("tasks_list_id_idx"))
            #expect(try plan("SELECT * FROM task_lists WHERE user_id = $USER ORDER BY created_at").contains("task_lists_user_id_idx"))

            // Under RLS (as the user), "today" computed in SQL reaches the index only through a
            // materialized CTE; inlined, the non-leakproof coalesce(…) waits behind the policy.
            let scope = UserScope(connection: try fixture.database.connect(user: "habit_worker"))
            func userPlan(materialized: Bool) throws -> String {
                try scope.transaction(as: user) { connection in
                    try connection.query("""
                        EXPLAIN WITH day AS \(unsafeSQL: materialized ? "MATERIALIZED" : "") (
                            SELECT coalesce(\(CalendarDate?.none), habit.local_date(now(), habit.user_time_zone(\(user), \(String?.none)))) AS date
                        )
                        SELECT t.* FROM day LEFT JOIN LATERAL (
                            SELECT * FROM public.tasks WHERE user_id = \(user) AND scheduled_date = day.date
                        ) t ON true
                        """).map { try $0.decode(String.self, at: 0) }.joined(separator: "\n")
                }
            }
            let materialized = try userPlan(materialized: true)
            #expect(materialized.contains("Index Cond: ((user_id = ") && materialized.contains("AND (scheduled_date = day.date))"), "\(materialized)")
            // The inlined form filters every task of the user instead (what the CTE avoids).
            #expect(try userPlan(materialized: false).contains("Filter: (scheduled_date = COALESCE("))
        }
    }
}
