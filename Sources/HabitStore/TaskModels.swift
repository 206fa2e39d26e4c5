import Foundation
import PostgresClient

/// The three states of a task; the raw values are the database's and the protocol's.
public enum TaskState: String, Sendable, CaseIterable {
    case notStarted = "not_started"
    case active
    case completed

    /// The state one tap leads to: not_started → active → completed → not_started.
    public var next: TaskState {
        switch self {
        case .notStarted: .active
        case .active: .completed
        case .completed: .notStarted
        }
    }
}

/// A task. Named `TaskItem` so that importing this module never shadows Swift's `Task`.
public struct TaskItem: Sendable, Equatable {
    public var id: UUID
    public var title: String
    public var notes: String?
    public var listID: UUID?
    public var state: TaskState
    /// The planned date in the user's time zone; nil = inbox.
    public var scheduledDate: CalendarDate?
    public var position: Int
    /// Set exactly while `state == .completed` (the database enforces it).
    public var completedAt: PostgresTimestamp?
    public var createdAt: PostgresTimestamp
    public var updatedAt: PostgresTimestamp

    /// The columns `init(row:)` reads, in a SELECT or RETURNING list.
    static let columns = "id, title, notes, list_id, state, scheduled_date, position, completed_at, created_at, updated_at"

    init(row: Row) throws {
        id = try row.decode(UUID.self, "id")
        title = try row.decode(String.self, "title")
        notes = try row.decode(String?.self, "notes")
        listID = try row.decode(UUID?.self, "list_id")
        let stateText = try row.decode(String.self, "state")
        guard let state = TaskState(rawValue: stateText) else {
            throw PostgresError(kind: .decoding, message: "unknown task state \"\(stateText)\"")
        }
        self.state = state
        scheduledDate = try row.decode(CalendarDate?.self, "scheduled_date")
        position = Int(try row.decode(Int32.self, "position"))
        completedAt = try row.decode(PostgresTimestamp?.self, "completed_at")
        createdAt = try row.decode(PostgresTimestamp.self, "created_at")
        updatedAt = try row.decode(PostgresTimestamp.self, "updated_at")
    }
}

/// A new task: always not_started. Title and notes are validated by the repository.
public struct TaskDraft: Sendable {
    /// The client's id for the new task, which makes the create safe to retry; nil: generated.
    public var id: UUID?
    public var title: String
    public var notes: String?
    public var listID: UUID?
    /// nil = inbox.
    public var scheduledDate: CalendarDate?
    /// Default: after the last task with the same scheduled date (or the last inbox task).
    public var position: Int?

    public init(id: UUID? = nil, title: String, notes: String? = nil, listID: UUID? = nil,
                scheduledDate: CalendarDate? = nil, position: Int? = nil) {
        self.id = id
        self.title = title
        self.notes = notes
        self.listID = listID
        self.scheduledDate = scheduledDate
        self.position = position
    }
}

/// Changes to a task: `nil` keeps a field; `.some(nil)` clears an optional one.
/// Changing the scheduled date without a position moves the task after the last task of
/// its new date.
public struct TaskChanges: Sendable {
    public var title: String?
    public var notes: String??
    public var listID: UUID??
    public var scheduledDate: CalendarDate??
    public var position: Int?

    public init(title: String? = nil, notes: String?? = nil, listID: UUID?? = nil,
                scheduledDate: CalendarDate?? = nil, position: Int? = nil) {
        self.title = title
        self.notes = notes
        self.listID = listID
        self.scheduledDate = scheduledDate
        self.position = position
    }
}

/// The Today view of one date: every task scheduled on it, whatever its state.
public struct TaskDay: Sendable {
    public var date: CalendarDate
    /// A page of the day's tasks: active first, then not started, then completed; each by position.
    public var tasks: Page<TaskItem>
    /// Of all the day's tasks, not only this page's.
    public var completedCount: Int
    public var totalCount: Int
}

/// Which tasks `TaskRepository.listTasks` returns.
public enum TaskListing: Sendable, Equatable {
    /// Tasks without a scheduled date (in any list, any state), by position.
    case inbox
    /// Tasks scheduled after today in the user's time zone, by date, then position.
    case upcoming
    /// The tasks of one list (any date, any state): undated first, then by date, then position.
    case list(UUID)
}

public struct TaskList: Sendable, Equatable {
    public var id: UUID
    public var name: String
    public var createdAt: PostgresTimestamp
    public var updatedAt: PostgresTimestamp

    static let columns = "id, name, created_at, updated_at"

    init(row: Row) throws {
        id = try row.decode(UUID.self, "id")
        name = try row.decode(String.self, "name")
        createdAt = try row.decode(PostgresTimestamp.self, "created_at")
        updatedAt = try row.decode(PostgresTimestamp.self, "updated_at")
    }
}
