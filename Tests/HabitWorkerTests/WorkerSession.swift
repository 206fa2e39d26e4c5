import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// A migrated test database, a `habit serve` worker connected to it as the least-privileged
/// login role `habit_worker`, and a superuser connection for arranging and inspecting rows.
/// Everything is torn down on every path (worker killed and reaped, database dropped).
struct WorkerSession {
    let database: TestDatabase
    let worker: WorkerProcess
    let admin: Connection

    /// Extra arguments every session gets unless it passes its own --pool-size: two
    /// connections keep the many parallel tests light on the shared server.
    static let defaultArguments = ["--pool-size", "2"]

    /// With `HABIT_TEST_WORKER_ROUTE=pgbouncer` (scripts/test.sh's second pass over the
    /// black-box method suites), workers reach the database through a pgbouncer 1.18 of the
    /// session's own in transaction mode, with every worker setting at its default.
    static var routesThroughPgBouncer: Bool { ProcessInfo.processInfo.environment["HABIT_TEST_WORKER_ROUTE"] == "pgbouncer" }

    static func with(arguments: [String] = [], environment: [String: String] = [:], closeOutput: Bool = false,
                     _ body: (WorkerSession) throws -> Void) throws {
        try TestDatabase.with { database in
            let admin = try database.connect()
            defer { admin.close() }
            let extra = arguments.contains("--pool-size") ? arguments : defaultArguments + arguments
            try withWorkerURL(database) { url in
                try WorkerProcess.withServe(databaseURL: url, arguments: extra, environment: environment,
                                            closeOutput: closeOutput) { worker in
                    try body(WorkerSession(database: database, worker: worker, admin: admin))
                    if routesThroughPgBouncer {
                        // Nothing the suite does may end in an internal error behind the pooler.
                        #expect(!worker.stderrText.contains(#""msg":"internal error""#) && !worker.stderrText.contains(#""msg":"database error""#),
                                "\(worker.stderrText.suffix(3_000))")
                    }
                }
            }
        }
    }

    /// The worker URL of `database`, directly or through a pgbouncer that lives while `body` runs.
    private static func withWorkerURL(_ database: TestDatabase, _ body: (String) throws -> Void) throws {
        guard routesThroughPgBouncer else { return try body(try database.workerURL()) }
        // Two server connections for more client connections: the pooler really moves each
        // worker connection between server connections.
        try PgBouncer.with(poolSize: 2) { bouncer in try body(try bouncer.url(user: "habit_worker", database: database.name)) }
    }

    /// Starts another worker on the same database (killed when `body` returns).
    func withAnotherWorker(arguments: [String] = [], environment: [String: String] = [:],
                           _ body: (WorkerProcess) throws -> Void) throws {
        let extra = arguments.contains("--pool-size") ? arguments : Self.defaultArguments + arguments
        try Self.withWorkerURL(database) { url in
            try WorkerProcess.withServe(databaseURL: url, arguments: extra, environment: environment, body)
        }
    }

    /// Runs `body` while the admin holds a row lock on `habit` and the worker's `habits.update`
    /// of it (to `name`, request id `id`) waits for that lock: a request that occupies one of
    /// the worker's connections until `body` returns and the lock is released.
    func whileUpdateWaits(user: UUID, habit: UUID, renamingTo name: String, id: WireJSON,
                          _ body: () throws -> Void) throws {
        try admin.withTransaction { connection in
            try connection.execute("SELECT 1 FROM public.habit_templates WHERE id = \(habit) AND user_id = \(user) FOR UPDATE")
            try worker.sendRequest("habits.update", params: params(user, ["id": .uuid(habit), "name": .string(name)]), id: id)
            try body()
        }
    }

    /// Today in `zone` as PostgreSQL computes it.
    func today(in zone: String = "UTC", dayStart: String = "00:00") throws -> CalendarDate {
        try admin.queryOne("SELECT habit.local_day(now(), \(zone), \(dayStart)::time)").decode(CalendarDate.self, at: 0)
    }

    func habitCount(user: UUID) throws -> Int {
        try admin.queryOne("SELECT count(*) FROM habit_templates WHERE user_id = \(user)").decode(Int.self, at: 0)
    }

    func completionCount(user: UUID) throws -> Int {
        try admin.queryOne("SELECT count(*) FROM habit_completions WHERE user_id = \(user)").decode(Int.self, at: 0)
    }
}

extension WorkerProcess {
    /// Creates a habit for `user` and returns the habit object.
    @discardableResult
    func createHabit(user: UUID, name: String, extra: [WireJSON.Member] = []) throws -> WireJSON {
        try call("habits.create", .object([.init("user_id", .uuid(user)), .init("name", .string(name))] + extra))
    }
}

extension WireJSON {
    /// The `id` member of a habit object as a UUID.
    var habitID: UUID? { self["id"]?.stringValue.flatMap(UUID.init(uuidString:)) }
}

/// Checks an error response: code, data.reason / data.field when given, and the echoed id.
func expectError(_ response: WorkerResponse, code: Int, id: WireJSON?, reason: String? = nil, field: String? = nil,
                 sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(response.result == nil, "expected an error, got \(response.raw)", sourceLocation: sourceLocation)
    #expect(response.code == code, "code in \(response.raw)", sourceLocation: sourceLocation)
    if let id { #expect(response.id == id, "id in \(response.raw)", sourceLocation: sourceLocation) }
    if let reason { #expect(response.reason == reason, "data.reason in \(response.raw)", sourceLocation: sourceLocation) }
    if let field { #expect(response.field == field, "data.field in \(response.raw)", sourceLocation: sourceLocation) }
}
