import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Areas (issue 33, item 1) over the pipes: areas.*, a habit's area_id, day.get's per-area
/// completion against a model, deletion keeping the habits, and the database's rules for a
/// direct writer.
@Suite("habit serve: areas")
struct AreaTests {
    static func areaIDs(_ worker: WorkerProcess, _ user: UUID) throws -> [UUID] {
        try (worker.call("areas.list", params(user))["areas"]?.arrayValue ?? []).map { try #require($0.habitID) }
    }

    @Test("create, rename, list in order, random moves against a model (renumbering included), retries by id, delete")
    func areasFollowTheModel() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            var model = try ["Health", "Work", "Home", "Learning", "Money"].map {
                try #require(worker.call("areas.create", params(user, ["name": .string($0)])).habitID)
            }
            #expect(try Self.areaIDs(worker, user) == model)
            let first = try worker.call("areas.list", params(user))["areas"]?[0]
            #expect(first?["name"] == "Health" && first?["sort_order"] == 1024, "\(String(describing: first))")

            // A seed app's insert without a sort_order: last, by created_at.
            let unordered = try #require(UUID(uuidString: session.admin.queryOne("""
                INSERT INTO public.habit_areas (user_id, name) VALUES (\(user), 'Unordered') RETURNING id::text
                """).decode(String.self, at: 0)))
            model.append(unordered)
            #expect(try Self.areaIDs(worker, user) == model)

            var rng = SeededGenerator(seed: 37)
            for step in 0..<50 {
                let area = model[Int.random(in: 0..<model.count, using: &rng)]
                var anchor = area
                while anchor == area { anchor = model[Int.random(in: 0..<model.count, using: &rng)] }
                let before = Bool.random(using: &rng)
                let moved = try worker.call("areas.move", params(user, ["area_id": .uuid(area), before ? "before" : "after": .uuid(anchor)]))
                #expect(moved.habitID == area)
                model.removeAll { $0 == area }
                let at = try #require(model.firstIndex(of: anchor))
                model.insert(area, at: before ? at : at + 1)
                let actual = try Self.areaIDs(worker, user)
                #expect(actual == model, "step \(step): \(area) \(before ? "before" : "after") \(anchor)")
                guard actual == model else { return }
            }
            let orders = try session.admin.query("SELECT sort_order FROM public.habit_areas WHERE user_id = \(user)")
                .map { try $0.decode(Int32?.self, at: 0) }
            #expect(orders.allSatisfy { $0 != nil } && Set(orders).count == orders.count, "\(orders)")

            // Rename; a name that breaks the rules is refused with its field.
            let renamed = try worker.call("areas.update", params(user, ["area_id": .uuid(model[0]), "name": "  Fitness  "]))
            #expect(renamed["name"] == "Fitness")
            expectError(try worker.request("areas.update", params: params(user, ["area_id": .uuid(model[0]), "name": "   "])),
                        code: Code.invalidParams, id: nil, reason: "empty", field: "name")
            expectError(try worker.request("areas.create", params: params(user, ["name": .string(String(repeating: "x", count: 101))])),
                        code: Code.invalidParams, id: nil, reason: "too_long", field: "name")
            expectError(try worker.request("areas.create", params: params(user, ["name": "a\u{202E}b"])),
                        code: Code.invalidParams, id: nil, reason: "invalid_characters", field: "name")

            // A create with a client id is safe to retry; the same id with another name is a conflict.
            let id = UUID()
            let made = try worker.call("areas.create", params(user, ["id": .uuid(id), "name": "Retry"]))
            #expect(try worker.call("areas.create", params(user, ["id": .uuid(id), "name": "Retry"])) == made)
            expectError(try worker.request("areas.create", params: params(user, ["id": .uuid(id), "name": "Other"])),
                        code: -32015, id: nil, reason: "id_conflict")
            #expect(try Self.areaIDs(worker, user).filter { $0 == id }.count == 1)

            // Another user sees none of them, and cannot touch them.
            let other = UUID()
            #expect(try Self.areaIDs(worker, other) == [])
            for (method, extra) in [("areas.update", ["name": WireJSON.string("Mine")]), ("areas.delete", [:]),
                                    ("areas.move", ["before": .uuid(model[1])])] {
                var members = extra
                members["area_id"] = .uuid(model[0])
                expectError(try worker.request(method, params: params(other, members)), code: Code.notFound, id: nil, reason: "not_found")
            }
            try worker.call("areas.delete", params(user, ["area_id": .uuid(id)]))
            expectError(try worker.request("areas.delete", params: params(user, ["area_id": .uuid(id)])),
                        code: Code.notFound, id: nil, reason: "not_found")
        }
    }

    @Test("areas.move refuses: neither or both anchors, itself, an unknown or another user's area")
    func moveErrors() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID(), other = UUID()
            let a = try #require(worker.call("areas.create", params(user, ["name": "A"])).habitID)
            let b = try #require(worker.call("areas.create", params(user, ["name": "B"])).habitID)
            let foreign = try #require(worker.call("areas.create", params(other, ["name": "X"])).habitID)
            expectError(try worker.request("areas.move", params: params(user, ["area_id": .uuid(a)])),
                        code: Code.invalidParams, id: nil, reason: "required", field: "before")
            expectError(try worker.request("areas.move", params: params(user, ["area_id": .uuid(a), "before": .uuid(b), "after": .uuid(b)])),
                        code: Code.invalidParams, id: nil, reason: "not_allowed", field: "after")
            expectError(try worker.request("areas.move", params: params(user, ["area_id": .uuid(a), "after": .uuid(a)])),
                        code: Code.invalidParams, id: nil, reason: "not_allowed", field: "after")
            expectError(try worker.request("areas.move", params: params(user, ["area_id": "nope", "after": .uuid(b)])),
                        code: Code.invalidParams, id: nil, reason: "invalid_uuid", field: "area_id")
            for (area, anchor) in [(a, foreign), (foreign, a), (UUID(), b), (a, UUID())] {
                expectError(try worker.request("areas.move", params: params(user, ["area_id": .uuid(area), "before": .uuid(anchor)])),
                            code: Code.notFound, id: nil, reason: "not_found")
            }
            #expect(try Self.areaIDs(worker, user) == [a, b])
        }
    }

    @Test("a habit's area: set on create and update, cleared with null; another user's or an unknown area is unknown_reference; deleting the area keeps its habits, unassigned, and sync says so")
    func habitArea() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID(), other = UUID()
            let health = try #require(worker.call("areas.create", params(user, ["name": "Health"])).habitID)
            let work = try #require(worker.call("areas.create", params(user, ["name": "Work"])).habitID)
            let foreign = try #require(worker.call("areas.create", params(other, ["name": "Theirs"])).habitID)
            let run = try worker.createHabit(user: user, name: "Run", extra: [.init("area_id", .uuid(health))])
            #expect(run["area_id"] == .uuid(health))
            let runID = try #require(run.habitID)
            let plain = try worker.createHabit(user: user, name: "Plain")
            #expect(plain["area_id"] == .null)
            // A retried create with the same area returns the row; another area is a conflict.
            let retryID = UUID()
            let made = try worker.createHabit(user: user, name: "Read", extra: [.init("id", .uuid(retryID)), .init("area_id", .uuid(work))])
            #expect(try worker.createHabit(user: user, name: "Read", extra: [.init("id", .uuid(retryID)), .init("area_id", .uuid(work))]) == made)
            expectError(try worker.request("habits.create", params: params(user, ["id": .uuid(retryID), "name": "Read", "area_id": .uuid(health)])),
                        code: -32015, id: nil, reason: "id_conflict")

            for area in [foreign, UUID()] {
                expectError(try worker.request("habits.create", params: params(user, ["name": "Bad", "area_id": .uuid(area)])),
                            code: Code.invalidParams, id: nil, reason: "unknown_reference", field: "area_id")
                expectError(try worker.request("habits.update", params: params(user, ["id": .uuid(runID), "area_id": .uuid(area)])),
                            code: Code.invalidParams, id: nil, reason: "unknown_reference", field: "area_id")
            }
            expectError(try worker.request("habits.update", params: params(user, ["id": .uuid(runID), "area_id": 7])),
                        code: Code.invalidParams, id: nil, reason: "wrong_type", field: "area_id")
            #expect(try worker.call("habits.update", params(user, ["id": .uuid(runID), "area_id": .uuid(work)]))["area_id"] == .uuid(work))
            #expect(try worker.call("habits.update", params(user, ["id": .uuid(runID), "name": "Run!"]))["area_id"] == .uuid(work), "absent keeps")
            #expect(try worker.call("habits.update", params(user, ["id": .uuid(runID), "area_id": .null]))["area_id"] == .null)
            _ = try worker.call("habits.update", params(user, ["id": .uuid(runID), "area_id": .uuid(work)]))

            let before = try worker.call("sync.pull", params(user))
            #expect(Set(before["changes"]?["areas"]?.arrayValue?.compactMap(\.habitID) ?? []) == [health, work], "\(before)")
            let cursor = try #require(before["cursor"])

            // Deleting Work keeps Run and Read, without an area.
            try worker.call("areas.delete", params(user, ["area_id": .uuid(work)]))
            let habits = try worker.call("habits.list", params(user))["habits"]?.arrayValue ?? []
            #expect(habits.count == 3 && habits.allSatisfy { $0["area_id"] == .null }, "\(habits)")
            let after = try worker.call("sync.pull", params(user, ["cursor": cursor]))
            #expect(after["deleted"]?["areas"] == [.uuid(work)], "\(after)")
            #expect(Set(after["changes"]?["habits"]?.arrayValue?.compactMap(\.habitID) ?? []) == [runID, retryID], "\(after)")
            let today = try session.today()
            let day = try worker.call("day.get", params(user, ["date": .string(today.description)]))
            #expect(day["areas"]?.arrayValue?.map { $0["id"] } == [.uuid(health)], "\(day)")
        }
    }

    /// One day of the model: the habits of an area due on the day (schedule) and not skipped, and
    /// of those the done ones.
    struct ModelHabit {
        let id: UUID
        let area: Int?
        let weekdays: Set<Int>?   // nil: daily
        let archived: Bool
        var done: Set<CalendarDate> = []
        var skipped: Set<CalendarDate> = []

        func isDue(on day: CalendarDate) -> Bool { weekdays.map { $0.contains(day.isoWeekday) } ?? true }
    }

    @Test("day.get's areas against a model: random areas, daily and weekday habits, done and skipped days, an archived habit; every area listed in order, complete exactly when every due habit is done")
    func dayAreasFollowTheModel() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let seed = UInt64(ProcessInfo.processInfo.environment["HABIT_AREA_SEED"] ?? "") ?? 33
            var rng = SeededGenerator(seed: seed)
            let user = UUID()
            let today = try session.today()
            let start = today.adding(days: -20)
            let areas = try (0..<4).map { try #require(worker.call("areas.create", params(user, ["name": .string("Area \($0)")])).habitID) }
            var habits: [ModelHabit] = []
            for index in 0..<14 {
                let area = Int.random(in: 0...4, using: &rng)   // 4: none
                let weekdays: Set<Int>? = Bool.random(using: &rng) ? nil : Set((1...7).filter { _ in Bool.random(using: &rng) }).union([Int.random(in: 1...7, using: &rng)])
                var extra: [WireJSON.Member] = [.init("activated_at", .string("\(start)T12:00:00Z"))]
                if area < 4 { extra.append(.init("area_id", .uuid(areas[area]))) }
                if let weekdays { extra.append(.init("schedule", .object([.init("type", "weekdays"), .init("days", .array(weekdays.sorted().map { .int($0) }))]))) }
                let id = try #require(worker.createHabit(user: user, name: "H\(index)", extra: extra).habitID)
                habits.append(ModelHabit(id: id, area: area < 4 ? area : nil, weekdays: weekdays, archived: index == 13))
            }
            for index in habits.indices {
                for back in 0..<12 {
                    let day = today.adding(days: -back)
                    guard habits[index].isDue(on: day) else { continue }
                    switch Int.random(in: 0..<4, using: &rng) {
                    case 0, 1:
                        _ = try worker.call("completions.set", params(user, ["template_id": .uuid(habits[index].id), "date": .string(day.description), "completed": true]))
                        habits[index].done.insert(day)
                    case 2:
                        _ = try worker.call("skips.set_range", params(user, ["template_id": .uuid(habits[index].id), "from": .string(day.description),
                                                                             "to": .string(day.description), "skipped": true]))
                        habits[index].skipped.insert(day)
                    default: break
                    }
                }
                if habits[index].archived { _ = try worker.call("habits.archive", params(user, ["template_id": .uuid(habits[index].id)])) }
            }
            // One area fully done today whatever the draw: its due habits completed.
            for index in habits.indices where habits[index].area == 0 && !habits[index].archived && habits[index].isDue(on: today)
                && !habits[index].skipped.contains(today) && !habits[index].done.contains(today) {
                _ = try worker.call("completions.set", params(user, ["template_id": .uuid(habits[index].id), "date": .string(today.description), "completed": true]))
                habits[index].done.insert(today)
            }
            var completeSeen = 0
            for back in 0..<12 {
                let day = today.adding(days: -back)
                let answer = try worker.call("day.get", params(user, ["date": .string(day.description)]))
                let got = answer["areas"]?.arrayValue ?? []
                #expect(got.map { $0["id"] } == areas.map { .uuid($0) }, "\(day): \(answer)")
                for (position, area) in areas.enumerated() {
                    let counted = habits.filter { $0.area == position && !$0.archived && $0.isDue(on: day) && !$0.skipped.contains(day) }
                    let done = counted.filter { $0.done.contains(day) }.count
                    let expected: WireJSON = .object([.init("id", .uuid(area)), .init("name", .string("Area \(position)")),
                                                      .init("due", .int(counted.count)), .init("done", .int(done)),
                                                      .init("complete", .bool(!counted.isEmpty && done == counted.count))])
                    #expect(got.count > position && got[position] == expected, "seed \(seed), \(day), area \(position): \(got)")
                    if !counted.isEmpty && done == counted.count { completeSeen += 1 }
                }
                // Each listed habit names its area.
                for item in answer["habits"]?.arrayValue ?? [] {
                    let model = try #require(habits.first { $0.id == item.habitID })
                    #expect(item["area_id"] == (model.area.map { .uuid(areas[$0]) } ?? .null))
                }
            }
            #expect(completeSeen > 0, "the draw made no area complete: the test would not see `complete`")
        }
    }

    @Test("the database's rules for a direct writer: 100 areas a user, a habit only in its own user's area, row-level security on areas")
    func directWriterRules() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID(), other = UUID()
            try session.admin.execute("""
                INSERT INTO public.habit_areas (user_id, name, sort_order) SELECT \(user), 'A' || n, n FROM generate_series(1, 99) n
                """)
            let last = try worker.call("areas.create", params(user, ["name": "Hundredth"]))
            #expect(last["sort_order"] == .int(99 + 1024), "after the last: \(last)")
            let refused = try worker.request("areas.create", params: params(user, ["name": "One too many"]))
            expectError(refused, code: -32013, id: nil, reason: "limit_exceeded")
            #expect(refused.data?["table"] == "habit_areas", "\(refused.raw)")
            try worker.call("areas.create", params(other, ["name": "Other's"]))

            // A habit of `other` may not point at `user`'s area (the composite key), whoever writes.
            let area = try #require(last.habitID)
            let theirs = try #require(worker.createHabit(user: other, name: "X").habitID)
            let error = try #require(throws: PostgresError.self) {
                try session.admin.execute("UPDATE public.habit_templates SET area_id = \(area) WHERE id = \(theirs) AND user_id = \(other)")
            }
            #expect(error.sqlState == .foreignKeyViolation, "\(error)")

            // As authenticated with the user's claims: only the user's own areas are seen or changed.
            let seen = try session.admin.withTransaction(prelude: [
                "SET LOCAL ROLE authenticated",
                "SELECT set_config('request.jwt.claims', \(#"{"sub":"\#(other.uuidString.lowercased())"}"#), true)",
                Query(unsafeSQL: CitusCluster.current == nil ? "SELECT 1" : "SET LOCAL request.jwt.claim.sub = '\(other.uuidString.lowercased())'"),
            ]) { connection in
                let deleted = try connection.execute("DELETE FROM public.habit_areas WHERE user_id = \(user)")
                let count = try connection.queryOne("SELECT count(*) FROM public.habit_areas").decode(Int64.self, at: 0)
                return (deleted, count)
            }
            #expect(seen.0 == 0 && seen.1 == 1, "\(seen)")
            #expect(try Self.areaIDs(worker, user).count == 100)
        }
    }
}
