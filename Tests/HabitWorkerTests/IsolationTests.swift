import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Through every method, one user never sees or changes another user's data.
@Suite("habit serve: isolation between users")
struct WorkerIsolationTests {
    @Test("user B with user A's ids: not_found or empty results, and A's data is intact")
    func otherUsersData() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let a = UUID()
            let b = UUID()
            try worker.call("profile.set", params(a, ["timezone": "Europe/Berlin"]))
            let todayA = try session.today(in: "Europe/Berlin").description
            let one = try worker.createHabit(user: a, name: "A one", extra: [.init("icon", "figure.run"), .init("color", "#112233")])
            let two = try worker.createHabit(user: a, name: "A two")
            let oneID = try #require(one["id"])
            let twoID = try #require(two["id"])
            try worker.call("habits.deactivate", params(a, ["id": twoID]))
            #expect(try worker.call("completions.set", params(a, ["template_id": oneID, "date": .string(todayA), "completed": true]))
                == ["completed": true, "state": "done", "changed": true])

            func snapshot() throws -> [WireJSON] {
                [
                    try worker.call("habits.list", params(a, ["include_inactive": true])),
                    try worker.call("day.get", params(a, ["date": .string(todayA)])),
                    try worker.call("week.counts", params(a, ["date": .string(todayA)])),
                    try worker.call("profile.get", params(a)),
                ]
            }
            let before = try snapshot()

            // Writes with A's ids, as B.
            let writes: [(String, [String: WireJSON])] = [
                ("habits.update", ["id": oneID, "name": "Hijacked"]),
                ("habits.update", ["id": twoID, "icon": .null, "color": .null, "sort_order": .null]),
                ("habits.deactivate", ["id": oneID]),
                ("habits.activate", ["id": twoID]),
                ("habits.delete", ["id": oneID]),
                ("habits.delete", ["id": twoID]),
                ("completions.set", ["template_id": oneID, "date": .string(todayA), "completed": true]),
                ("completions.set", ["template_id": oneID, "date": .string(todayA), "completed": false]),
                ("completions.toggle", ["template_id": oneID, "date": .string(todayA)]),
                ("completions.toggle", ["template_id": twoID, "date": .string(todayA)]),
            ]
            for (method, members) in writes {
                let response = try worker.request(method, params: params(b, members))
                expectError(response, code: Code.notFound, id: nil, reason: "not_found")
                #expect(response.data == ["reason": "not_found"], "no detail may confirm the id: \(response.raw)")
            }

            // Reads as B: nothing of A's.
            #expect(try worker.call("habits.list", params(b, ["include_inactive": true])) == ["habits": [], "next_cursor": .null])
            let dayB = try worker.call("day.get", params(b, ["date": .string(todayA)]))
            #expect(dayB["habits"] == [] && dayB["completed"] == [], "\(dayB)")
            let weekB = try #require(try worker.call("week.counts", params(b, ["date": .string(todayA)]))["days"]?.arrayValue)
            #expect(weekB.count == 7 && weekB.allSatisfy { $0["completed"] == 0 && $0["active"] == 0 }, "\(weekB)")
            #expect(try worker.call("profile.get", params(b)) == ["user_id": .uuid(b), "timezone": "UTC", "week_start": "monday", "day_starts_at": "00:00"])
            #expect(try worker.call("profile.set", params(b, ["timezone": "Asia/Tokyo"])) == ["user_id": .uuid(b), "timezone": "Asia/Tokyo", "week_start": "monday", "day_starts_at": "00:00"])

            // And the other way round: A cannot touch B's habit.
            let bHabit = try #require(try worker.createHabit(user: b, name: "B own")["id"])
            expectError(try worker.request("habits.delete", params: params(a, ["id": bHabit])), code: Code.notFound, id: nil, reason: "not_found")
            expectError(try worker.request("completions.toggle", params: params(a, ["template_id": bHabit, "date": .string(todayA)])),
                        code: Code.notFound, id: nil, reason: "not_found")

            // A's data is exactly as before (including updated_at and the completion).
            let after = try snapshot()
            #expect(after[0] == before[0], "habits.list changed: \(before[0]) → \(after[0])")
            #expect(after[1]["habits"] == before[1]["habits"] && after[1]["completed"] == before[1]["completed"])
            #expect(after[1]["completed"] == .array([oneID]))
            #expect(after[2]["days"] == before[2]["days"])
            #expect(after[3] == ["user_id": .uuid(a), "timezone": "Europe/Berlin", "week_start": "monday", "day_starts_at": "00:00"])
            #expect(try session.habitCount(user: a) == 2)
            #expect(try session.completionCount(user: a) == 1)
            #expect(try session.habitCount(user: b) == 1)
            #expect(try session.completionCount(user: b) == 0)
        }
    }
}
