import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// A migrated test database with a repository connected as the worker's login role
/// (habit_worker: no privileges of its own, only SET LOCAL ROLE authenticated).
struct HabitFixture {
    let database: TestDatabase
    let repository: HabitRepository
    /// The repository's own connection (habit_worker), for inspecting what its statements leave behind.
    let workerConnection: Connection
    /// Superuser connection for arranging and inspecting rows behind the repository's back.
    let admin: Connection

    static func with(_ body: (HabitFixture) throws -> Void) throws {
        try TestDatabase.with { database in
            let workerConnection = try database.connect(user: "habit_worker")
            let fixture = HabitFixture(
                database: database,
                repository: HabitRepository(connection: workerConnection),
                workerConnection: workerConnection,
                admin: try database.connect()
            )
            try body(fixture)
        }
    }

    /// Today in `zone`, as PostgreSQL computes it.
    func today(in zone: String) throws -> CalendarDate {
        try admin.queryOne("SELECT habit.local_date(now(), \(zone))").decode(CalendarDate.self, at: 0)
    }

    func completionCount(user: UUID) throws -> Int {
        try admin.queryOne("SELECT count(*) FROM habit_completions WHERE user_id = \(user)").decode(Int.self, at: 0)
    }
}

func date(_ text: String) -> CalendarDate { CalendarDate(iso8601: text)! }
func instant(_ text: String) -> PostgresTimestamp { PostgresTimestamp(rfc3339: text)! }
