import Foundation
import HabitStore
import JSONRPC
import PostgresClient

// The JSON-RPC methods of the task domain (tasks.* and lists.*). docs/protocol.md
// documents each one.

private let positionRange = Int(Int32.min)...Int(Int32.max)

// MARK: - Lists

enum ListsCreate: DatabaseMethod {
    static let name = "lists.create"
    static let keys: Set<String> = ["user_id", "name"]
    struct Params: Sendable { let user: UUID; let name: String }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(), name: try params.requiredString("name"))
    }
    static func run(_ params: Params, in context: MethodContext) throws -> JSONValue {
        JSONValue(taskList: try context.tasks.createList(user: params.user, name: params.name))
    }
}

enum ListsUpdate: DatabaseMethod {
    static let name = "lists.update"
    static let keys: Set<String> = ["user_id", "id", "name"]
    struct Params: Sendable { let user: UUID; let id: UUID; let name: String }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(), id: try params.uuid("id"), name: try params.requiredString("name"))
    }
    static func run(_ params: Params, in context: MethodContext) throws -> JSONValue {
        JSONValue(taskList: try context.tasks.renameList(user: params.user, id: params.id, name: params.name))
    }
}

enum ListsDelete: DatabaseMethod {
    static let name = "lists.delete"
    static let keys: Set<String> = ["user_id", "id"]
    static func decode(_ params: ParamsReader) throws(RPCError) -> TaskReference { try params.taskReference() }
    static func run(_ params: TaskReference, in context: MethodContext) throws -> JSONValue {
        try context.tasks.deleteList(user: params.user, id: params.id)
        return ["deleted": true]
    }
}

enum ListsList: DatabaseMethod {
    static let name = "lists.list"
    static let keys = Set<String>(["user_id"]).union(PageCursor.keys)
    struct Params: Sendable { let user: UUID; let page: PageRequest<TaskListSortKey> }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(), page: try params.taskListPage())
    }
    static func run(_ params: Params, in context: MethodContext) throws -> JSONValue {
        let lists = try context.tasks.lists(user: params.user, page: params.page)
        return [
            "lists": .array(lists.map(JSONValue.init(taskList:))),
            "next_cursor": JSONValue(optional: lists.nextCursor(kind: TaskListSortKey.cursorKind) { TaskListSortKey($0).cursorFields }) { .string($0) },
        ]
    }
}

// MARK: - Tasks

enum TasksCreate: DatabaseMethod {
    static let name = "tasks.create"
    static let keys: Set<String> = ["user_id", "title", "notes", "list_id", "scheduled_date", "position"]
    struct Params: Sendable { let user: UUID; let draft: TaskDraft }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(), draft: TaskDraft(
            title: try params.requiredString("title"),
            notes: try params.optionalString("notes"),
            listID: try params.optionalUUID("list_id"),
            scheduledDate: try params.optionalDate("scheduled_date"),
            position: try params.optionalInt("position", range: positionRange)
        ))
    }
    static func run(_ params: Params, in context: MethodContext) throws -> JSONValue {
        JSONValue(task: try context.tasks.createTask(user: params.user, params.draft))
    }
}

enum TasksUpdate: DatabaseMethod {
    static let name = "tasks.update"
    static let keys: Set<String> = ["user_id", "id", "title", "notes", "list_id", "scheduled_date", "position"]
    struct Params: Sendable { let user: UUID; let id: UUID; let changes: TaskChanges }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(), id: try params.uuid("id"), changes: TaskChanges(
            title: try params.optionalString("title"),
            notes: try params.clearableString("notes"),
            listID: try params.clearableUUID("list_id"),
            scheduledDate: try params.clearableDate("scheduled_date"),
            position: try params.optionalInt("position", range: positionRange)
        ))
    }
    static func run(_ params: Params, in context: MethodContext) throws -> JSONValue {
        JSONValue(task: try context.tasks.updateTask(user: params.user, id: params.id, params.changes))
    }
}

struct TaskReference: Sendable { let user: UUID; let id: UUID }

enum TasksDelete: DatabaseMethod {
    static let name = "tasks.delete"
    static let keys: Set<String> = ["user_id", "id"]
    static func decode(_ params: ParamsReader) throws(RPCError) -> TaskReference { try params.taskReference() }
    static func run(_ params: TaskReference, in context: MethodContext) throws -> JSONValue {
        try context.tasks.deleteTask(user: params.user, id: params.id)
        return ["deleted": true]
    }
}

enum TasksComplete: DatabaseMethod {
    static let name = "tasks.complete"
    static let keys: Set<String> = ["user_id", "id"]
    static func decode(_ params: ParamsReader) throws(RPCError) -> TaskReference { try params.taskReference() }
    static func run(_ params: TaskReference, in context: MethodContext) throws -> JSONValue {
        JSONValue(task: try context.tasks.completeTask(user: params.user, id: params.id))
    }
}

enum TasksUncomplete: DatabaseMethod {
    static let name = "tasks.uncomplete"
    static let keys: Set<String> = ["user_id", "id"]
    static func decode(_ params: ParamsReader) throws(RPCError) -> TaskReference { try params.taskReference() }
    static func run(_ params: TaskReference, in context: MethodContext) throws -> JSONValue {
        JSONValue(task: try context.tasks.uncompleteTask(user: params.user, id: params.id))
    }
}

enum TasksCycle: DatabaseMethod {
    static let name = "tasks.cycle"
    static let keys: Set<String> = ["user_id", "id"]
    static func decode(_ params: ParamsReader) throws(RPCError) -> TaskReference { try params.taskReference() }
    static func run(_ params: TaskReference, in context: MethodContext) throws -> JSONValue {
        JSONValue(task: try context.tasks.cycleTask(user: params.user, id: params.id))
    }
}

enum TasksSetState: DatabaseMethod {
    static let name = "tasks.set_state"
    static let keys: Set<String> = ["user_id", "id", "state"]
    struct Params: Sendable { let user: UUID; let id: UUID; let state: TaskState }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        let text = try params.requiredString("state")
        guard let state = TaskState(rawValue: text) else {
            throw .invalidParams(field: "state", reason: "expected \"not_started\", \"active\" or \"completed\"")
        }
        return Params(user: try params.userID(), id: try params.uuid("id"), state: state)
    }
    static func run(_ params: Params, in context: MethodContext) throws -> JSONValue {
        JSONValue(task: try context.tasks.setTaskState(user: params.user, id: params.id, state: params.state))
    }
}

enum TasksToday: DatabaseMethod {
    static let name = "tasks.today"
    static let keys = Set<String>(["user_id", "date", "timezone"]).union(PageCursor.keys)
    static let cursorKind = "today"
    struct Params: Sendable { let user: UUID; let date: CalendarDate?; let timeZone: String?; let page: PageRequest<TaskSortKey> }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        // The cursor keeps the day of its first page: a walk that crosses midnight stays on it.
        let (page, extra) = try params.taskPage(kind: cursorKind, extra: 1)
        var date = try params.optionalDate("date")
        if let cursorDay = extra.first {
            guard let day = CalendarDate(iso8601: cursorDay), date == nil || date == day else { throw PageCursor.invalid() }
            date = day
        }
        return Params(user: try params.userID(), date: date, timeZone: try params.timeZone(), page: page)
    }
    static func run(_ params: Params, in context: MethodContext) throws -> JSONValue {
        let day = try context.tasks.today(user: params.user, date: params.date, timeZone: params.timeZone, page: params.page)
        return [
            "date": JSONValue(day.date),
            "tasks": .array(day.tasks.map(JSONValue.init(task:))),
            "completed_count": .int(day.completedCount),
            "total_count": .int(day.totalCount),
            "next_cursor": JSONValue(optional: day.tasks.nextCursor(kind: cursorKind, extra: [day.date.description]) { TaskSortKey($0).cursorFields }) { .string($0) },
        ]
    }
}

enum TasksList: DatabaseMethod {
    static let name = "tasks.list"
    static let keys = Set<String>(["user_id", "view", "list_id", "timezone"]).union(PageCursor.keys)
    struct Params: Sendable { let user: UUID; let listing: TaskListing; let timeZone: String?; let page: PageRequest<TaskSortKey> }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        let view = try params.requiredString("view")
        let listID = try params.optionalUUID("list_id")
        let listing: TaskListing
        switch (view, listID) {
        case ("inbox", nil): listing = .inbox
        case ("upcoming", nil): listing = .upcoming
        case ("list", let id?): listing = .list(id)
        case ("list", nil): throw .invalidParams(field: "list_id", reason: "missing (required with view \"list\")")
        case ("inbox", _?), ("upcoming", _?): throw .invalidParams(field: "list_id", reason: "only allowed with view \"list\"")
        default: throw .invalidParams(field: "view", reason: "expected \"inbox\", \"upcoming\" or \"list\"")
        }
        let (page, _) = try params.taskPage(kind: cursorKind(listing))
        return Params(user: try params.userID(), listing: listing, timeZone: try params.timeZone(), page: page)
    }
    static func run(_ params: Params, in context: MethodContext) throws -> JSONValue {
        let tasks = try context.tasks.listTasks(user: params.user, params.listing, timeZone: params.timeZone, page: params.page)
        let view: String = switch params.listing {
        case .inbox: "inbox"
        case .upcoming: "upcoming"
        case .list: "list"
        }
        return [
            "view": .string(view),
            "tasks": .array(tasks.map(JSONValue.init(task:))),
            "next_cursor": JSONValue(optional: tasks.nextCursor(kind: cursorKind(params.listing)) { TaskSortKey($0).cursorFields }) { .string($0) },
        ]
    }

    /// A cursor belongs to one view (and one list).
    static func cursorKind(_ listing: TaskListing) -> String {
        switch listing {
        case .inbox: "inbox"
        case .upcoming: "upcoming"
        case .list(let id): "list:" + id.lowercaseString
        }
    }
}

// MARK: - Reading params

extension ParamsReader {
    func taskReference() throws(RPCError) -> TaskReference {
        TaskReference(user: try userID(), id: try uuid("id"))
    }

    /// Absent or null → nil.
    fileprivate func optionalUUID(_ key: String) throws(RPCError) -> UUID? {
        guard try optionalString(key) != nil else { return nil }
        return try uuid(key)
    }

    /// Absent → keep (nil), null → clear (.some(nil)).
    fileprivate func clearableUUID(_ key: String) throws(RPCError) -> UUID?? {
        switch optionalValue(key) {
        case nil: return nil
        case .null?: return .some(nil)
        case .string?: return .some(try uuid(key))
        default: throw .invalidParams(field: key, reason: "expected a UUID or null")
        }
    }

    /// Absent or null → nil.
    fileprivate func optionalDate(_ key: String) throws(RPCError) -> CalendarDate? {
        guard try optionalString(key) != nil else { return nil }
        return try date(key)
    }

    /// Absent → keep (nil), null → clear (.some(nil)).
    fileprivate func clearableDate(_ key: String) throws(RPCError) -> CalendarDate?? {
        switch optionalValue(key) {
        case nil: return nil
        case .null?: return .some(nil)
        case .string?: return .some(try date(key))
        default: throw .invalidParams(field: key, reason: "expected a calendar date YYYY-MM-DD or null")
        }
    }
}

// MARK: - Encoding results

extension JSONValue {
    init(task: TaskItem) {
        self = .object([
            "id": JSONValue(task.id),
            "title": .string(task.title),
            "notes": JSONValue(optional: task.notes) { .string($0) },
            "list_id": JSONValue(optional: task.listID) { JSONValue($0) },
            "state": .string(task.state.rawValue),
            "scheduled_date": JSONValue(optional: task.scheduledDate) { JSONValue($0) },
            "position": .int(task.position),
            "completed_at": JSONValue(optional: task.completedAt) { JSONValue($0) },
            "created_at": JSONValue(task.createdAt),
            "updated_at": JSONValue(task.updatedAt),
        ])
    }

    init(taskList: TaskList) {
        self = .object([
            "id": JSONValue(taskList.id),
            "name": .string(taskList.name),
            "created_at": JSONValue(taskList.createdAt),
            "updated_at": JSONValue(taskList.updatedAt),
        ])
    }
}
