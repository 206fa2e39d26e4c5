import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// A user's requests take effect in the order the worker read them (docs/protocol.md,
/// "Ordering, concurrency and backpressure"); different users' requests still run in parallel.
/// Every request here is written before any answer is read, as a gateway forwarding quick taps would.
@Suite("habit serve: a user's requests in order")
struct UserOrderTests {
    /// One line per request, written with one write: the worker reads them as fast as it can.
    private static func sendAll(_ worker: WorkerProcess, _ requests: [(method: String, params: WireJSON, id: WireJSON)]) throws {
        var bytes: [UInt8] = []
        for request in requests {
            bytes += Array(WorkerProcess.envelope(method: request.method, params: request.params, id: request.id).encoded.utf8) + [0x0A]
        }
        try worker.sendRaw(bytes)
    }

    private func completion(_ session: WorkerSession, user: UUID, habit: UUID, date: String) throws -> Bool {
        try session.admin.queryOne("""
            SELECT count(*) FROM habit_completions WHERE user_id = \(user) AND template_id = \(habit) AND completed_date = \(date)::date
            """).decode(Int.self, at: 0) == 1
    }

    @Test("1,000 alternating completions.set of one user, sent without waiting, end in the last one's state", arguments: [
        (pool: 4, maxInFlight: 64, users: 1, count: 1_000),
        // Small places and one connection: a waiting request holds a place, the one it waits for must still run.
        (pool: 1, maxInFlight: 1, users: 1, count: 200),
        (pool: 2, maxInFlight: 3, users: 3, count: 300),
        (pool: 4, maxInFlight: 16, users: 5, count: 1_000),
    ])
    func alternatingSets(pool: Int, maxInFlight: Int, users userCount: Int, count: Int) throws {
        try WorkerSession.with(arguments: ["--pool-size", "\(pool)", "--max-in-flight", "\(maxInFlight)"]) { session in
            let worker = session.worker
            let users = (0..<userCount).map { _ in UUID() }
            let habits = try users.map { try #require(try worker.createHabit(user: $0, name: "Tapped").habitID) }
            let today = try session.today().description
            for round in 0..<5 {
                // Each user's last request leaves its habit completed in even rounds, cleared in odd ones.
                let last = round % 2 == 0
                var requests: [(method: String, params: WireJSON, id: WireJSON)] = []
                for index in 0..<count {
                    let user = index % userCount
                    let remaining = (count - 1 - index) / userCount // that user's requests still to come
                    let completed = (remaining % 2 == 0) == last
                    requests.append(("completions.set", params(users[user], [
                        "template_id": .uuid(habits[user]), "date": .string(today), "completed": .bool(completed),
                    ]), .string("set-\(round)-\(index)")))
                }
                try Self.sendAll(worker, requests)
                var lastResponse: [Int: WorkerResponse] = [:]
                for _ in 0..<count {
                    let response = try worker.readResponse()
                    #expect(response.isSuccess, "\(response.raw)")
                    let index = try #require(response.id?.stringValue?.split(separator: "-").last.flatMap { Int($0) }, "\(response.raw)")
                    if index >= count - userCount { lastResponse[index % userCount] = response }
                }
                for (user, habit) in zip(users.indices, habits) {
                    #expect(try completion(session, user: users[user], habit: habit, date: today) == last,
                            "round \(round), user \(user): the database holds an earlier request's state")
                    #expect(lastResponse[user]?.result?["completed"] == .bool(last), "\(lastResponse[user]?.raw ?? "no response")")
                }
            }
        }
    }

    @Test("a habits.create followed at once by reads of the same user: the reads see the habit")
    func readsSeeTheCreate() throws {
        try WorkerSession.with(arguments: ["--pool-size", "4"]) { session in
            let worker = session.worker
            let today = try session.today().description
            for round in 0..<50 {
                let user = UUID()
                try Self.sendAll(worker, [
                    ("habits.create", params(user, ["name": "Fresh"]), .string("create-\(round)")),
                    ("day.get", params(user, ["date": .string(today)]), .string("day-\(round)")),
                    ("habits.list", params(user), .string("list-\(round)")),
                ])
                let created = try #require(try worker.response(id: .string("create-\(round)")).result?.habitID)
                let day = try worker.response(id: .string("day-\(round)"))
                #expect(day.result?["habits"]?.arrayValue?.map { $0["id"] } == [.uuid(created)], "round \(round): \(day.raw)")
                let list = try worker.response(id: .string("list-\(round)"))
                #expect(list.result?["habits"]?.arrayValue?.map { $0["id"] } == [.uuid(created)], "round \(round): \(list.raw)")
            }
        }
    }

    @Test("within a batch, a user's elements take effect in element order")
    func batchElementsInOrder() throws {
        try WorkerSession.with(arguments: ["--pool-size", "4"]) { session in
            let worker = session.worker
            let today = try session.today().description
            for round in 0..<20 {
                let user = UUID()
                let other = UUID()
                let elements: [WireJSON] = [
                    WorkerProcess.envelope(method: "habits.create", params: params(user, ["name": "First"]), id: "create"),
                    WorkerProcess.envelope(method: "habits.list", params: params(other), id: "other"),
                    WorkerProcess.envelope(method: "system.ping", params: nil, id: "ping"),
                    WorkerProcess.envelope(method: "day.get", params: params(user, ["date": .string(today)]), id: "day"),
                    WorkerProcess.envelope(method: "habits.list", params: params(user), id: "list"),
                ]
                try worker.send(.array(elements))
                let batch = try worker.readResponse().batch
                #expect(batch.allSatisfy { $0.isSuccess }, "round \(round): \(batch.map(\.raw))")
                let created = try #require(batch.first { $0.id == "create" }?.result?.habitID)
                for id: WireJSON in ["day", "list"] {
                    let response = batch.first { $0.id == id }
                    #expect(response?.result?["habits"]?.arrayValue?.map { $0["id"] } == [.uuid(created)], "round \(round): \(response?.raw ?? "missing")")
                }
            }
        }
    }

    /// Every element but the first waits for the one before it while holding a place: with
    /// two places and one connection, the batch must still run to its end.
    @Test("a batch of one user's writes with two places and one connection: all run, in element order")
    func batchWithFewPlaces() throws {
        try WorkerSession.with(arguments: ["--pool-size", "1", "--max-in-flight", "2"]) { session in
            let worker = session.worker
            let user = UUID()
            let habit = try #require(try worker.createHabit(user: user, name: "Batched").habitID)
            let today = try session.today().description
            for last in [true, false, true] {
                let elements: [WireJSON] = (0..<50).map { index in
                    WorkerProcess.envelope(method: "completions.set", params: params(user, [
                        "template_id": .uuid(habit), "date": .string(today), "completed": .bool((49 - index) % 2 == 0 ? last : !last),
                    ]), id: .int(index))
                }
                try worker.send(.array(elements))
                let batch = try worker.readResponse().batch
                #expect(batch.count == 50 && batch.allSatisfy { $0.isSuccess }, "\(batch.map(\.raw))")
                // In element order, each set changes what the one before left.
                #expect(batch.dropFirst().allSatisfy { $0.result?["changed"] == true }, "\(batch.map(\.raw))")
                #expect(try completion(session, user: user, habit: habit, date: today) == last)
            }
        }
    }

    /// User A's update waits for a row lock the test holds; A's next request waits behind it,
    /// while user B's requests (on the other connections) are answered.
    @Test("one user's blocked request holds back only that user's later requests")
    func otherUsersRunMeanwhile() throws {
        try WorkerSession.with(arguments: ["--pool-size", "4", "--statement-timeout-ms", "25000"]) { session in
            let worker = session.worker
            let userA = UUID()
            let userB = UUID()
            let habitA = try #require(try worker.createHabit(user: userA, name: "Blocked").habitID)
            let habitB = try #require(try worker.createHabit(user: userB, name: "Free").habitID)
            let today = try session.today().description
            try session.whileUpdateWaits(user: userA, habit: habitA, renamingTo: "Unblocked", id: "slow") {
                var requests: [(method: String, params: WireJSON, id: WireJSON)] = [
                    ("habits.list", params(userA), "a-list"),
                    ("completions.set", params(userA, ["template_id": .uuid(habitA), "date": .string(today), "completed": true]), "a-set"),
                ]
                for index in 0..<10 {
                    requests.append(("completions.set", params(userB, [
                        "template_id": .uuid(habitB), "date": .string(today), "completed": .bool(index % 2 == 0),
                    ]), .string("b-set-\(index)")))
                    requests.append(("day.get", params(userB, ["date": .string(today)]), .string("b-day-\(index)")))
                }
                try Self.sendAll(worker, requests)
                for index in 0..<10 {
                    let set = try worker.response(id: .string("b-set-\(index)"))
                    #expect(set.result?["completed"] == .bool(index % 2 == 0), "\(set.raw)")
                    #expect(set.result?["changed"] == true, "B's sets ran in order: \(set.raw)")
                    let day = try worker.response(id: .string("b-day-\(index)"))
                    #expect(day.result?["completed"]?.arrayValue == (index % 2 == 0 ? [.uuid(habitB)] : []), "\(day.raw)")
                }
                let early = worker.bufferedResponses.filter { $0.id == "slow" || $0.id == "a-list" || $0.id == "a-set" }
                #expect(early.isEmpty, "A's requests were answered while its first one was blocked: \(early.map(\.raw))")
            }
            #expect(try worker.response(id: "slow").result?["name"] == "Unblocked")
            // Read after the update (in order): it sees the new name.
            let list = try worker.response(id: "a-list")
            #expect(list.result?["habits"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["Unblocked"], "\(list.raw)")
            #expect(try worker.response(id: "a-set").result?["completed"] == true)
        }
    }
}
