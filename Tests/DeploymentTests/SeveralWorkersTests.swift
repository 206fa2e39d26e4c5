import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Four worker processes hammering the same completion keys at once, straight to the server
/// and through pgbouncer: every request succeeds, the unique key holds, and the final state
/// is exactly what the reported changes add up to.
@Suite("deployment: several workers on overlapping keys", .serialized)
struct SeveralWorkersTests {
    static let workerCount = 4
    static let operationsPerWorker = 1_000
    static let dates = ["2025-03-10", "2025-03-11", "2025-03-12"]

    /// One (user, habit, date). Habit 0 of each user only ever gets toggles; habit 1 gets
    /// toggles and sets (true and false) mixed.
    struct Key: Hashable {
        let user: Int
        let habit: Int
        let date: Int
        var togglesOnly: Bool { habit == 0 }
    }

    @Test("4 workers × 1,000 concurrent completions.set/toggle on 24 shared keys: no errors, no duplicates, final state adds up",
          arguments: [Route.direct, Route.pgbouncer])
    func overlappingKeys(route: Route) throws {
        try TestDatabase.with { database in
            switch route {
            case .direct:
                try run(databaseURL: try database.workerURL(), arguments: ["--pool-size", "4"], database: database, bouncer: nil)
            case .pgbouncer:
                try PgBouncer.with(poolSize: 4) { bouncer in
                    try run(databaseURL: try bouncer.url(user: "habit_worker", database: database.name),
                            arguments: ["--pool-size", "4", "--prepared-statements", "off"], database: database, bouncer: bouncer)
                }
            }
        }
    }

    func run(databaseURL: String, arguments: [String], database: TestDatabase, bouncer: PgBouncer?) throws {
        let admin = try database.connect()
        defer { admin.close() }
        try Workers.with(count: Self.workerCount, databaseURL: databaseURL, arguments: arguments) { workers in
            let users = (0..<4).map { _ in UUID() }
            var habits = [[UUID]]()
            for (u, user) in users.enumerated() {
                habits.append(try (0..<2).map { h in
                    let result = try workers[(u + h) % workers.count].call("habits.create", params(user, [
                        "name": .string("Habit \(h)"), "activated_at": "2020-01-01T00:00:00Z",
                    ]))
                    return try #require(result["id"]?.stringValue.flatMap(UUID.init(uuidString:)))
                })
            }
            let keys = users.indices.flatMap { u in (0..<2).flatMap { h in Self.dates.indices.map { Key(user: u, habit: h, date: $0) } } }

            enum Operation { case toggle, setTrue, setFalse }
            var operations = [[(key: Key, operation: Operation)]]()
            for worker in 0..<workers.count {
                var generator = SeededGenerator(seed: 0x5EED_0000 + UInt64(worker))
                operations.append((0..<Self.operationsPerWorker).map { _ in
                    let key = keys.randomElement(using: &generator)!
                    let operation: Operation = key.togglesOnly ? .toggle : [.toggle, .toggle, .setTrue, .setFalse].randomElement(using: &generator)!
                    return (key, operation)
                })
            }
            let plan = operations.map { list in
                list.map { key, operation in
                    var members: [String: WireJSON] = ["template_id": .uuid(habits[key.user][key.habit]), "date": .string(Self.dates[key.date])]
                    if operation != .toggle { members["completed"] = .bool(operation == .setTrue) }
                    return Call(method: operation == .toggle ? "completions.toggle" : "completions.set", params: params(users[key.user], members))
                }
            }
            let responses = try exchange(workers, plan)

            // Every request succeeded; each reports whether it added or removed the row.
            var delta = [Key: Int]()
            var toggles = [Key: Int]()
            var failures = [String]()
            for worker in responses.indices {
                for (index, response) in responses[worker].enumerated() {
                    let (key, operation) = operations[worker][index]
                    guard let result = response.result, let completed = result["completed"]?.boolValue else {
                        failures.append(response.raw)
                        continue
                    }
                    switch operation {
                    case .toggle:
                        toggles[key, default: 0] += 1
                        delta[key, default: 0] += completed ? 1 : -1
                    case .setTrue, .setFalse:
                        #expect(completed == (operation == .setTrue), "\(response.raw)")
                        if result["changed"] == true { delta[key, default: 0] += completed ? 1 : -1 }
                    }
                }
            }
            #expect(failures.isEmpty, "\(failures.count) failed: \(failures.prefix(5))")

            // On the server: at most one row per key, and exactly the rows the changes add up to.
            #expect(try admin.count("""
                SELECT count(*) FROM (SELECT 1 FROM habit_completions GROUP BY user_id, template_id, completed_date HAVING count(*) > 1) AS duplicates
                """) == 0)
            var expectedTotal = 0
            for key in keys {
                let rows = try admin.count("""
                    SELECT count(*) FROM habit_completions
                    WHERE user_id = \(users[key.user]) AND template_id = \(habits[key.user][key.habit]) AND completed_date = \(Self.dates[key.date])::date
                    """)
                #expect(rows == 0 || rows == 1, "\(key): \(rows) rows")
                #expect(delta[key, default: 0] == rows, "\(key): the reported changes add up to \(delta[key, default: 0]), the table has \(rows)")
                if key.togglesOnly {
                    #expect(rows == toggles[key, default: 0] % 2, "\(key): \(toggles[key, default: 0]) toggles left \(rows) rows")
                }
                expectedTotal += rows
            }
            #expect(try admin.count("SELECT count(*) FROM habit_completions") == expectedTotal)
            #expect(toggles.values.reduce(0, +) > Self.workerCount * Self.operationsPerWorker / 2, "the mix is mostly toggles")

            if let bouncer {
                // 16 client connections took turns on at most 4 server connections.
                #expect(try bouncer.clients(database: database.name, user: "habit_worker").count == 16)
                #expect(try bouncer.servers(database: database.name, user: "habit_worker").count <= bouncer.poolSize)
            }
            try Workers.stop(workers)
        }
    }
}
