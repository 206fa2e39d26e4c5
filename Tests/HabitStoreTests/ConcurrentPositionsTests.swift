import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Default positions under concurrency (issue 15, finding 7): creates of one user from several
/// sessions at once — as several workers, or one worker's several connections, would send them
/// — never get the same `sort_order` or task `position`. Each round releases eight creators at
/// once from a barrier; with 0007's functions (max + 1 in the caller's snapshot) most rounds
/// gave duplicates.
@Suite(.serialized) struct ConcurrentPositionsTests {
    static let sessions = 8
    static let rounds = 5

    /// Runs `body` on `sessions` threads, each with its own connection as the worker's role
    /// (made on its thread: a connection belongs to one thread), released together once all
    /// are connected.
    private func concurrently(_ database: TestDatabase, _ body: @escaping @Sendable (Connection) throws -> Void) throws {
        let url = try database.workerURL()
        let ready = DispatchSemaphore(value: 0)
        let start = DispatchSemaphore(value: 0)
        let group = DispatchGroup()
        let failures = LockedList()
        for _ in 0..<Self.sessions {
            group.enter()
            Thread {
                defer { group.leave() }
                let connection: Connection
                do {
                    connection = try Connection(url)
                } catch {
                    failures.append("connect: \(error)")
                    ready.signal()
                    return
                }
                defer { connection.close() }
                ready.signal()
                start.wait()
                do { try body(connection) } catch { failures.append("\(error)") }
            }.start()
        }
        for _ in 0..<Self.sessions { ready.wait() }
        for _ in 0..<Self.sessions { start.signal() }
        group.wait()
        #expect(failures.items.isEmpty, "\(failures.items)")
    }

    @Test("eight concurrent habits.create of one user get eight different sort orders, every round")
    func habitSortOrders() throws {
        try TestDatabase.with { database in
            let admin = try database.connect()
            for _ in 0..<Self.rounds {
                let user = UUID()
                try concurrently(database) { connection in
                    _ = try HabitRepository(connection: connection).createHabit(user: user, HabitDraft(name: "Habit"))
                }
                let orders = try admin.query("SELECT sort_order FROM habit_templates WHERE user_id = \(user) ORDER BY sort_order")
                    .map { try $0.decode(Int.self, at: 0) }
                #expect(orders == Array(1...Self.sessions), "\(orders)")
            }
        }
    }

    @Test("eight concurrent tasks.create of one user on one day (and in the inbox) get eight different positions")
    func taskPositions() throws {
        try TestDatabase.with { database in
            let admin = try database.connect()
            for round in 0..<Self.rounds {
                let user = UUID()
                let day: CalendarDate? = round % 2 == 0 ? CalendarDate(year: 2026, month: 11, day: 23) : nil
                try concurrently(database) { connection in
                    _ = try TaskRepository(connection: connection).createTask(user: user, TaskDraft(title: "Task", scheduledDate: day))
                }
                let positions = try admin.query("SELECT position FROM tasks WHERE user_id = \(user) ORDER BY position")
                    .map { try $0.decode(Int.self, at: 0) }
                #expect(positions == Array(1...Self.sessions), "day \(day?.description ?? "inbox"): \(positions)")
            }
        }
    }
}

private final class LockedList: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [String] = []
    func append(_ item: String) { lock.withLock { list.append(item) } }
    var items: [String] { lock.withLock { list } }
}
