import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// widget.get (issue 33, item 4) over the pipes, against the methods it summarizes: day.get for
/// which habits are due and their state, habits.stats for the current streak and the score.
@Suite("habit serve: widget.get")
struct WidgetTests {
    @Test("on random days of a year of random history, the items are day.get's due habits in its order, with its states, habits.stats' streaks and scores, and the day's values; archived habits left out; no date means today")
    func agreesWithDayGetAndStats() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            try worker.call("profile.set", params(user, ["timezone": "Europe/Berlin"]))
            let today = try session.today(in: "Europe/Berlin")
            let start = today.adding(days: -400)
            let activated = WireJSON.string(start.description + "T12:00:00Z")
            var rng = SeededGenerator(seed: 4_004)
            let daily = try #require(worker.createHabit(user: user, name: "Run", extra: [.init("activated_at", activated), .init("icon", "figure.run"), .init("color", "#FF8800")]).habitID)
            let weekdays = try #require(worker.createHabit(user: user, name: "Swim", extra: [.init("activated_at", activated),
                                                                                         .init("schedule", ["type": "weekdays", "days": [1, 3, 5]])]).habitID)
            let weekly = try #require(worker.createHabit(user: user, name: "Yoga", extra: [.init("activated_at", activated),
                                                                                       .init("schedule", ["type": "times_per_week", "times": 2])]).habitID)
            let water = try #require(worker.createHabit(user: user, name: "Water", extra: [.init("activated_at", activated), .init("kind", "measurable"),
                                                                                       .init("unit", "L"), .init("target", "2")]).habitID)
            let pages = try #require(worker.createHabit(user: user, name: "Read", extra: [.init("activated_at", activated), .init("target", "3")]).habitID)
            let archived = try #require(worker.createHabit(user: user, name: "Old", extra: [.init("activated_at", activated)]).habitID)
            try worker.call("habits.archive", params(user, ["template_id": .uuid(archived)]))
            for offset in 0...120 {
                let day = WireJSON.string(today.adding(days: -offset).description)
                for habit in [daily, weekdays, weekly, archived] where Int.random(in: 0..<10, using: &rng) < 6 {
                    let state = Int.random(in: 0..<10, using: &rng) == 0 ? "skipped" : "done"
                    _ = try worker.request("completions.set", params: params(user, ["template_id": .uuid(habit), "date": day, "state": .string(state)]))
                }
                if Bool.random(using: &rng) {
                    try worker.call("checkins.add", params(user, ["template_id": .uuid(water), "date": day,
                                                                   "value": .string(["0.5", "1.5", "2", "2.25"].randomElement(using: &rng)!)]))
                }
                if Bool.random(using: &rng) {
                    try worker.call("checkins.add", params(user, ["template_id": .uuid(pages), "date": day]))
                }
            }
            var dates = [today, today.adding(days: -1), today.adding(days: -7), today.adding(days: 3)]
            for _ in 0..<8 { dates.append(today.adding(days: -Int.random(in: 0...200, using: &rng))) }
            for date in dates {
                let widget = try worker.call("widget.get", params(user, ["date": .string(date.description)]))
                let day = try worker.call("day.get", params(user, ["date": .string(date.description)]))
                let stats = try worker.call("habits.stats", params(user, ["date": .string(date.description), "include": ["score"]]))
                #expect(widget["date"]?.stringValue == date.description)
                let items = widget["items"]?.arrayValue ?? []
                let due = (day["habits"]?.arrayValue ?? []).filter { $0["due"]?.boolValue == true }
                #expect(items.map { $0["template_id"] } == due.map { $0["id"] }, "\(date): widget \(items.map { $0["name"] }) day.get due \(due.map { $0["name"] })")
                #expect(!items.contains { $0["template_id"] == .uuid(archived) })
                let completed = Set((day["completed"]?.arrayValue ?? []).compactMap(\.stringValue))
                let skipped = Set((day["skipped"]?.arrayValue ?? []).compactMap(\.stringValue))
                let statsByID = Dictionary((stats["habits"]?.arrayValue ?? []).map { ($0["id"]?.stringValue ?? "", $0) }, uniquingKeysWith: { a, _ in a })
                for item in items {
                    let id = try #require(item["template_id"]?.stringValue)
                    let state = completed.contains(id) ? "done" : skipped.contains(id) ? "skipped" : "none"
                    #expect(item["state"]?.stringValue == state, "\(date) \(item)")
                    let stat = try #require(statsByID[id], "habits.stats lacks \(id) on \(date)")
                    #expect(item["streak"]?.intValue == stat["current_streak"]?["length"]?.intValue, "\(date) \(item) \(stat)")
                    #expect(item["score"] == stat["score"], "\(date) \(item) \(stat)")
                    let counted = id == water.uuidString.lowercased() || id == pages.uuidString.lowercased()
                    #expect((item["value"] != nil) == counted && (item["target"] != nil) == counted, "\(item)")
                }
                // The day's values, as checkins.list sums them.
                for (habit, target) in [(water, "2"), (pages, "3")] {
                    guard let item = items.first(where: { $0["template_id"] == .uuid(habit) }) else { continue }
                    let list = try worker.call("checkins.list", params(user, ["template_id": .uuid(habit), "date": .string(date.description)]))
                    #expect(item["value"] == list["value"] && item["target"]?.stringValue == target, "\(date) \(item) \(list)")
                }
            }
            // No date: today in the profile's zone.
            #expect(try worker.call("widget.get", params(user)) == worker.call("widget.get", params(user, ["date": .string(today.description)])))
        }
    }

    @Test("20 habits with the longest names, icons, units and targets: the answer stays within the documented 16 KiB; a user without habits gets no items")
    func sizeFor20Habits() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            // Each in an area: an area_id is longer than null.
            let area = try #require(worker.call("areas.create", params(user, ["name": "Area"]))["id"])
            for index in 0..<20 {
                // 100 characters of 4 bytes each; the longest icon name; a measurable habit with a unit.
                let name = String(repeating: "𝔸", count: 97) + String(format: "%03d", index)
                try worker.call("habits.create", params(user, ["name": .string(name), "icon": .string(String(repeating: "a", count: 100)),
                                                               "color": "#FFFFFF", "kind": "measurable", "unit": .string(String(repeating: "𝔹", count: 20)),
                                                               "target": "999999999.999", "area_id": area]))
            }
            let response = try worker.request("widget.get", params: params(user))
            #expect(response.result?["items"]?.arrayValue?.count == 20)
            #expect(response.raw.utf8.count <= 16_384, "widget.get for 20 habits: \(response.raw.utf8.count) bytes")
            print("widget.get for 20 habits at the longest: \(response.raw.utf8.count) bytes")
            let empty = try worker.call("widget.get", params(UUID()))
            #expect(empty["items"]?.arrayValue == [])
            expectError(try worker.request("widget.get", params: params(user, ["date": "2026-02-30"])), code: Code.invalidParams, id: nil,
                        reason: "invalid_date", field: "date")
        }
    }

    @Test("area_id: only that area's due habits, in day.get's order, each naming its area; every item names its area or null; another user's or an unknown area is not found")
    func oneArea() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID(), other = UUID()
            let health = try #require(worker.call("areas.create", params(user, ["name": "Health"])).habitID)
            let work = try #require(worker.call("areas.create", params(user, ["name": "Work"])).habitID)
            let foreign = try #require(worker.call("areas.create", params(other, ["name": "Theirs"])).habitID)
            var expected: [UUID: [UUID]] = [:]
            for (index, area) in [health, work, health, nil, work, health].enumerated() {
                var members: [String: WireJSON] = ["name": .string("H\(index)")]
                if let area { members["area_id"] = .uuid(area) }
                let id = try #require(worker.call("habits.create", params(user, members)).habitID)
                if let area { expected[area, default: []].append(id) }
            }
            let all = try worker.call("widget.get", params(user))["items"]?.arrayValue ?? []
            #expect(all.count == 6)
            #expect(all.filter { $0["area_id"] == .null }.count == 1, "\(all)")
            for area in [health, work] {
                let items = try worker.call("widget.get", params(user, ["area_id": .uuid(area)]))["items"]?.arrayValue ?? []
                #expect(items.compactMap { $0["template_id"]?.stringValue.flatMap(UUID.init(uuidString:)) } == expected[area], "\(items)")
                #expect(items.allSatisfy { $0["area_id"] == .uuid(area) })
                // The same items as the whole widget's of that area.
                #expect(items == all.filter { $0["area_id"] == .uuid(area) })
            }
            // An area without habits: no items.
            let empty = try #require(worker.call("areas.create", params(user, ["name": "Empty"])).habitID)
            #expect(try worker.call("widget.get", params(user, ["area_id": .uuid(empty)]))["items"]?.arrayValue == [])
            for area in [foreign, UUID()] {
                expectError(try worker.request("widget.get", params: params(user, ["area_id": .uuid(area)])), code: Code.notFound, id: nil, reason: "not_found")
            }
            expectError(try worker.request("widget.get", params: params(user, ["area_id": "x"])), code: Code.invalidParams, id: nil,
                        reason: "invalid_uuid", field: "area_id")
        }
    }

}
