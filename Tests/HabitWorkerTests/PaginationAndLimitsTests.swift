import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Bounded answers: keyset pagination of every list method, per-user row limits kept by the
/// database, the response byte budget, and a batch that stops when nobody can read its answer.
@Suite("habit serve: pagination, row limits, response budget")
struct PaginationAndLimitsTests {
    /// Walks a listing page by page (`limit` each) and returns every item's id, in order.
    static func walk(_ worker: WorkerProcess, _ method: String, _ base: WireJSON, items: String, limit: Int,
                     between: (Int) throws -> Void = { _ in }, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String] {
        var ids: [String] = []
        var cursor: WireJSON = .null
        var page = 0
        while true {
            guard case .object(var members) = base else { throw WalkFailure(description: "params must be an object") }
            members.append(.init("limit", .int(limit)))
            if cursor != .null { members.append(.init("cursor", cursor)) }
            let result = try worker.call(method, .object(members))
            let pageItems = result[items]?.arrayValue ?? []
            #expect(pageItems.count <= limit, sourceLocation: sourceLocation)
            ids += pageItems.compactMap { $0["id"]?.stringValue }
            cursor = result["next_cursor"] ?? .null
            if cursor == .null { return ids }
            #expect(pageItems.count == limit, "a page before the last is full", sourceLocation: sourceLocation)
            try between(page)
            page += 1
            guard page < 10_000 else { throw WalkFailure(description: "walk does not end") }
        }
    }

    @Test("habits.list: pages of any size give the one-call order; inserts and deletes meanwhile skip or repeat nothing that stayed")
    func habitsPages() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            var generator = SeededGenerator(seed: 0x5EED_0013)
            for index in 0..<40 {
                // Many ties and NULLs: sort_order from a small range or absent.
                let order = Int.random(in: -1...5, using: &generator)
                let extra: [WireJSON.Member] = order < 0 ? [] : [.init("sort_order", .int(order))]
                try worker.createHabit(user: user, name: "Habit \(index)", extra: extra)
            }
            let whole = try worker.call("habits.list", params(user, ["limit": 1_000]))
            #expect(whole["next_cursor"] == .null)
            let expected = (whole["habits"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
            #expect(expected.count == 40)
            // Default limit 100: all 40 at once.
            #expect((try worker.call("habits.list", params(user))["habits"]?.arrayValue ?? []).count == 40)
            for limit in [1, 3, 7, 39, 40] {
                #expect(try Self.walk(worker, "habits.list", params(user), items: "habits", limit: limit) == expected, "limit \(limit)")
            }

            // Between pages: delete habits not yet seen and insert new ones (some sorting before
            // the walk's position, some after). Every habit that exists for the whole walk is
            // seen exactly once.
            var deleted: Set<String> = []
            let seen = try Self.walk(worker, "habits.list", params(user), items: "habits", limit: 6) { page in
                let victim = expected[min(expected.count - 1, 6 * (page + 1) + 2)]
                if !deleted.contains(victim) {
                    try worker.call("habits.delete", params(user, ["id": .string(victim)]))
                    deleted.insert(victim)
                }
                try worker.createHabit(user: user, name: "Late \(page)", extra: [.init("sort_order", .int(page % 7 - 1))])
            }
            let stayed = expected.filter { !deleted.contains($0) }
            #expect(Set(seen).count == seen.count, "no habit twice")
            #expect(stayed.allSatisfy(seen.contains), "every habit that stayed was seen")
            #expect(seen.filter { stayed.contains($0) } == stayed, "in order")
        }
    }

    @Test("tasks.list (every view), tasks.today and lists.list: walks equal the whole listing; counts cover the whole day")
    func taskPages() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            let day = "2026-03-10"
            let list = try worker.call("lists.create", params(user, ["name": "Work"]))
            let listID = try #require(list["id"])
            for index in 0..<4 { try worker.call("lists.create", params(user, ["name": .string("L\(index)")])) }
            var generator = SeededGenerator(seed: 0x7A5C)
            for index in 0..<30 {
                var fields: [String: WireJSON] = ["title": .string("T\(index)"), "position": .int(Int.random(in: 1...4, using: &generator))]
                switch index % 3 {
                case 0: fields["scheduled_date"] = .string(day)
                case 1: fields["scheduled_date"] = .string("2999-01-0\(index % 9 + 1)")
                default: break
                }
                if index % 2 == 0 { fields["list_id"] = listID }
                let task = try worker.call("tasks.create", params(user, fields))
                if index % 5 == 0 { try worker.call("tasks.cycle", params(user, ["id": task["id"]!])) }
                if index % 6 == 0 { try worker.call("tasks.set_state", params(user, ["id": task["id"]!, "state": "completed"])) }
            }
            let listings: [(String, WireJSON, String)] = [
                ("tasks.list", params(user, ["view": "inbox"]), "tasks"),
                ("tasks.list", params(user, ["view": "upcoming"]), "tasks"),
                ("tasks.list", params(user, ["view": "list", "list_id": listID]), "tasks"),
                ("tasks.today", params(user, ["date": .string(day)]), "tasks"),
                ("lists.list", params(user), "lists"),
            ]
            for (method, base, items) in listings {
                guard case .object(var members) = base else { continue }
                members.append(.init("limit", 1_000))
                let whole = try worker.call(method, .object(members))
                let expected = (whole[items]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
                #expect(expected.count >= 5, "\(method) \(base)")
                for limit in [1, 4, 5] {
                    #expect(try Self.walk(worker, method, base, items: items, limit: limit) == expected, "\(method) \(base) limit \(limit)")
                }
            }
            // Today's counts are the day's, whatever the page.
            let first = try worker.call("tasks.today", params(user, ["date": .string(day), "limit": 2]))
            #expect(first["total_count"] == 10 && first["completed_count"] == 5, "\(first)")
            #expect(first["tasks"]?.arrayValue?.count == 2)
            // A Today cursor keeps its day even without a date.
            let next = try #require(first["next_cursor"])
            let second = try worker.call("tasks.today", params(user, ["cursor": next, "limit": 2]))
            #expect(second["date"] == .string(day))
        }
    }

    @Test("bad limits and cursors are -32602 naming the field; a cursor of another listing is refused")
    func badPageParams() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            for index in 0..<3 { try worker.createHabit(user: user, name: "H\(index)") }
            let page = try worker.call("habits.list", params(user, ["limit": 1]))
            let habitsCursor = try #require(page["next_cursor"])
            for (method, extra, field) in [
                ("habits.list", ["limit": WireJSON.int(0)], "limit"),
                ("habits.list", ["limit": 1_001], "limit"),
                ("habits.list", ["limit": "10"], "limit"),
                ("habits.list", ["cursor": "not a cursor!"], "cursor"),
                ("habits.list", ["cursor": "djF8aGFiaXRzfHh8eXx6"], "cursor"), // v1|habits|x|y|z
                ("habits.list", ["cursor": 5], "cursor"),
                ("lists.list", ["cursor": habitsCursor], "cursor"),
                ("tasks.list", ["view": "inbox", "cursor": habitsCursor], "cursor"),
                ("tasks.today", ["cursor": habitsCursor], "cursor"),
            ] as [(String, [String: WireJSON], String)] {
                let response = try worker.request(method, params: params(user, extra))
                expectError(response, code: Code.invalidParams, id: nil, field: field)
            }
            // A null cursor is the first page.
            #expect(try worker.call("habits.list", params(user, ["cursor": .null]))["habits"]?.arrayValue?.count == 3)
        }
    }

    @Test("row limits are the database's: the worker answers limit_exceeded, psql as authenticated gets HB001, deletes free room")
    func rowLimits() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            try session.admin.execute("UPDATE habit.row_limits SET max_rows = 2 WHERE table_name IN ('task_lists', 'habit_templates')")
            let first = try worker.call("lists.create", params(user, ["name": "A"]))
            try worker.call("lists.create", params(user, ["name": "B"]))
            let refused = try worker.request("lists.create", params: params(user, ["name": "C"]))
            expectError(refused, code: -32013, id: nil, reason: "limit_exceeded")
            #expect(refused.data?["table"] == "task_lists", "\(refused.raw)")
            // Another user is not affected.
            try worker.call("lists.create", params(UUID(), ["name": "Other"]))
            // Deleting frees room.
            try worker.call("lists.delete", params(user, ["id": first["id"]!]))
            try worker.call("lists.create", params(user, ["name": "C"]))
            #expect(try worker.call("lists.list", params(user))["lists"]?.arrayValue?.count == 2)

            // The same wall for a writer that is not the worker: a multi-row insert as authenticated.
            let error = try #require(throws: PostgresError.self) {
                try session.admin.withTransaction(prelude: [
                    "SET LOCAL ROLE authenticated",
                    "SELECT set_config('request.jwt.claims', \(#"{"sub":"\#(user.uuidString.lowercased())"}"#), true)",
                    // On Citus a claim reaches the shards only as a SET LOCAL (docs/scaling.md).
                    Query(unsafeSQL: CitusCluster.current == nil ? "SELECT 1" : "SET LOCAL request.jwt.claim.sub = '\(user.uuidString.lowercased())'"),
                ]) { connection in
                    try connection.execute("""
                        INSERT INTO public.habit_templates (user_id, name) VALUES (\(user), 'One'), (\(user), 'Two'), (\(user), 'Three')
                        """)
                }
            }
            #expect(error.sqlState == .rowLimitExceeded && error.withFieldsCitusDrops.table == "habit_templates", "\(error)")
            #expect(try session.habitCount(user: user) == 0, "the statement was refused whole")
            try worker.createHabit(user: user, name: "One")
            try worker.createHabit(user: user, name: "Two")
            expectError(try worker.request("habits.create", params: params(user, ["name": "Three"])), code: -32013, id: nil,
                        reason: "limit_exceeded")
        }
    }

    @Test("a result past --max-response-bytes answers response_too_large; a batch stays within the budget")
    func responseBudget() throws {
        try WorkerSession.with(arguments: ["--max-response-bytes", "20000"]) { session in
            let worker = session.worker
            let user = UUID()
            // Control characters are escaped as \u00XX: 6 bytes each on the wire.
            let notes = String(repeating: "\u{1}", count: 2_000)
            for index in 0..<3 { try worker.call("tasks.create", params(user, ["title": .string("T\(index)"), "notes": .string(notes)])) }
            let one = try worker.request("tasks.list", params: params(user, ["view": "inbox", "limit": 1]))
            #expect(one.isSuccess && one.raw.utf8.count <= 20_000, "\(one.raw.utf8.count) bytes")
            let all = try worker.request("tasks.list", params: params(user, ["view": "inbox"]))
            expectError(all, code: -32014, id: nil, reason: "response_too_large")
            #expect(all.data?["limit"] == 20_000)
            // The worker goes on: smaller answers still come.
            #expect(try worker.call("system.ping") == ["ok": true])

            // A batch of three single-task pages of about 12 KB each: the first to finish fits the
            // 20 KB budget, the other two become errors, and the line stays within budget plus errors.
            let call = WorkerProcess.envelope(method: "tasks.list", params: params(user, ["view": "inbox", "limit": 1]), id: nil)
            let line = "[" + (0..<3).map { index -> String in
                guard case .object(var members) = call else { return "" }
                members.insert(.init("id", .int(index)), at: 1)
                return WireJSON.object(members).encoded
            }.joined(separator: ",") + "]"
            try worker.send(line)
            let batch = try worker.readResponse()
            #expect(batch.batch.count == 3)
            #expect(batch.batch.filter(\.isSuccess).count == 1, "\(batch.raw.prefix(300))")
            #expect(batch.batch.filter { $0.reason == "response_too_large" }.count == 2)
            #expect(batch.raw.utf8.count <= 20_000 + 3 * 200, "\(batch.raw.utf8.count) bytes")
        }
    }

    @Test("stdout broken: the rest of a large batch is not run")
    func brokenStdoutStopsABatch() throws {
        try WorkerSession.with(closeOutput: true) { session in
            let worker = session.worker
            let users = (0..<500).map { _ in UUID() }
            let line = "[" + users.enumerated().map { index, user in
                WorkerProcess.envelope(method: "habits.create", params: params(user, ["name": "Batch"]), id: .int(index)).encoded
            }.joined(separator: ",") + "]"
            try worker.send(line)
            #expect(worker.waitForExit(timeout: 30) == 1, "stderr:\n\(worker.stderrText.suffix(2_000))")
            let created = try session.admin.queryOne("SELECT count(*) FROM public.habit_templates").decode(Int.self, at: 0)
            // Before the fix every one of the 500 ran; now the first poll of stdout stops them.
            #expect(created < 50, "\(created) of 500 batch elements ran after stdout broke")
        }
    }
}

struct WalkFailure: Error, CustomStringConvertible {
    let description: String
}
