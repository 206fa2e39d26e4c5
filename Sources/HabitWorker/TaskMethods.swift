import Foundation
import HabitStore
import JSONRPC
import PostgresClient

// The JSON-RPC methods of the task domain (tasks.* and lists.*). docs/protocol.md
// documents each one; each method's `decode` is the one declaration of its params.

private let positionRange = Int(Int32.min)...Int(Int32.max)

// MARK: - Lists

enum ListsCreate: DatabaseMethod {
    static let name = "lists.create"
    static let retry = RetrySafety.withClientID
    static let summary = "Creates a list; with a client id, safe to retry."
    static let errors: [DomainErrorCode] = [.limitExceeded, .idConflict]
    struct Params: Sendable { let user: UUID; let id: UUID?; let name: String }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(), id: try params.clientID(),
               name: try params.requiredString("name", description: "Trimmed, then 1–100 characters."))
    }
    static func run(_ params: Params, in context: MethodContext) throws -> TaskList {
        try context.tasks.createList(user: params.user, name: params.name, id: params.id)
    }
}

enum ListsUpdate: DatabaseMethod {
    static let name = "lists.update"
    static let retry = RetrySafety.always
    static let summary = "Renames a list."
    static let errors: [DomainErrorCode] = [.notFound]
    struct Params: Sendable { let user: UUID; let id: UUID; let name: String }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(), id: try params.uuid("id"), name: try params.requiredString("name"))
    }
    static func run(_ params: Params, in context: MethodContext) throws -> TaskList {
        try context.tasks.renameList(user: params.user, id: params.id, name: params.name)
    }
}

enum ListsDelete: DatabaseMethod {
    static let name = "lists.delete"
    static let retry = RetrySafety.always
    static let summary = "Deletes a list; its tasks stay, without a list."
    static let errors: [DomainErrorCode] = [.notFound]
    static func decode(_ params: ParamsReader) throws(RPCError) -> OwnedID { try params.ownedID() }
    static func run(_ params: OwnedID, in context: MethodContext) throws -> Deleted {
        try context.tasks.deleteList(user: params.user, id: params.id)
        return Deleted()
    }
}

enum ListsList: DatabaseMethod {
    static let name = "lists.list"
    static let retry = RetrySafety.always
    static let summary = "A page of the user's lists in creation order."
    struct Params: Sendable { let user: UUID; let page: PageRequest<TaskListSortKey> }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(), page: try params.taskListPage())
    }
    static func run(_ params: Params, in context: MethodContext) throws -> ListPage {
        let lists = try context.tasks.lists(user: params.user, page: params.page)
        return ListPage(lists: lists, nextCursor: lists.nextCursor(kind: TaskListSortKey.cursorKind) { TaskListSortKey($0).cursorFields })
    }

    struct ListPage: MethodResult {
        let lists: Page<TaskList>
        let nextCursor: String?

        static let schema = JSONSchema.object([
            ("lists", JSONSchema.array(of: TaskList.schema)),
            ("next_cursor", nextCursorSchema),
        ])
        func write(to json: inout JSONWriter) {
            json.beginObject()
            json.key("lists"); json.array(lists) { $0.taskList($1) }
            json.key("next_cursor"); json.string(nextCursor)
            json.endObject()
        }
        var estimatedJSONBytes: Int { 64 + 160 * lists.count }
    }
}

// MARK: - Tasks

enum TasksCreate: DatabaseMethod {
    static let name = "tasks.create"
    static let retry = RetrySafety.withClientID
    static let summary = "Creates a task, not started; with a client id, safe to retry."
    static let errors: [DomainErrorCode] = [.notFound, .limitExceeded, .idConflict]
    struct Params: Sendable { let user: UUID; let draft: TaskDraft }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(), draft: TaskDraft(
            id: try params.clientID(),
            title: try params.requiredString("title", description: "Trimmed, then 1–500 characters, no control characters."),
            notes: try params.optionalString("notes"),
            listID: try params.optionalUUID("list_id", description: "One of the user's lists."),
            scheduledDate: try params.optionalDate("scheduled_date", description: "Absent or null: the inbox."),
            position: try params.optionalInt("position", range: positionRange,
                                             description: "Default 1 + the highest among the tasks of the same scheduled_date.")
        ))
    }
    static func run(_ params: Params, in context: MethodContext) throws -> TaskItem {
        try context.tasks.createTask(user: params.user, params.draft)
    }
}

enum TasksUpdate: DatabaseMethod {
    static let name = "tasks.update"
    static let retry = RetrySafety.always
    static let summary = "Changes a task's title, notes, list, date or position (never its state)."
    static let errors: [DomainErrorCode] = [.notFound]
    struct Params: Sendable { let user: UUID; let id: UUID; let changes: TaskChanges }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(), id: try params.uuid("id"), changes: TaskChanges(
            title: try params.optionalString("title", description: "Absent or null: keep."),
            notes: try params.clearableString("notes"),
            listID: try params.clearableUUID("list_id"),
            scheduledDate: try params.clearableDate("scheduled_date", description: "null moves the task to the inbox."),
            position: try params.optionalInt("position", range: positionRange, description: "Absent or null: keep (or last on a new date).")
        ))
    }
    static func run(_ params: Params, in context: MethodContext) throws -> TaskItem {
        try context.tasks.updateTask(user: params.user, id: params.id, params.changes)
    }
}

enum TasksDelete: DatabaseMethod {
    static let name = "tasks.delete"
    static let retry = RetrySafety.always
    static let summary = "Deletes a task."
    static let errors: [DomainErrorCode] = [.notFound]
    static func decode(_ params: ParamsReader) throws(RPCError) -> OwnedID { try params.ownedID() }
    static func run(_ params: OwnedID, in context: MethodContext) throws -> Deleted {
        try context.tasks.deleteTask(user: params.user, id: params.id)
        return Deleted()
    }
}

enum TasksComplete: DatabaseMethod {
    static let name = "tasks.complete"
    static let retry = RetrySafety.always
    static let summary = "Any state → completed (idempotent)."
    static let errors: [DomainErrorCode] = [.notFound]
    static func decode(_ params: ParamsReader) throws(RPCError) -> OwnedID { try params.ownedID() }
    static func run(_ params: OwnedID, in context: MethodContext) throws -> TaskItem {
        try context.tasks.completeTask(user: params.user, id: params.id)
    }
}

enum TasksUncomplete: DatabaseMethod {
    static let name = "tasks.uncomplete"
    static let retry = RetrySafety.always
    static let summary = "completed → not_started; refused for an active task."
    static let errors: [DomainErrorCode] = [.notFound, .invalidState]
    static func decode(_ params: ParamsReader) throws(RPCError) -> OwnedID { try params.ownedID() }
    static func run(_ params: OwnedID, in context: MethodContext) throws -> TaskItem {
        try context.tasks.uncompleteTask(user: params.user, id: params.id)
    }
}

enum TasksCycle: DatabaseMethod {
    static let name = "tasks.cycle"
    static let retry = RetrySafety.never
    static let summary = "One step of not_started → active → completed → not_started."
    static let errors: [DomainErrorCode] = [.notFound]
    static func decode(_ params: ParamsReader) throws(RPCError) -> OwnedID { try params.ownedID() }
    static func run(_ params: OwnedID, in context: MethodContext) throws -> TaskItem {
        try context.tasks.cycleTask(user: params.user, id: params.id)
    }
}

enum TasksSetState: DatabaseMethod {
    static let name = "tasks.set_state"
    static let retry = RetrySafety.always
    static let summary = "Any state → the given state (idempotent)."
    static let errors: [DomainErrorCode] = [.notFound]
    struct Params: Sendable { let user: UUID; let id: UUID; let state: TaskState }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        let state = try params.oneOf("state", TaskState.self)
        return Params(user: try params.userID(), id: try params.uuid("id"), state: state)
    }
    static func run(_ params: Params, in context: MethodContext) throws -> TaskItem {
        try context.tasks.setTaskState(user: params.user, id: params.id, state: params.state)
    }
}

enum TasksToday: DatabaseMethod {
    static let name = "tasks.today"
    static let retry = RetrySafety.always
    static let summary = "A page of the tasks scheduled on one day, with the day's counts."
    static let cursorKind = "today"
    struct Params: Sendable { let user: UUID; let date: CalendarDate?; let timeZone: String?; let page: PageRequest<TaskSortKey> }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        // The cursor keeps the day of its first page: a walk that crosses midnight stays on it.
        let (page, extra) = try params.taskPage(kind: cursorKind, extra: 1)
        var date = try params.optionalDate("date", description: "Default today in the zone used; must match a cursor's day.")
        if let cursorDay = extra.first {
            guard let day = CalendarDate(iso8601: cursorDay), date == nil || date == day else { throw PageCursor.invalid() }
            date = day
        }
        return Params(user: try params.userID(), date: date, timeZone: try params.timeZone(), page: page)
    }
    static func run(_ params: Params, in context: MethodContext) throws -> Today {
        let day = try context.tasks.today(user: params.user, date: params.date, timeZone: params.timeZone, page: params.page)
        return Today(day: day, nextCursor: day.tasks.nextCursor(kind: cursorKind, extra: [day.date.description]) { TaskSortKey($0).cursorFields })
    }

    struct Today: MethodResult {
        let day: TaskDay
        let nextCursor: String?

        static let schema = JSONSchema.object([
            ("date", ValueSchema.date),
            ("tasks", JSONSchema.array(of: TaskItem.schema)),
            ("completed_count", JSONSchema.described(JSONSchema.integer(0...Int.max), "Of the whole day.")),
            ("total_count", JSONSchema.described(JSONSchema.integer(0...Int.max), "Of the whole day.")),
            ("next_cursor", nextCursorSchema),
        ])
        func write(to json: inout JSONWriter) {
            json.beginObject()
            json.key("date"); json.date(day.date)
            json.key("tasks"); json.array(day.tasks) { $0.task($1) }
            json.key("completed_count"); json.int(day.completedCount)
            json.key("total_count"); json.int(day.totalCount)
            json.key("next_cursor"); json.string(nextCursor)
            json.endObject()
        }
        var estimatedJSONBytes: Int { 128 + 360 * day.tasks.count }
    }
}

enum TasksList: DatabaseMethod {
    static let name = "tasks.list"
    static let retry = RetrySafety.always
    static let summary = "A page of the inbox, the upcoming tasks or one list's tasks."
    static let errors: [DomainErrorCode] = [.notFound]
    static let views = ["inbox", "upcoming", "list"]
    struct Params: Sendable { let user: UUID; let listing: TaskListing; let timeZone: String?; let page: PageRequest<TaskSortKey> }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        // `view` is checked with `list_id` below (so a bad list_id is named before a bad view).
        let view = params.declares("view", schema: JSONSchema.string(oneOf: views), required: true) ? views[0] : try params.requiredString("view")
        let listID = try params.optionalUUID("list_id", description: "Required with view \"list\", else absent or null.")
        let listing: TaskListing
        switch (view, listID) {
        case ("inbox", nil): listing = .inbox
        case ("upcoming", nil): listing = .upcoming
        case ("list", let id?): listing = .list(id)
        case ("list", nil): throw .invalidParams(field: "list_id", reason: RPCReason.required, message: "missing (required with view \"list\")")
        case ("inbox", _?), ("upcoming", _?): throw .invalidParams(field: "list_id", reason: InputFailure.notAllowed, message: "only allowed with view \"list\"")
        default: throw .invalidParams(field: "view", reason: RPCReason.invalidChoice, message: "expected \"inbox\", \"upcoming\" or \"list\"")
        }
        let (page, _) = try params.taskPage(kind: cursorKind(listing))
        return Params(user: try params.userID(), listing: listing, timeZone: try params.timeZone(), page: page)
    }
    static func run(_ params: Params, in context: MethodContext) throws -> Listing {
        let tasks = try context.tasks.listTasks(user: params.user, params.listing, timeZone: params.timeZone, page: params.page)
        let view: String = switch params.listing {
        case .inbox: "inbox"
        case .upcoming: "upcoming"
        case .list: "list"
        }
        return Listing(view: view, tasks: tasks,
                       nextCursor: tasks.nextCursor(kind: cursorKind(params.listing)) { TaskSortKey($0).cursorFields })
    }

    /// A cursor belongs to one view (and one list).
    static func cursorKind(_ listing: TaskListing) -> String {
        switch listing {
        case .inbox: "inbox"
        case .upcoming: "upcoming"
        case .list(let id): "list:" + id.lowercaseString
        }
    }

    struct Listing: MethodResult {
        let view: String
        let tasks: Page<TaskItem>
        let nextCursor: String?

        static let schema = JSONSchema.object([
            ("view", JSONSchema.string(oneOf: views)),
            ("tasks", JSONSchema.array(of: TaskItem.schema)),
            ("next_cursor", nextCursorSchema),
        ])
        func write(to json: inout JSONWriter) {
            json.beginObject()
            json.key("view"); json.string(view)
            json.key("tasks"); json.array(tasks) { $0.task($1) }
            json.key("next_cursor"); json.string(nextCursor)
            json.endObject()
        }
        var estimatedJSONBytes: Int { 96 + 360 * tasks.count }
    }
}
