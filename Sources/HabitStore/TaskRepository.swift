import Foundation
import PostgresClient

/// The tasks and task lists of the task-list apps, per user. Like `HabitRepository`, every
/// method takes the acting user and touches only that user's rows twice over: each
/// statement filters by `user_id`, and runs under that user's claims with row-level
/// security forced (see `UserScope`).
///
/// State rules (docs/protocol.md): `completed_at` is set when a task becomes completed and
/// cleared when it leaves that state — the repository writes it, and the CHECK constraint
/// tasks_completed_at_check refuses any row that breaks it. A method that leads to the
/// state the task is already in is a no-op (retries are safe); `uncompleteTask` refuses an
/// active task with `invalidState`.
///
/// Each method of one statement is one round trip (`UserScope.query`/`execute`, like
/// `HabitRepository`); the four state changes lock the task, decide in Swift, then write (three
/// round trips, two for a no-op). Default positions are `habit.next_task_position` (sql/functions/tasks.sql).
///
/// Not thread-safe: one repository per connection, used by one thread at a time.
public final class TaskRepository {
    let scope: UserScope
    var connection: Connection { scope.connection }

    public init(connection: Connection, settings: StoreSettings = StoreSettings()) {
        scope = UserScope(connection: connection, settings: settings)
    }

    // MARK: - Lists

    /// Creates a list. With `id`, safe to retry: the user's list with that id and the same
    /// name is returned; another name, or an id of another user's row, is `idConflict`
    /// (`habit.create_list`, sql/functions/tasks.sql).
    public func createList(user: UUID, name: String, id: UUID? = nil) throws -> TaskList {
        let name = try Validation.listName(name)
        return try TaskList(row: scope.query(as: user, """
            SELECT \(unsafeSQL: TaskList.columns) FROM habit.create_list(\(user), \(id), \(name))
            """).single())
    }

    public func renameList(user: UUID, id: UUID, name: String) throws -> TaskList {
        let name = try Validation.listName(name)
        return try TaskList(row: scope.query(as: user, """
            UPDATE public.task_lists SET name = \(name)
            WHERE id = \(id) AND user_id = \(user)
            RETURNING \(unsafeSQL: TaskList.columns)
            """).found())
    }

    /// Deletes a list. Its tasks stay, with no list (ON DELETE SET NULL (list_id)), and
    /// keep their dates, states and positions.
    public func deleteList(user: UUID, id: UUID) throws {
        let deleted = try scope.execute(as: user, "DELETE FROM public.task_lists WHERE id = \(id) AND user_id = \(user)")
        guard deleted == 1 else { throw StoreError.notFound }
    }

    /// The user's lists in creation order.
    public func lists(user: UUID, page: PageRequest<TaskListSortKey> = PageRequest()) throws -> Page<TaskList> {
        let after = TaskListSortKey.bounds(page.after)
        return Page(fetched: try scope.query(as: user, """
            SELECT \(unsafeSQL: TaskList.columns) FROM public.task_lists
            WHERE user_id = \(user) AND (created_at, id) > (\(after.createdAt), \(after.id))
            ORDER BY created_at, id
            LIMIT \(page.fetchLimit)
            """).map(TaskList.init(row:)), request: page)
    }

    // MARK: - Tasks

    /// Creates a not-started task. Without a position it goes after the last task with the
    /// same scheduled date (the inbox, when undated). A list of another user is `notFound`
    /// (the composite foreign key refuses it). With `draft.id`, safe to retry like
    /// `createHabit` (`habit.create_task`, sql/functions/tasks.sql): the same fields return the user's task
    /// with that id as it is now, in whatever state; otherwise `idConflict`.
    public func createTask(user: UUID, _ draft: TaskDraft) throws -> TaskItem {
        let title = try Validation.taskTitle(draft.title)
        let notes = try draft.notes.map(Validation.taskNotes)
        let position = try draft.position.map(Validation.taskPosition)
        return try TaskItem(row: scope.query(as: user, """
            SELECT \(unsafeSQL: TaskItem.columns)
            FROM habit.create_task(\(user), \(draft.id), \(title), \(notes), \(draft.listID), \(draft.scheduledDate), \(position))
            """).single())
    }

    /// Changes title, notes, list, date or position in one statement. Moving a task to
    /// another date without giving a position puts it after the last task of that date
    /// (`habit.next_task_position`, which serialises the user's numbering writers until
    /// commit). State and completed_at never change here.
    ///
    /// On a Citus coordinator that position is asked first, in the same transaction: Citus
    /// refuses a VOLATILE function inside an UPDATE of a distributed table, and the two
    /// statements cost two round trips more (docs/scaling.md, "Running on Citus").
    public func updateTask(user: UUID, id: UUID, _ changes: TaskChanges) throws -> TaskItem {
        let title = try changes.title.map(Validation.taskTitle)
        let notes = try changes.notes.map { try $0.map(Validation.taskNotes) }
        let position = try changes.position.map(Validation.taskPosition)
        let dateGiven = changes.scheduledDate != nil
        let date = changes.scheduledDate ?? nil
        // A flag per clearable field says whether to replace it (possibly with NULL). On the
        // right of SET, scheduled_date is still the row's old value. The new date's position is
        // found in the statement, or on Citus given (`asked`: asked first, nil when the date
        // stays) with no function call in the statement at all.
        let citus = try scope.isCitusCoordinator()
        func update(asked: Int32?) -> Query {
            guard citus else {
                return """
                    UPDATE public.tasks SET
                        title = coalesce(\(title), title),
                        notes = CASE WHEN \(notes != nil) THEN \(notes ?? nil) ELSE notes END,
                        list_id = CASE WHEN \(changes.listID != nil) THEN \(changes.listID ?? nil) ELSE list_id END,
                        scheduled_date = CASE WHEN \(dateGiven) THEN \(date) ELSE scheduled_date END,
                        position = coalesce(\(position), CASE
                            WHEN \(dateGiven) AND \(date) IS DISTINCT FROM scheduled_date THEN habit.next_task_position(\(user), \(date))
                            ELSE position END)
                    WHERE id = \(id) AND user_id = \(user)
                    RETURNING \(unsafeSQL: TaskItem.columns)
                    """
            }
            return """
                UPDATE public.tasks SET
                    title = coalesce(\(title), title),
                    notes = CASE WHEN \(notes != nil) THEN \(notes ?? nil) ELSE notes END,
                    list_id = CASE WHEN \(changes.listID != nil) THEN \(changes.listID ?? nil) ELSE list_id END,
                    scheduled_date = CASE WHEN \(dateGiven) THEN \(date) ELSE scheduled_date END,
                    position = coalesce(\(position), \(asked), position)
                WHERE id = \(id) AND user_id = \(user)
                RETURNING \(unsafeSQL: TaskItem.columns)
                """
        }
        guard dateGiven, position == nil, citus else {
            return try TaskItem(row: scope.query(as: user, update(asked: nil)).found())
        }
        return try TaskItem(row: scope.transaction(as: user) { connection in
            // No row: the task is not the user's, or keeps its date (and its position).
            let next = try connection.queryOptional("""
                SELECT habit.next_task_position(\(user), \(date)) FROM public.tasks
                WHERE id = \(id) AND user_id = \(user) AND scheduled_date IS DISTINCT FROM \(date)
                """).map { try $0.decode(Int32.self, at: 0) }
            return try connection.query(update(asked: next))
        }.found())
    }

    public func deleteTask(user: UUID, id: UUID) throws {
        let deleted = try scope.execute(as: user, "DELETE FROM public.tasks WHERE id = \(id) AND user_id = \(user)")
        guard deleted == 1 else { throw StoreError.notFound }
    }

    public func task(user: UUID, id: UUID) throws -> TaskItem {
        try TaskItem(row: scope.query(as: user, """
            SELECT \(unsafeSQL: TaskItem.columns) FROM public.tasks WHERE id = \(id) AND user_id = \(user)
            """).found())
    }

    // MARK: - State

    /// Completes a task from any state. Completing a completed task changes nothing (it
    /// keeps its first completed_at and its updated_at).
    public func completeTask(user: UUID, id: UUID) throws -> TaskItem {
        try transition(user: user, id: id) { _ in .completed }
    }

    /// Completed → not started, clearing completed_at. A not-started task is left as it is
    /// (a retry is safe); an active task was never completed and is refused.
    public func uncompleteTask(user: UUID, id: UUID) throws -> TaskItem {
        try transition(user: user, id: id) { state in
            guard state != .active else { throw StoreError.invalidState("task is active, not completed") }
            return .notStarted
        }
    }

    /// One tap: not_started → active → completed → not_started. Concurrent cycles of one
    /// task are serialized by the row lock, so each advances it one step.
    public func cycleTask(user: UUID, id: UUID) throws -> TaskItem {
        try transition(user: user, id: id) { $0.next }
    }

    /// Any state to any state; the current state is a no-op.
    public func setTaskState(user: UUID, id: UUID, state: TaskState) throws -> TaskItem {
        try transition(user: user, id: id) { _ in state }
    }

    /// Locks the task, lets `decide` pick the next state from the current one, and writes it
    /// with the completed_at rule. scheduled_date, position and the rest never change here.
    private func transition(user: UUID, id: UUID, _ decide: (TaskState) throws -> TaskState) throws -> TaskItem {
        try scope.transaction(as: user) { connection in
            // Statement 1 takes the row lock; a concurrent transition of the same task waits
            // here and, in READ COMMITTED, then reads the row as the other one left it.
            let row = try connection.queryOptional("""
                SELECT \(unsafeSQL: TaskItem.columns) FROM public.tasks
                WHERE id = \(id) AND user_id = \(user)
                FOR NO KEY UPDATE
                """)
            guard let row else { throw StoreError.notFound }
            let current = try TaskItem(row: row)
            let target = try decide(current.state)
            guard target != current.state else { return current }
            // completed_at as coalesce(completed_at, now()) when completing, else NULL, decided
            // here from the locked row: Citus refuses now() inside an UPDATE's CASE or COALESCE.
            let completedAt = target != .completed ? "NULL" : current.completedAt == nil ? "now()" : "completed_at"
            return try TaskItem(row: connection.queryOne("""
                UPDATE public.tasks SET
                    state = \(target.rawValue),
                    completed_at = \(unsafeSQL: completedAt)
                WHERE id = \(id) AND user_id = \(user)
                RETURNING \(unsafeSQL: TaskItem.columns)
                """))
        }
    }

    // MARK: - Views

    /// The tasks scheduled on `date` (default: today in the user's time zone, or in
    /// `timeZone` when given), in every state: active, then not started, then completed,
    /// each by position. Earlier dates' unfinished tasks are not carried over.
    public func today(user: UUID, date: CalendarDate? = nil, timeZone: String? = nil,
                      page: PageRequest<TaskSortKey> = PageRequest()) throws -> TaskDay {
        try Validation.timeZone(timeZone, using: connection)
        let after = TaskSortKey.bounds(page.after)
        // One header row (the date and the day's counts) even when there are no tasks, like
        // HabitRepository.day.
        let rows = try scope.query(as: user, """
            WITH day AS MATERIALIZED (
                -- Materialized: inlined, the coalesce(…) (not leakproof) would have to wait
                -- behind the RLS policy and could not drive the (user_id, scheduled_date) index.
                SELECT coalesce(\(date), habit.user_today(\(user), \(timeZone))) AS date
            ),
            header AS (
                SELECT day.date,
                       (SELECT count(*) FROM public.tasks WHERE user_id = \(user) AND scheduled_date = day.date) AS total,
                       (SELECT count(*) FROM public.tasks
                        WHERE user_id = \(user) AND scheduled_date = day.date AND state = 'completed') AS completed
                FROM day
            )
            SELECT header.date AS day, header.total, header.completed, t.*
            FROM header LEFT JOIN LATERAL (
                SELECT \(unsafeSQL: TaskItem.columns), \(unsafeSQL: TaskSortKey.stateRankSQL) AS rank FROM public.tasks
                WHERE user_id = \(user) AND scheduled_date = header.date
                  AND (\(unsafeSQL: TaskSortKey.stateRankSQL), position, created_at, id)
                      > (\(after.rank), \(after.position), \(after.createdAt), \(after.id))
                ORDER BY rank, position, created_at, id
                LIMIT \(page.fetchLimit)
            ) t ON true
            ORDER BY t.rank, t.position, t.created_at, t.id
            """)
        guard let first = rows.first else { throw PostgresError(kind: .unexpectedRowCount, message: "today query returned no header row") }
        return TaskDay(
            date: try first.decode(CalendarDate.self, "day"),
            tasks: Page(fetched: try rows.filter { !$0.isNull(at: 3) }.map(TaskItem.init(row:)), request: page),
            completedCount: try first.decode(Int.self, "completed"),
            totalCount: try first.decode(Int.self, "total")
        )
    }

    /// The inbox, the upcoming days (after today in the user's zone, or in `timeZone`), or
    /// one list. A list that is not the user's is `notFound`.
    public func listTasks(user: UUID, _ listing: TaskListing, timeZone: String? = nil,
                          page: PageRequest<TaskSortKey> = PageRequest()) throws -> Page<TaskItem> {
        try Validation.timeZone(timeZone, using: connection)
        let after = TaskSortKey.bounds(page.after)
        switch listing {
        case .inbox:
            return Page(fetched: try scope.query(as: user, """
                SELECT \(unsafeSQL: TaskItem.columns) FROM public.tasks
                WHERE user_id = \(user) AND scheduled_date IS NULL
                  AND (position, created_at, id) > (\(after.position), \(after.createdAt), \(after.id))
                ORDER BY position, created_at, id
                LIMIT \(page.fetchLimit)
                """).map(TaskItem.init(row:)), request: page)
        case .upcoming:
            return Page(fetched: try scope.query(as: user, """
                WITH today AS MATERIALIZED (
                    SELECT habit.user_today(\(user), \(timeZone)) AS date
                )
                SELECT \(unsafeSQL: TaskItem.columns) FROM public.tasks, today
                WHERE user_id = \(user) AND scheduled_date > today.date
                  AND (scheduled_date, position, created_at, id) > (\(after.date), \(after.position), \(after.createdAt), \(after.id))
                ORDER BY scheduled_date, position, created_at, id
                LIMIT \(page.fetchLimit)
                """).map(TaskItem.init(row:)), request: page)
        case .list(let list):
            // Undated first: (scheduled_date IS NOT NULL, coalesce(scheduled_date, 0001-01-01)).
            let rows = try scope.query(as: user, """
                SELECT l.found, t.*
                FROM (SELECT EXISTS (SELECT 1 FROM public.task_lists WHERE id = \(list) AND user_id = \(user)) AS found) l
                LEFT JOIN LATERAL (
                    SELECT \(unsafeSQL: TaskItem.columns) FROM public.tasks
                    WHERE user_id = \(user) AND list_id = \(list)
                      AND (scheduled_date IS NOT NULL, coalesce(scheduled_date, \(CalendarDate.minimum)), position, created_at, id)
                          > (\(after.dated), \(after.date), \(after.position), \(after.createdAt), \(after.id))
                    ORDER BY scheduled_date NULLS FIRST, position, created_at, id
                    LIMIT \(page.fetchLimit)
                ) t ON l.found
                ORDER BY t.scheduled_date NULLS FIRST, t.position, t.created_at, t.id
                """)
            guard let first = rows.first, try first.decode(Bool.self, "found") else { throw StoreError.notFound }
            return Page(fetched: try rows.filter { !$0.isNull(at: 1) }.map(TaskItem.init(row:)), request: page)
        }
    }
}
