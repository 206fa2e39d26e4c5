import Foundation
import PostgresClient

/// Keyset pagination: a page is the first `limit` rows whose sort key comes after `after`, the
/// key of the previous page's last row. Rows inserted or deleted between pages never shift a
/// page, so a walk neither skips nor repeats a row that existed for the whole walk (a row whose
/// sort key changes meanwhile may move past or behind the walk).
public struct PageRequest<Key: Sendable>: Sendable {
    public static var defaultLimit: Int { 100 }
    public static var maxLimit: Int { 1_000 }

    public var limit: Int
    /// The last row of the previous page; nil for the first page.
    public var after: Key?

    public init(limit: Int = PageRequest.defaultLimit, after: Key? = nil) {
        self.limit = min(max(limit, 1), Self.maxLimit)
        self.after = after
    }

    /// `LIMIT` of the statement: one row more than the page, to know whether more follow.
    var fetchLimit: Int { limit + 1 }
}

/// One page of rows, in order; a collection of its items.
public struct Page<Item: Sendable>: Sendable, RandomAccessCollection {
    public var items: [Item]
    /// Whether rows follow the last item.
    public var hasMore: Bool

    /// From a statement's rows fetched with `request.fetchLimit`.
    init<Key>(fetched: [Item], request: PageRequest<Key>) {
        items = Array(fetched.prefix(request.limit))
        hasMore = fetched.count > request.limit
    }

    public var startIndex: Int { items.startIndex }
    public var endIndex: Int { items.endIndex }
    public subscript(position: Int) -> Item { items[position] }
}

/// Where a habit sorts in `habits.list`: `sort_order` (NULLs last), `created_at`, `id`.
public struct HabitSortKey: Sendable, Equatable {
    public var sortOrder: Int?
    public var createdAt: PostgresTimestamp
    public var id: UUID

    public init(sortOrder: Int?, createdAt: PostgresTimestamp, id: UUID) {
        self.sortOrder = sortOrder
        self.createdAt = createdAt
        self.id = id
    }

    public init(_ habit: Habit) { self.init(sortOrder: habit.sortOrder, createdAt: habit.createdAt, id: habit.id) }

    /// The statement's key values, `(sort_order IS NULL, coalesce(sort_order, 0), created_at, id)`,
    /// for a row comparison; before every row when nil.
    static func bounds(_ key: HabitSortKey?) -> (nullOrder: Bool, order: Int, createdAt: PostgresTimestamp, id: UUID) {
        guard let key else { return (false, Int.min, .minimum, .zero) }
        return (key.sortOrder == nil, key.sortOrder ?? 0, key.createdAt, key.id)
    }
}

/// Where a task list sorts in `lists.list`: `created_at`, `id`.
public struct TaskListSortKey: Sendable, Equatable {
    public var createdAt: PostgresTimestamp
    public var id: UUID

    public init(createdAt: PostgresTimestamp, id: UUID) {
        self.createdAt = createdAt
        self.id = id
    }

    public init(_ list: TaskList) { self.init(createdAt: list.createdAt, id: list.id) }

    static func bounds(_ key: TaskListSortKey?) -> (createdAt: PostgresTimestamp, id: UUID) {
        guard let key else { return (.minimum, .zero) }
        return (key.createdAt, key.id)
    }
}

/// Where a task sorts in the task views. Each view orders by a part of it: today by state rank
/// (active, not started, completed), position, created_at, id; the inbox by position,
/// created_at, id; upcoming by scheduled_date, position, created_at, id; a list by
/// scheduled_date (NULLs first), position, created_at, id.
public struct TaskSortKey: Sendable, Equatable {
    public var state: TaskState
    public var scheduledDate: CalendarDate?
    public var position: Int
    public var createdAt: PostgresTimestamp
    public var id: UUID

    public init(state: TaskState, scheduledDate: CalendarDate?, position: Int, createdAt: PostgresTimestamp, id: UUID) {
        self.state = state
        self.scheduledDate = scheduledDate
        self.position = position
        self.createdAt = createdAt
        self.id = id
    }

    public init(_ task: TaskItem) {
        self.init(state: task.state, scheduledDate: task.scheduledDate, position: task.position, createdAt: task.createdAt, id: task.id)
    }

    /// Today's order of states, in SQL over a `tasks` row; `stateRank` is the same for a key.
    static let stateRankSQL = "CASE state WHEN 'active' THEN 0 WHEN 'not_started' THEN 1 ELSE 2 END"

    var stateRank: Int {
        switch state {
        case .active: 0
        case .notStarted: 1
        case .completed: 2
        }
    }

    /// `(rank, dated, date, position, created_at, id)`; before every row when nil. `dated` and
    /// `date` stand for `scheduled_date` with NULLs first.
    static func bounds(_ key: TaskSortKey?) -> (rank: Int, dated: Bool, date: CalendarDate, position: Int, createdAt: PostgresTimestamp, id: UUID) {
        guard let key else { return (-1, false, .minimum, Int.min, .minimum, .zero) }
        return (key.stateRank, key.scheduledDate != nil, key.scheduledDate ?? .minimum, key.position, key.createdAt, key.id)
    }
}

extension PostgresTimestamp {
    /// `-infinity`: before every timestamp.
    static let minimum = PostgresTimestamp(microsecondsSincePostgresEpoch: .min)
}

extension CalendarDate {
    /// Stands in for a NULL `scheduled_date` in a sort key (whose `dated` part already puts it first).
    static let minimum = CalendarDate(year: 1, month: 1, day: 1)!
}

extension UUID {
    static let zero = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
}
