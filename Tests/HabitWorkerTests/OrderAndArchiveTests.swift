import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// habits.move, habits.archive and habits.unarchive (issue 33, item 2) over the pipes.
@Suite("habit serve: habit order and archive")
struct OrderAndArchiveTests {
    static func order(_ worker: WorkerProcess, _ user: UUID) throws -> [UUID] {
        try (worker.call("habits.list", params(user, ["include_inactive": true, "include_archived": true]))["habits"]?.arrayValue ?? [])
            .map { try #require($0.habitID) }
    }

    @Test("random moves give the model's order: before and after, first and last, with renumbering and NULL sort_orders; sort_orders stay distinct")
    func randomMovesFollowTheModel() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            var model = try (0..<6).map { try #require(worker.createHabit(user: user, name: "H\($0)").habitID) }
            #expect(try Self.order(worker, user) == model)
            // Three habits without a sort_order (a seed app's insert): they come last, by created_at, id.
            let unordered = try (6..<9).map { index in
                try #require(UUID(uuidString: session.admin.queryOne("""
                    INSERT INTO public.habit_templates (user_id, name) VALUES (\(user), \("H\(index)")) RETURNING id::text
                    """).decode(String.self, at: 0)))
            }
            let tail = try session.admin.query("""
                SELECT id::text FROM public.habit_templates WHERE user_id = \(user) AND sort_order IS NULL ORDER BY created_at, id
                """).map { try #require(UUID(uuidString: $0.decode(String.self, at: 0))) }
            #expect(Set(tail) == Set(unordered))
            model += tail
            #expect(try Self.order(worker, user) == model)
            var rng = SeededGenerator(seed: 33)
            for step in 0..<60 {
                let habit = model[Int.random(in: 0..<model.count, using: &rng)]
                var anchor = habit
                while anchor == habit { anchor = model[Int.random(in: 0..<model.count, using: &rng)] }
                let before = Bool.random(using: &rng)
                let moved = try worker.call("habits.move", params(user, ["template_id": .uuid(habit), before ? "before" : "after": .uuid(anchor)]))
                #expect(moved.habitID == habit)
                model.removeAll { $0 == habit }
                let at = try #require(model.firstIndex(of: anchor))
                model.insert(habit, at: before ? at : at + 1)
                let actual = try Self.order(worker, user)
                #expect(actual == model, "step \(step): \(habit) \(before ? "before" : "after") \(anchor)")
                guard actual == model else { return }
            }
            let orders = try session.admin.query("SELECT sort_order FROM public.habit_templates WHERE user_id = \(user)")
                .map { try $0.decode(Int32?.self, at: 0) }
            #expect(orders.allSatisfy { $0 != nil } && Set(orders).count == orders.count, "\(orders)")
            // A repeat writes nothing: the habit is already there.
            let last = try #require(model.last), beforeLast = model[model.count - 2]
            let updated = try worker.call("habits.list", params(user, ["include_archived": true]))["habits"]?.arrayValue?.first { $0.habitID == last }?["updated_at"]
            _ = try worker.call("habits.move", params(user, ["template_id": .uuid(last), "after": .uuid(beforeLast)]))
            #expect(try worker.call("habits.list", params(user, ["include_archived": true]))["habits"]?.arrayValue?.first { $0.habitID == last }?["updated_at"] == updated)
        }
    }

    @Test("moves sent together on four connections all land, each habit once, sort_orders distinct")
    func concurrentMoves() throws {
        try WorkerSession.with(arguments: ["--pool-size", "4"]) { session in
            let worker = session.worker
            let user = UUID()
            let habits = try (0..<8).map { try #require(worker.createHabit(user: user, name: "C\($0)").habitID) }
            // Every pair (i, i + 4) swapped around at once, plus moves to the front: 16 requests in flight.
            for round in 0..<2 {
                for index in 0..<8 {
                    let other = habits[(index + 3 + round) % 8]
                    try worker.sendRequest("habits.move", params: params(user, ["template_id": .uuid(habits[index]),
                                                                                 index % 2 == 0 ? "before" : "after": .uuid(other)]),
                                           id: .string("m\(round)-\(index)"))
                }
            }
            for round in 0..<2 {
                for index in 0..<8 {
                    #expect(try worker.response(id: .string("m\(round)-\(index)")).result != nil)
                }
            }
            let final = try Self.order(worker, user)
            #expect(Set(final) == Set(habits) && final.count == habits.count)
            let orders = try session.admin.query("SELECT sort_order FROM public.habit_templates WHERE user_id = \(user)")
                .map { try $0.decode(Int32?.self, at: 0) }
            #expect(Set(orders).count == orders.count, "two moves took the same place: \(orders)")
        }
    }

    @Test("habits.move refuses: neither or both anchors, itself, an unknown or another user's habit")
    func moveErrors() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID(), other = UUID()
            let a = try #require(worker.createHabit(user: user, name: "A").habitID)
            let b = try #require(worker.createHabit(user: user, name: "B").habitID)
            let foreign = try #require(worker.createHabit(user: other, name: "X").habitID)
            expectError(try worker.request("habits.move", params: params(user, ["template_id": .uuid(a)])),
                        code: Code.invalidParams, id: nil, reason: "required", field: "before")
            expectError(try worker.request("habits.move", params: params(user, ["template_id": .uuid(a), "before": .uuid(b), "after": .uuid(b)])),
                        code: Code.invalidParams, id: nil, reason: "not_allowed", field: "after")
            expectError(try worker.request("habits.move", params: params(user, ["template_id": .uuid(a), "after": .uuid(a)])),
                        code: Code.invalidParams, id: nil, reason: "not_allowed", field: "after")
            expectError(try worker.request("habits.move", params: params(user, ["template_id": .uuid(a), "before": "nope"])),
                        code: Code.invalidParams, id: nil, reason: "invalid_uuid", field: "before")
            for (template, anchor) in [(a, foreign), (foreign, a), (UUID(), b), (a, UUID())] {
                expectError(try worker.request("habits.move", params: params(user, ["template_id": .uuid(template), "before": .uuid(anchor)])),
                            code: Code.notFound, id: nil, reason: "not_found")
            }
            #expect(try Self.order(worker, user) == [a, b])
        }
    }

    @Test("an archived habit is gone from day.get, habits.list, the stats lists and the calendar; kept everywhere else; unarchive brings it back")
    func archive() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            let today = try session.today()
            let start = today.adding(days: -10)
            let kept = try #require(worker.createHabit(user: user, name: "Kept", extra: [.init("activated_at", .string("\(start)T12:00:00Z"))]).habitID)
            let gone = try #require(worker.createHabit(user: user, name: "Gone", extra: [.init("activated_at", .string("\(start)T12:00:00Z"))]).habitID)
            for back in 1...3 {
                _ = try worker.call("completions.set", params(user, ["template_id": .uuid(gone), "date": .string(today.adding(days: -back).description), "completed": true]))
            }
            let archived = try worker.call("habits.archive", params(user, ["template_id": .uuid(gone)]))
            let at = try #require(archived["archived_at"]?.stringValue)
            #expect(archived["is_active"] == true, "archiving does not deactivate: \(archived)")
            #expect(try worker.call("habits.archive", params(user, ["template_id": .uuid(gone)]))["archived_at"]?.stringValue == at, "the first time stays")

            let day = try worker.call("day.get", params(user, ["date": .string(today.description)]))
            #expect(day["habits"]?.arrayValue?.map(\.habitID) == [kept], "\(day)")
            #expect(try worker.call("habits.list", params(user))["habits"]?.arrayValue?.map(\.habitID) == [kept])
            #expect(try Self.order(worker, user) == [kept, gone])
            #expect(try worker.call("habits.stats", params(user))["habits"]?.arrayValue?.map { $0["id"] } == [.uuid(kept)])
            // By id it still answers, with its history.
            let stats = try worker.call("habits.stats", params(user, ["id": .uuid(gone)]))
            #expect(stats["habits"]?[0]?["total_done"] == 3, "\(stats)")
            let calendar = try worker.call("stats.calendar", params(user, ["from": .string(today.adding(days: -2).description), "to": .string(today.description)]))
            #expect(calendar["days"]?.arrayValue?.map { $0["due"] } == [1, 1, 1], "only Kept is counted: \(calendar)")
            #expect(try worker.call("stats.calendar", params(user, ["id": .uuid(gone), "from": .string(today.adding(days: -1).description),
                                                                   "to": .string(today.adding(days: -1).description)]))["days"]?[0]?["done"] == 1)
            // Its completions can still be written; sync and export carry archived_at.
            _ = try worker.call("completions.set", params(user, ["template_id": .uuid(gone), "date": .string(today.description), "completed": true]))
            let pulled = try worker.call("sync.pull", params(user))["changes"]?["habits"]?.arrayValue?.first { $0.habitID == gone }
            #expect(pulled?["archived_at"]?.stringValue == at, "\(String(describing: pulled))")
            let exported = try worker.call("account.export", params(user))["document"]?["habits"]?.arrayValue?.first { $0["id"] == .uuid(gone) }
            #expect(exported?["archived_at"]?.stringValue == at, "\(String(describing: exported))")

            let back = try worker.call("habits.unarchive", params(user, ["template_id": .uuid(gone)]))
            #expect(back["archived_at"] == .null)
            #expect(try worker.call("day.get", params(user, ["date": .string(today.description)]))["habits"]?.arrayValue?.map(\.habitID) == [kept, gone])
            #expect(try worker.call("habits.stats", params(user, ["id": .uuid(gone)]))["habits"]?[0]?["total_done"] == 4)
            expectError(try worker.request("habits.archive", params: params(UUID(), ["template_id": .uuid(gone)])),
                        code: Code.notFound, id: nil, reason: "not_found")
        }
    }

    @Test("account.import carries archived_at: a document's archived habit arrives archived; one without it arrives not archived")
    func importCarriesArchive() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID(), copy = UUID()
            let habit = try #require(worker.createHabit(user: user, name: "Old").habitID)
            let at = try #require(worker.call("habits.archive", params(user, ["template_id": .uuid(habit)]))["archived_at"])
            let document = try #require(worker.call("account.export", params(user))["document"])
            _ = try worker.call("account.import", params(copy, ["document": document, "mode": "merge"]))
            let imported = try worker.call("habits.list", params(copy, ["include_archived": true]))["habits"]?[0]
            #expect(imported?["archived_at"] == at, "\(String(describing: imported))")
            #expect(try worker.call("habits.list", params(copy))["habits"]?.arrayValue?.isEmpty == true)
            expectError(try worker.request("account.import", params: params(copy, ["mode": "merge", "document": .object([
                .init("format", "habit-account"), .init("version", 1), .init("profile", .null),
                .init("habits", [.object([.init("id", .uuid(UUID())), .init("name", "Bad"), .init("periods", []), .init("archived_at", "yesterday")])]),
                .init("completions", []), .init("skips", []), .init("lists", []), .init("tasks", []),
            ])])), code: Code.invalidParams, id: nil, field: "document.habits[0].archived_at")
        }
    }
}
