import Foundation
import HabitClient
import JSONRPC
import PostgresClient
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// HabitClient against real `habit serve` workers spawned over their pipes and the test
/// database. Every client is closed (its workers stopped and reaped) and every database
/// dropped on every path. The time limit is only a hang guard (a broken client would make a
/// test wait for an answer that never comes), never a speed check.
@Suite("HabitClient: workers spawned, calls matched, crashes and close", .timeLimit(.minutes(5)))
struct HabitClientTests {
    /// A migrated database and a client of `workers` workers on it, for `body`.
    static func withClient(workers: Int = 1, arguments: [String] = [], maxLineBytes: Int = 1_048_576,
                           stderrHandler: (@Sendable (HabitClient.WorkerLine) -> Void)? = nil,
                           _ body: (HabitClient, TestDatabase) async throws -> Void) async throws {
        let database = try TestDatabase.create()
        defer { database.drop() }
        let command = WorkerCommand.serve(executable: try WorkerProcess.binaryPath(), databaseURL: try database.workerURL(),
                                          arguments: ["--pool-size", "2"] + arguments, environment: WorkerProcess.childEnvironment())
        let client = try HabitClient(configuration: .init(command: command, workers: workers, maxLineBytes: maxLineBytes,
                                                          restartBackoff: .milliseconds(20), stderrHandler: stderrHandler))
        do {
            try await body(client, database)
        } catch {
            await client.close(timeout: .seconds(5))
            throw error
        }
        await client.close(timeout: .seconds(5))
    }

    /// Locks `habit`'s row in a transaction on `admin` (the caller rolls it back) and sends a
    /// `habits.update` of it, which waits for that lock; returns the stream its answer arrives on.
    /// The ping after the send is answered only once the worker has read the update's line
    /// (lines are read in order, and one worker serves both).
    static func sendBlockedUpdate(_ client: HabitClient, user: UUID, habit: UUID, lockedBy admin: Connection) async throws
        -> AsyncStream<Result<ResponseLine, HabitClientError>> {
        try admin.execute("BEGIN")
        try admin.execute("SELECT 1 FROM public.habit_templates WHERE id = \(habit) FOR UPDATE")
        let (answers, answer) = AsyncStream.makeStream(of: Result<ResponseLine, HabitClientError>.self)
        var params = JSONObject()
        params["user_id"] = .string(user.uuidString.lowercased())
        params["id"] = .string(habit.uuidString.lowercased())
        params["name"] = .string("Renamed")
        try await client.send(method: "habits.update", params: params) { answer.yield($0) }
        #expect(try await client.systemPing().ok)
        return answers
    }

    @Test("many concurrent calls over several workers each get their own answer")
    func concurrentCallsMatchedByID() async throws {
        try await Self.withClient(workers: 3) { client, _ in
            let zones = ["UTC", "Europe/Berlin", "America/New_York", "Asia/Tokyo", "Australia/Sydney"]
            let users = (0..<120).map { _ in UUID() }
            try await withThrowingTaskGroup(of: (UUID, String, Profile).self) { group in
                for (index, user) in users.enumerated() {
                    let zone = zones[index % zones.count]
                    group.addTask { (user, zone, try await client.profileSet(userID: user, timezone: zone)) }
                }
                var answered = 0
                for try await (user, zone, profile) in group {
                    #expect(profile.userID == user && profile.timezone == zone, "a call got another call's answer: \(profile)")
                    answered += 1
                }
                #expect(answered == users.count)
            }
            // Each user's profile is read back from its own worker.
            for (index, user) in users.enumerated().prefix(10) {
                #expect(try await client.profileGet(userID: user).timezone == zones[index % zones.count])
            }
        }
    }

    @Test("typed methods round-trip: habits, completions, the day view, lists and tasks; errors arrive as .rpc")
    func typedMethodsRoundTrip() async throws {
        try await Self.withClient { client, _ in
            let user = UUID()
            #expect(try await client.systemPing().ok)
            let habit = try await client.habitsCreate(userID: user, name: "Stretch", color: "#FF8800", activatedAt: "2026-01-01T00:00:00Z")
            #expect(habit.name == "Stretch" && habit.color == "#FF8800" && habit.isActive)
            let set = try await client.completionsSet(userID: user, templateID: habit.id, date: "2026-03-02", completed: true)
            #expect(set.completed && set.changed)
            let again = try await client.completionsSet(userID: user, templateID: habit.id, date: "2026-03-02", completed: true)
            #expect(again.completed && !again.changed)
            let day = try await client.dayGet(userID: user, date: "2026-03-02")
            #expect(day.date == "2026-03-02" && day.completed == [habit.id] && day.habits.map(\.id) == [habit.id])
            let cleared = try await client.habitsUpdate(userID: user, id: habit.id, color: .clear, sortOrder: .set(7))
            #expect(cleared.color == nil && cleared.sortOrder == 7 && cleared.name == "Stretch")

            let list = try await client.listsCreate(userID: user, name: "Errands")
            let task = try await client.tasksCreate(userID: user, title: "Milk", listID: list.id)
            let done = try await client.tasksSetState(userID: user, id: task.id, state: .completed)
            #expect(done.state == .completed && done.completedAt != nil)
            let page = try await client.tasksList(userID: user, view: .list, listID: list.id)
            #expect(page.tasks.map(\.id) == [task.id] && page.view == .list)

            let missing = UUID()
            do {
                _ = try await client.habitsDeactivate(userID: user, id: missing)
                Issue.record("deactivating a missing habit succeeded")
            } catch let error as HabitClientError {
                #expect(error.rpcError?.code == -32001, "\(error)")
            }

            // A create with a client id, sent again, answers the same row; other fields: id_conflict.
            // Call options reach the worker as envelope members (it would refuse unknown keys).
            let chosen = UUID()
            let options = CallOptions(deadline: .seconds(30), traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
            let first = try await client.habitsCreate(userID: user, name: "Read", id: chosen, options: options)
            let retried = try await client.habitsCreate(userID: user, name: "Read", id: chosen, options: options)
            #expect(first.id == chosen && retried.id == chosen && retried.sortOrder == first.sortOrder)
            do {
                _ = try await client.habitsCreate(userID: user, name: "Write", id: chosen)
                Issue.record("a create reusing an id with other fields succeeded")
            } catch let error as HabitClientError {
                #expect(error.rpcError?.code == -32015, "\(error)")
            }
        }
    }

    @Test("a request line over the limit is refused before anything is sent")
    func lineLimitBeforeSending() async throws {
        // The client's limit is below the worker's (1 MiB): had the line been sent, the worker
        // would have created the habit.
        try await Self.withClient(maxLineBytes: 600) { client, _ in
            let user = UUID()
            let name = String(repeating: "n", count: 700)
            do {
                _ = try await client.habitsCreate(userID: user, name: name)
                Issue.record("an over-long line was sent")
            } catch HabitClientError.requestTooLarge(let method, let bytes, let limit) {
                #expect(method == "habits.create" && bytes > 700 && limit == 600)
            }
            #expect(try await client.habitsList(userID: user).habits.isEmpty)
            // A line just under the limit goes out.
            _ = try await client.habitsCreate(userID: user, name: String(repeating: "n", count: 100))
            #expect(try await client.habitsList(userID: user).habits.count == 1)
        }
    }

    @Test("a worker killed mid-request: that call ends unknownOutcome, the worker is restarted, the next call succeeds")
    func killedWorkerRestarts() async throws {
        try await Self.withClient(arguments: ["--statement-timeout-ms", "600000"]) { client, database in
            let user = UUID()
            let habit = try await client.habitsCreate(userID: user, name: "Locked")
            let firstPID = try #require(client.workerPIDs[0])
            let admin = try database.connect()
            defer { admin.close() }
            let answers = try await Self.sendBlockedUpdate(client, user: user, habit: habit.id, lockedBy: admin)
            #expect(client.inFlight == 1)
            kill(firstPID, SIGKILL)
            var iterator = answers.makeAsyncIterator()
            switch await iterator.next() {
            case .failure(.unknownOutcome(let method, .workerExited(let pid)))?:
                #expect(method == "habits.update" && pid == firstPID)
            case let other:
                Issue.record("expected unknownOutcome(workerExited), got \(String(describing: other))")
            }
            try admin.execute("ROLLBACK")
            let page = try await client.habitsList(userID: user)
            #expect(page.habits.map(\.id) == [habit.id])
            let secondPID = try #require(client.workerPIDs[0])
            #expect(secondPID != firstPID)
        }
    }

    @Test("a worker's stderr lines reach the handler and the stream")
    func stderrLinesSurface() async throws {
        let seen = LockedLines()
        try await Self.withClient(arguments: ["--log-level", "debug"], stderrHandler: { seen.append($0.text) }) { client, _ in
            _ = try await client.profileGet(userID: UUID())
            var found: HabitClient.WorkerLine?
            for await line in client.stderrLines where line.text.contains(#""msg":"request""#) && line.text.contains("profile.get") {
                found = line
                break
            }
            #expect(found?.pid == client.workerPIDs[0])
            #expect(seen.lines.contains { $0.contains(#""msg":"serving""#) })
            #expect(seen.lines.contains { $0.contains(#""msg":"request""#) && $0.contains("profile.get") })
        }
    }

    @Test("close() fails the calls still unanswered, stops the workers, and later calls throw .closed")
    func closeFailsPendingCalls() async throws {
        let database = try TestDatabase.create()
        defer { database.drop() }
        let command = WorkerCommand.serve(executable: try WorkerProcess.binaryPath(), databaseURL: try database.workerURL(),
                                          arguments: ["--pool-size", "2", "--statement-timeout-ms", "600000"],
                                          environment: WorkerProcess.childEnvironment())
        let client = try HabitClient(configuration: .init(command: command))
        let user = UUID()
        let habit = try await client.habitsCreate(userID: user, name: "Locked")
        let pid = try #require(client.workerPIDs[0])
        let admin = try database.connect()
        defer { admin.close() }
        // Answered only after the lock is released: close() gives up first.
        let answers = try await Self.sendBlockedUpdate(client, user: user, habit: habit.id, lockedBy: admin)
        await client.close(timeout: .milliseconds(300))
        var iterator = answers.makeAsyncIterator()
        switch await iterator.next() {
        case .failure(.unknownOutcome(let method, .closed))?:
            #expect(method == "habits.update")
        case let other:
            Issue.record("expected unknownOutcome(closed), got \(String(describing: other))")
        }
        #expect(kill(pid, 0) != 0, "the worker still runs after close()")
        do {
            _ = try await client.systemPing()
            Issue.record("a call after close() succeeded")
        } catch HabitClientError.closed {}
        try admin.execute("ROLLBACK")
    }

    @Test("retry-safe methods are listed in one place; creates only with a client id")
    func retrySafety() throws {
        #expect(HabitMethods.isRetrySafe(method: "completions.set", params: nil))
        #expect(HabitMethods.isRetrySafe(method: "profile.set", params: nil))
        #expect(!HabitMethods.isRetrySafe(method: "completions.toggle", params: nil))
        #expect(!HabitMethods.isRetrySafe(method: "tasks.cycle", params: nil))
        #expect(!HabitMethods.isRetrySafe(method: "habits.create", params: ["name": "x"]))
        #expect(HabitMethods.isRetrySafe(method: "habits.create", params: ["name": "x", "id": .string(UUID().uuidString)]))

        // The same list as the worker's own declarations (x-retry-safe in docs/openrpc.json,
        // which another test keeps equal to rpc.discover and to protocol.md's retry table).
        let path = TestDatabase.repositoryRoot.appendingPathComponent("docs/openrpc.json").path
        let document = try JSONValue(parsing: try String(contentsOfFile: path, encoding: .utf8))
        var declared: [String: String] = [:]
        for case .object(let method) in document["methods"]?.arrayValue ?? [] {
            if let name = method["name"]?.stringValue { declared[name] = method["x-retry-safe"]?.stringValue }
        }
        #expect(declared.count == 57, "\(declared.keys.sorted())") // widget.get + 32 + sync.pull/push + changes.(un)subscribe + account.export/import/delete + checkins.add/remove/list + notes.set + habits.move/archive/unarchive + reminders.set/list/due/claim/ack + areas.create/update/delete/list/move
        #expect(Set(declared.filter { $0.value == "always" }.keys) == HabitMethods.retrySafe)
        #expect(Set(declared.filter { $0.value == "with_id" }.keys) == HabitMethods.retrySafeWithID)
    }

    @Test("schedules typed both ways, and habitsHistory")
    func schedulesAndHistory() async throws {
        try await Self.withClient { client, _ in
            let user = UUID()
            let habit = try await client.habitsCreate(userID: user, name: "Stretch", activatedAt: "2026-01-01T00:00:00Z")
            #expect(habit.schedule == .daily)
            let weekly = try await client.habitsUpdate(userID: user, id: habit.id, schedule: .weekdays([5, 1]))
            #expect(weekly.schedule == .weekdays([1, 5]))
            let history = try await client.habitsHistory(userID: user, id: habit.id)
            #expect(history.id == habit.id && history.periods.map(\.schedule) == [.daily, .weekdays([1, 5])])
            #expect(history.periods.first?.startedAt == "2026-01-01T00:00:00Z" && history.periods.last?.endedAt == nil)
            for schedule: Schedule in [.everyNDays(3), .timesPerWeek(2)] {
                #expect(try await client.habitsCreate(userID: user, name: "Shaped", schedule: schedule).schedule == schedule)
            }
        }
    }

    @Test("habitsStats, statsCalendar and dayGet(include: [.streaks]) typed")
    func statsTyped() async throws {
        try await Self.withClient { client, _ in
            let user = UUID()
            _ = try await client.profileSet(userID: user, timezone: "UTC")
            let habit = try await client.habitsCreate(userID: user, name: "Stretch", activatedAt: "2026-01-01T00:00:00Z")
            let weekly = try await client.habitsCreate(userID: user, name: "Swim", activatedAt: "2026-01-01T00:00:00Z", schedule: .timesPerWeek(2))
            for date in ["2026-01-01", "2026-01-02"] {
                _ = try await client.completionsSet(userID: user, templateID: habit.id, date: date, state: .done)
            }
            _ = try await client.completionsSet(userID: user, templateID: habit.id, date: "2026-01-03", state: .skipped)
            let stats = try await client.habitsStats(userID: user, date: "2026-01-03")
            #expect(stats.date == "2026-01-03" && stats.habits.map(\.id) == [habit.id, weekly.id])
            let one = try #require(stats.habits.first)
            #expect(one.unit == .days && one.currentStreak == Streak(length: 2, start: "2026-01-01"))
            #expect(one.longestStreak == LongestStreak(length: 2, start: "2026-01-01", end: "2026-01-02"))
            #expect(one.rate7 == 1.0 && one.totalDone == 2 && one.lastDone == "2026-01-02")
            #expect(stats.habits.last?.unit == .weeks && stats.habits.last?.rate7 == nil && stats.habits.last?.lastDone == nil)
            #expect(try await client.habitsStats(userID: user, id: habit.id, date: "2026-01-03").habits == [one])

            let calendar = try await client.statsCalendar(userID: user, id: habit.id, from: "2026-01-01", to: "2026-01-03")
            #expect(calendar.days.map(\.level) == [4, 4, 0] && calendar.days.last?.skipped == 1)

            let day = try await client.dayGet(userID: user, date: "2026-01-03", include: [.streaks])
            #expect(day.habits.first?.currentStreak == Streak(length: 2, start: "2026-01-01"))
            #expect(try await client.dayGet(userID: user, date: "2026-01-03").habits.first?.currentStreak == nil)
            do {
                _ = try await client.habitsStats(userID: UUID(), id: habit.id)
                Issue.record("another user's habit had stats")
            } catch let error as HabitClientError {
                #expect(error.rpcError?.code == -32001, "\(error)")
            }
        }
    }

    @Test("call options become params.deadline_ms and params.traceparent")
    func optionsInParams() throws {
        let options = CallOptions(deadline: .milliseconds(1_500), traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        let line = WorkerConnection.requestLine(id: 7, method: "day.get", params: ["user_id": "u"], options: options)
        let json = try JSONValue(parsing: line)
        #expect(json["id"] == .int(7) && json["method"] == "day.get")
        #expect(json["params"]?["deadline_ms"] == .int(1_500))
        #expect(json["params"]?["traceparent"] == .string("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
        #expect(json["params"]?["user_id"] == "u")
    }
}

final class LockedLines: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [String] = []
    func append(_ line: String) { lock.withLock { storage.append(line) } }
    var lines: [String] { lock.withLock { storage } }
}
