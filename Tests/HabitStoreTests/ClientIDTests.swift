import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Creates with a client-supplied id (issue 15, finding 1; `habit.create_habit`, `create_list`,
/// `create_task` in sql/0009): the same id and fields again return the row the first attempt
/// made; other fields are `idConflict` and change nothing. Ids are unique per user (primary keys
/// `(id, user_id)`, sql/migrations/0027): another user's id makes a row of one's own.
@Suite struct ClientIDTests {
    @Test("habits.create with an id twice: one habit, the same row, its sort_order kept")
    func habitRetryReturnsTheRow() throws {
        try HabitFixture.with { fixture in
            let user = UUID(), id = UUID()
            let draft = HabitDraft(id: id, name: "  Walk ", icon: "figure.walk", color: "#a0b0c0")
            let first = try fixture.repository.createHabit(user: user, draft)
            #expect(first.id == id)
            // Another habit in between: a retry that computed its default again would get 3.
            _ = try fixture.repository.createHabit(user: user, HabitDraft(name: "Read"))
            let again = try fixture.repository.createHabit(user: user, draft)
            #expect(again == first)
            #expect(again.sortOrder == 1)
            #expect(try fixture.admin.queryOne("SELECT count(*) FROM habit_templates WHERE user_id = \(user)").decode(Int.self, at: 0) == 2)
            // The row as it is now: deactivated since, the retry still answers it.
            let deactivated = try fixture.repository.deactivateHabit(user: user, id: id)
            #expect(try fixture.repository.createHabit(user: user, draft) == deactivated)
        }
    }

    @Test("habits.create with an id and other fields: idConflict, the habit unchanged")
    func habitOtherFieldsConflict() throws {
        try HabitFixture.with { fixture in
            let user = UUID(), id = UUID()
            let stored = try fixture.repository.createHabit(user: user, HabitDraft(id: id, name: "Walk", icon: "figure.walk",
                                                                                    activatedAt: instant("2026-01-01T00:00:00Z"), sortOrder: 5))
            let others: [HabitDraft] = [
                HabitDraft(id: id, name: "Run", icon: "figure.walk"),
                HabitDraft(id: id, name: "Walk"),                                  // icon absent = no icon
                HabitDraft(id: id, name: "Walk", icon: "figure.walk", color: "#000000"),
                HabitDraft(id: id, name: "Walk", icon: "figure.walk", activatedAt: instant("2026-01-02T00:00:00Z")),
                HabitDraft(id: id, name: "Walk", icon: "figure.walk", sortOrder: 6),
            ]
            for draft in others {
                #expect(throws: StoreError.idConflict) { try fixture.repository.createHabit(user: user, draft) }
            }
            // Computed defaults absent: not compared.
            #expect(try fixture.repository.createHabit(user: user, HabitDraft(id: id, name: "Walk", icon: "figure.walk")) == stored)
            #expect(try fixture.repository.listHabits(user: user).items == [stored])
        }
    }

    @Test("an id of another user's row: a row of one's own with that id, the other user's row untouched and unseen")
    func otherUsersID() throws {
        try HabitFixture.with { fixture in
            let owner = UUID(), other = UUID()
            let tasks = TaskRepository(connection: fixture.workerConnection)
            let habit = try fixture.repository.createHabit(user: owner, HabitDraft(name: "Private"))
            let list = try tasks.createList(user: owner, name: "Private")
            let task = try tasks.createTask(user: owner, TaskDraft(title: "Private"))
            func snapshot(_ user: UUID) throws -> [String] {
                try fixture.admin.query("""
                    SELECT row_to_json(h)::text FROM habit_templates h WHERE id = \(habit.id) AND user_id = \(user)
                    UNION ALL SELECT row_to_json(l)::text FROM task_lists l WHERE id = \(list.id) AND user_id = \(user)
                    UNION ALL SELECT row_to_json(t)::text FROM tasks t WHERE id = \(task.id) AND user_id = \(user)
                    """).map { try $0.decode(String.self, at: 0) }
            }
            let before = try snapshot(owner)
            // The same fields as the owner's rows: the other user's own new rows, never the owner's.
            let habitOfOther = try fixture.repository.createHabit(user: other, HabitDraft(id: habit.id, name: "Private"))
            let listOfOther = try tasks.createList(user: other, name: "Private", id: list.id)
            let taskOfOther = try tasks.createTask(user: other, TaskDraft(id: task.id, title: "Private"))
            #expect(habitOfOther.id == habit.id && habitOfOther.createdAt != habit.createdAt)
            #expect(listOfOther.id == list.id && taskOfOther.id == task.id)
            #expect(try snapshot(owner) == before)
            #expect(try snapshot(other).count == 3)
            // Each sees only their own row under the shared id.
            #expect(try fixture.repository.listHabits(user: owner).map(\.createdAt) == [habit.createdAt])
            #expect(try fixture.repository.listHabits(user: other).map(\.createdAt) == [habitOfOther.createdAt])
            // A plain INSERT (as a Supabase client would send it) with a third user's copy of the
            // id is that user's row too; with the owner's user_id, row-level security refuses it.
            let third = UUID()
            #expect(try UserScope(connection: fixture.workerConnection).execute(as: third, """
                INSERT INTO public.habit_templates (id, user_id, name) VALUES (\(habit.id), \(third), 'Mine')
                """) == 1)
            do {
                _ = try UserScope(connection: fixture.workerConnection).execute(as: third, """
                    INSERT INTO public.habit_templates (id, user_id, name) VALUES (\(UUID()), \(owner), 'Theirs')
                    """)
                Issue.record("an insert naming another user succeeded")
            } catch let error as PostgresError {
                #expect(error.sqlState == .insufficientPrivilege, "\(error)")
            }
            #expect(try snapshot(owner) == before)
        }
    }

    @Test("lists.create and tasks.create with an id: a retry returns the row; other fields conflict")
    func listsAndTasks() throws {
        try HabitFixture.with { fixture in
            let user = UUID()
            let tasks = TaskRepository(connection: fixture.workerConnection)
            let listID = UUID(), taskID = UUID()
            let list = try tasks.createList(user: user, name: "Errands", id: listID)
            #expect(list.id == listID)
            #expect(try tasks.createList(user: user, name: "Errands", id: listID) == list)
            #expect(throws: StoreError.idConflict) { try tasks.createList(user: user, name: "Chores", id: listID) }

            let day = date("2026-05-04")
            let draft = TaskDraft(id: taskID, title: "Milk", notes: "oat", listID: listID, scheduledDate: day)
            let task = try tasks.createTask(user: user, draft)
            #expect(task.id == taskID && task.position == 1)
            _ = try tasks.createTask(user: user, TaskDraft(title: "Bread", scheduledDate: day))
            #expect(try tasks.createTask(user: user, draft) == task)
            // Completed since: the retry answers the task as it is now.
            let completed = try tasks.completeTask(user: user, id: taskID)
            #expect(try tasks.createTask(user: user, draft) == completed)
            let others: [TaskDraft] = [
                TaskDraft(id: taskID, title: "Milk!", notes: "oat", listID: listID, scheduledDate: day),
                TaskDraft(id: taskID, title: "Milk", listID: listID, scheduledDate: day),
                TaskDraft(id: taskID, title: "Milk", notes: "oat", scheduledDate: day),
                TaskDraft(id: taskID, title: "Milk", notes: "oat", listID: listID),
                TaskDraft(id: taskID, title: "Milk", notes: "oat", listID: listID, scheduledDate: day, position: 2),
            ]
            for other in others {
                #expect(throws: StoreError.idConflict) { try tasks.createTask(user: user, other) }
            }
            #expect(try tasks.task(user: user, id: taskID) == completed)
            #expect(try fixture.admin.queryOne("SELECT count(*) FROM tasks WHERE user_id = \(user)").decode(Int.self, at: 0) == 2)
        }
    }

    @Test("a retry at the row limit answers the row (nothing is inserted, nothing counted)")
    func retryAtTheRowLimit() throws {
        try HabitFixture.with { fixture in
            let user = UUID(), id = UUID()
            try fixture.admin.execute("UPDATE habit.row_limits SET max_rows = 1 WHERE table_name = 'habit_templates'")
            let habit = try fixture.repository.createHabit(user: user, HabitDraft(id: id, name: "Only"))
            #expect(try fixture.repository.createHabit(user: user, HabitDraft(id: id, name: "Only")) == habit)
            #expect(throws: StoreError.limitExceeded(table: "habit_templates")) {
                try fixture.repository.createHabit(user: user, HabitDraft(name: "Second"))
            }
        }
    }

    @Test("a row the seed apps inserted with their own id: the create with that id and fields returns it")
    func directInsertsKeepWorking() throws {
        try HabitFixture.with { fixture in
            let user = UUID(), id = UUID()
            let inserted = try UserScope(connection: fixture.workerConnection).execute(as: user, """
                INSERT INTO public.habit_templates (id, user_id, name, sort_order) VALUES (\(id), \(user), 'Stretch', 3)
                """)
            #expect(inserted == 1)
            let habit = try fixture.repository.createHabit(user: user, HabitDraft(id: id, name: "Stretch"))
            #expect(habit.id == id && habit.sortOrder == 3)
        }
    }

    @Test("eight concurrent creates with the same id and fields all succeed with the same row")
    func concurrentSameID() throws {
        try TestDatabase.with { database in
            let admin = try database.connect()
            defer { admin.close() }
            let url = try database.workerURL()
            for round in 0..<3 {
                let user = UUID(), id = UUID()
                let results = try Self.concurrently(url: url, sessions: 8) { connection -> UUID in
                    switch round {
                    case 0: return try HabitRepository(connection: connection).createHabit(user: user, HabitDraft(id: id, name: "Same")).id
                    case 1: return try TaskRepository(connection: connection).createList(user: user, name: "Same", id: id).id
                    default: return try TaskRepository(connection: connection).createTask(user: user, TaskDraft(id: id, title: "Same")).id
                    }
                }
                #expect(results == Array(repeating: .success(id), count: 8), "round \(round): \(results)")
                let rows = try admin.queryOne("""
                    SELECT (SELECT count(*) FROM habit_templates WHERE user_id = \(user))
                         + (SELECT count(*) FROM task_lists WHERE user_id = \(user))
                         + (SELECT count(*) FROM tasks WHERE user_id = \(user))
                    """).decode(Int.self, at: 0)
                #expect(rows == 1, "round \(round)")
            }
        }
    }

    enum Outcome: Equatable, CustomStringConvertible {
        case success(UUID)
        case failure(String)
        var description: String {
            switch self {
            case .success(let id): "\(id)"
            case .failure(let error): error
            }
        }
    }

    /// Runs `body` on `sessions` threads, each with its own connection as the worker's role
    /// (made on its thread), released together once all are connected.
    static func concurrently(url: String, sessions: Int,
                             _ body: @escaping @Sendable (Connection) throws -> UUID) throws -> [Outcome] {
        let ready = DispatchSemaphore(value: 0)
        let start = DispatchSemaphore(value: 0)
        let group = DispatchGroup()
        let outcomes = OutcomeList()
        for _ in 0..<sessions {
            group.enter()
            Thread {
                defer { group.leave() }
                let connection: Connection
                do {
                    connection = try Connection(url)
                } catch {
                    outcomes.append(.failure("connect: \(error)"))
                    ready.signal()
                    return
                }
                defer { connection.close() }
                ready.signal()
                start.wait()
                do { outcomes.append(.success(try body(connection))) } catch { outcomes.append(.failure("\(error)")) }
            }.start()
        }
        for _ in 0..<sessions { ready.wait() }
        for _ in 0..<sessions { start.signal() }
        group.wait()
        return outcomes.items
    }
}

private final class OutcomeList: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [ClientIDTests.Outcome] = []
    func append(_ item: ClientIDTests.Outcome) { lock.withLock { list.append(item) } }
    var items: [ClientIDTests.Outcome] { lock.withLock { list } }
}
