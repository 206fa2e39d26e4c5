import Foundation
import PostgresClient

/// A user's area: a named group of habits (sql/0037), in the order the user sets.
public struct Area: Sendable, Equatable {
    public var id: UUID
    public var name: String
    public var sortOrder: Int?
    public var createdAt: PostgresTimestamp
    public var updatedAt: PostgresTimestamp

    static let columns = "id, name, sort_order, created_at, updated_at"

    init(row: Row) throws {
        id = try row.decode(UUID.self, "id")
        name = try row.decode(String.self, "name")
        sortOrder = try row.decode(Int32?.self, "sort_order").map(Int.init)
        createdAt = try row.decode(PostgresTimestamp.self, "created_at")
        updatedAt = try row.decode(PostgresTimestamp.self, "updated_at")
    }
}

/// One area on a day (`day.get`'s `areas`): of its habits due that day and not skipped, how
/// many are done; `complete` when there is at least one and every one is done.
public struct AreaDay: Sendable, Equatable {
    public var id: UUID
    public var name: String
    public var due: Int
    public var done: Int
    public var complete: Bool { due > 0 && done == due }

    public init(id: UUID, name: String, due: Int, done: Int) {
        self.id = id
        self.name = name
        self.due = due
        self.done = done
    }
}

/// Areas (issue 33, item 1). Every statement filters by `user_id` and runs under the user's
/// claims (`UserScope`); the rules are the database's: the name's CHECKs, 100 areas a user
/// (habit.row_limits), a habit's area one of the user's (habit_templates_area_fkey), and a
/// deleted area's habits kept, unassigned (the area's trigger).
extension HabitRepository {
    /// The most areas a user holds (habit.row_limits' default; an admin may change it).
    public static let defaultMaxAreas = 100

    /// Creates an area after the user's last. With `id`, safe to retry: the user's area with
    /// that id and the same name is returned; another name is `idConflict` (`habit.create_area`).
    public func createArea(user: UUID, name: String, id: UUID? = nil) throws -> Area {
        let name = try Validation.areaName(name)
        return try Area(row: scope.query(as: user, """
            SELECT \(unsafeSQL: Area.columns) FROM habit.create_area(\(user), \(id), \(name))
            """).single())
    }

    public func renameArea(user: UUID, id: UUID, name: String) throws -> Area {
        let name = try Validation.areaName(name)
        return try Area(row: scope.query(as: user, """
            UPDATE public.habit_areas SET name = \(name)
            WHERE id = \(id) AND user_id = \(user)
            RETURNING \(unsafeSQL: Area.columns)
            """).found())
    }

    /// Deletes an area; its habits stay, with no area (the area's trigger clears them).
    public func deleteArea(user: UUID, id: UUID) throws {
        let deleted = try scope.execute(as: user, "DELETE FROM public.habit_areas WHERE id = \(id) AND user_id = \(user)")
        guard deleted == 1 else { throw StoreError.notFound }
    }

    /// The user's areas in their order (at most the row limit: no pages).
    public func areas(user: UUID) throws -> [Area] {
        try scope.query(as: user, """
            SELECT \(unsafeSQL: Area.columns) FROM public.habit_areas
            WHERE user_id = \(user)
            ORDER BY sort_order NULLS LAST, created_at, id
            """).map(Area.init(row:))
    }

    /// Moves an area just before `before` or just after `after` (one of them; habit.move_area);
    /// notFound when either area is not the user's.
    public func moveArea(user: UUID, id: UUID, before: UUID?, after: UUID?) throws -> Area {
        try Area(row: scope.query(as: user, """
            SELECT \(unsafeSQL: Area.columns) FROM habit.move_area(\(user), \(id), \(before)::uuid, \(after)::uuid)
            """).found())
    }
}

extension Validation {
    static func areaName(_ raw: String) throws -> String {
        try trimmedText(raw, field: "name", maxLength: 100)
    }
}
