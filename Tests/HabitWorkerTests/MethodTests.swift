import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Happy paths of every method, with the exact result shapes of HabitMethods.swift.
@Suite("habit serve: methods")
struct MethodTests {
    static let habitKeys: Set<String> = ["id", "name", "icon", "color", "is_active", "activated_at", "deactivated_at",
                                         "sort_order", "created_at", "updated_at", "schedule",
                                         "kind", "unit", "target", "target_type", "target_period", "archived_at", "area_id"]

    /// Checks the shape every habit object has.
    static func expectHabitShape(_ habit: WireJSON, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(Set(habit.keys ?? []) == habitKeys, "\(habit)", sourceLocation: sourceLocation)
        let id = habit["id"]?.stringValue ?? ""
        #expect(UUID(uuidString: id) != nil && id == id.lowercased(), "id \(id)", sourceLocation: sourceLocation)
        #expect(habit["is_active"]?.boolValue != nil, sourceLocation: sourceLocation)
        for key in ["activated_at", "created_at", "updated_at"] {
            let text = habit[key]?.stringValue ?? ""
            #expect(text.hasSuffix("Z") && text.count >= 20, "\(key) \(text)", sourceLocation: sourceLocation)
        }
    }

    @Test("system.ping and system.health")
    func systemMethods() throws {
        try WorkerSession.with { session in
            #expect(try session.worker.call("system.ping") == ["ok": true])
            #expect(try session.worker.call("system.ping", [:]) == ["ok": true])
            let health = try session.worker.call("system.health")
            let version = try session.admin.queryOne("SELECT max(version) FROM habit.schema_migrations").decode(Int.self, at: 0)
            #expect(health == ["database": "ok", "schema_version": .int(version)])
        }
    }

    @Test("profile.get and profile.set")
    func profile() throws {
        try WorkerSession.with { session throws in
            let worker = session.worker
            let user = UUID()
            func profile(_ zone: String, _ week: String, _ start: String = "00:00") -> WireJSON {
                ["user_id": .uuid(user), "timezone": .string(zone), "week_start": .string(week), "day_starts_at": .string(start)]
            }
            #expect(try worker.call("profile.get", params(user)) == profile("UTC", "monday"))
            #expect(try worker.call("profile.set", params(user, ["timezone": "Asia/Tokyo"])) == profile("Asia/Tokyo", "monday"))
            #expect(try worker.call("profile.get", params(user)) == profile("Asia/Tokyo", "monday"))
            #expect(try worker.call("profile.set", params(user, ["timezone": "America/New_York", "week_start": "sunday"]))
                    == profile("America/New_York", "sunday"))
            // week_start absent: the stored one is kept.
            #expect(try worker.call("profile.set", params(user, ["timezone": "America/New_York"])) == profile("America/New_York", "sunday"))
            #expect(try worker.call("profile.get", params(user)) == profile("America/New_York", "sunday"))
            expectError(try worker.request("profile.set", params: params(user, ["timezone": "UTC", "week_start": "friday"])),
                        code: Code.invalidParams, id: nil, reason: "invalid_choice")
            // The day's start alone; the zone and week are kept.
            #expect(try worker.call("profile.set", params(user, ["day_starts_at": "03:00"])) == profile("America/New_York", "sunday", "03:00"))
            #expect(try worker.call("profile.get", params(user)) == profile("America/New_York", "sunday", "03:00"))
            for bad in ["3:00", "24:00", "03:00:00", "03:60", "", "0300"] {
                expectError(try worker.request("profile.set", params: params(user, ["day_starts_at": .string(bad)])),
                            code: Code.invalidParams, id: nil, reason: "invalid_time")
            }
            expectError(try worker.request("profile.set", params: params(user, ["day_starts_at": 3])), code: Code.invalidParams, id: nil, reason: "wrong_type")
            // Nothing to set.
            expectError(try worker.request("profile.set", params: params(user)), code: Code.invalidParams, id: nil, reason: "required")
            // A new user's profile from the day start alone: UTC, Monday.
            let other = UUID()
            #expect(try worker.call("profile.set", params(other, ["day_starts_at": "23:59"]))
                    == ["user_id": .uuid(other), "timezone": "UTC", "week_start": "monday", "day_starts_at": "23:59"])
            // Upper-case UUIDs are accepted and answered in lower case.
            let upper: WireJSON = ["user_id": .string(user.uuidString.uppercased())]
            #expect(try worker.call("profile.get", upper)["user_id"] == .uuid(user))
        }
    }

    /// "Today" follows the day's start (issue 32, item 4), computed by PostgreSQL: with days
    /// beginning a few minutes after the current UTC time, today is yesterday's date: day.get
    /// answers it, the calendar date is a future day for completions.set, and a habit created
    /// now is on yesterday's date. Back to midnight, today is the date again.
    @Test("the day's start moves today")
    func dayStartMovesToday() throws {
        try WorkerSession.with { session throws in
            let worker = session.worker
            let user = UUID()
            // A zone whose wall clock is not within minutes of midnight now, and a start just
            // ahead of it (the wall clock cannot reach it during the test).
            let facts = try session.admin.queryOne("""
                SELECT z, (now() AT TIME ZONE z)::date, to_char(date_trunc('minute', now() AT TIME ZONE z) + interval '10 minutes', 'HH24:MI')
                FROM (SELECT CASE WHEN extract(hour FROM now() AT TIME ZONE 'UTC') BETWEEN 1 AND 22 THEN 'UTC' ELSE 'Etc/GMT+12' END AS z) zone
                """)
            let zone = try facts.decode(String.self, at: 0)
            let calendarDate = try facts.decode(CalendarDate.self, at: 1)
            let start = try facts.decode(String.self, at: 2)
            let yesterday = calendarDate.adding(days: -1)
            _ = try worker.call("profile.set", params(user, ["timezone": .string(zone), "day_starts_at": .string(start)]))
            let habit = try worker.createHabit(user: user, name: "Read")
            let id = habit["id"]!
            let day = try worker.call("day.get", params(user, ["date": .string(yesterday.description)]))
            #expect(day["date"] == .string(yesterday.description))
            #expect(day["today"] == .string(yesterday.description))
            #expect(day["habits"]?.arrayValue?.count == 1, "a habit created now is on the user's today, yesterday's date")
            expectError(try worker.request("completions.set", params: params(user, ["template_id": id, "date": .string(calendarDate.description), "completed": true])),
                        code: Code.futureDate, id: nil, reason: "future_date")
            _ = try worker.call("completions.set", params(user, ["template_id": id, "date": .string(yesterday.description), "completed": true]))
            _ = try worker.call("profile.set", params(user, ["day_starts_at": "00:00"]))
            #expect(try worker.call("day.get", params(user, ["date": .string(calendarDate.description)]))["today"] == .string(calendarDate.description))
            _ = try worker.call("completions.set", params(user, ["template_id": id, "date": .string(calendarDate.description), "completed": true]))
        }
    }

    @Test("habits.create / update / deactivate / activate / delete / list")
    func habitLifecycle() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()

            let read = try worker.createHabit(user: user, name: "  Read  ", extra: [
                .init("icon", "book.fill"), .init("color", "#a1b2c3"), .init("activated_at", "2025-01-06T08:00:00+01:00"), .init("sort_order", 7),
            ])
            Self.expectHabitShape(read)
            #expect(read["name"] == "Read")
            #expect(read["icon"] == "book.fill")
            #expect(read["color"] == "#A1B2C3")
            #expect(read["is_active"] == true)
            #expect(read["activated_at"] == "2025-01-06T07:00:00Z")
            #expect(read["deactivated_at"] == .null)
            #expect(read["sort_order"] == 7)
            #expect(read["created_at"] == read["updated_at"])
            let readID = try #require(read["id"])

            let walk = try worker.createHabit(user: user, name: "Walk")
            Self.expectHabitShape(walk)
            #expect(walk["icon"] == .null && walk["color"] == .null)
            #expect(walk["sort_order"] == 8, "after the user's last habit")
            #expect(walk["activated_at"] == walk["created_at"], "activated now by default")
            let walkID = try #require(walk["id"])
            let swim = try worker.createHabit(user: user, name: "Swim", extra: [.init("sort_order", -1), .init("icon", .null)])
            let swimID = try #require(swim["id"])

            func names(includeInactive: Bool? = nil) throws -> [String] {
                var extra: [String: WireJSON] = [:]
                if let includeInactive { extra["include_inactive"] = .bool(includeInactive) }
                let result = try worker.call("habits.list", params(user, extra))
                #expect(result.keys == ["habits", "next_cursor"])
                #expect(result["next_cursor"] == .null)
                let habits = result["habits"]?.arrayValue ?? []
                habits.forEach { Self.expectHabitShape($0) }
                return habits.compactMap { $0["name"]?.stringValue }
            }
            #expect(try names() == ["Swim", "Read", "Walk"])
            // The listed object is the created one.
            #expect(try worker.call("habits.list", params(user))["habits"]?[1] == read)

            // Update: rename and clear the optional fields.
            let cleared = try worker.call("habits.update", params(user, ["id": readID, "name": " Read more ", "icon": .null, "color": .null, "sort_order": .null]))
            Self.expectHabitShape(cleared)
            #expect(cleared["id"] == readID && cleared["name"] == "Read more")
            #expect(cleared["icon"] == .null && cleared["color"] == .null && cleared["sort_order"] == .null)
            #expect(cleared["created_at"] == read["created_at"] && cleared["activated_at"] == read["activated_at"])
            #expect(cleared["updated_at"] != read["updated_at"])
            // Absent fields are kept.
            let recolored = try worker.call("habits.update", params(user, ["id": readID, "color": "#00ff00", "icon": "book"]))
            #expect(recolored["name"] == "Read more" && recolored["color"] == "#00FF00" && recolored["icon"] == "book" && recolored["sort_order"] == .null)
            #expect(try names() == ["Swim", "Walk", "Read more"], "sort_order NULLS LAST")
            // An update that changes nothing (a retried request) returns the habit unchanged, updated_at included.
            #expect(try worker.call("habits.update", params(user, ["id": readID])) == recolored)
            #expect(try worker.call("habits.update", params(user, ["id": readID, "color": "#00FF00", "name": "Read more"])) == recolored)

            // Deactivate (idempotent: keeps the first deactivated_at) and reactivate.
            let inactive = try worker.call("habits.deactivate", params(user, ["id": walkID]))
            Self.expectHabitShape(inactive)
            #expect(inactive["is_active"] == false)
            let deactivatedAt = try #require(inactive["deactivated_at"]?.stringValue)
            #expect(try worker.call("habits.deactivate", params(user, ["id": walkID]))["deactivated_at"] == .string(deactivatedAt))
            #expect(try names() == ["Swim", "Read more"])
            #expect(try names(includeInactive: false) == ["Swim", "Read more"])
            #expect(try names(includeInactive: true) == ["Swim", "Walk", "Read more"])
            let active = try worker.call("habits.activate", params(user, ["id": walkID]))
            #expect(active["is_active"] == true && active["deactivated_at"] == .null && active["activated_at"] == walk["activated_at"])
            #expect(try names() == ["Swim", "Walk", "Read more"])

            // Delete.
            #expect(try worker.call("habits.delete", params(user, ["id": swimID])) == ["deleted": true])
            expectError(try worker.request("habits.delete", params: params(user, ["id": swimID])), code: Code.notFound, id: nil, reason: "not_found")
            expectError(try worker.request("habits.update", params: params(user, ["id": swimID, "name": "x"])), code: Code.notFound, id: nil, reason: "not_found")
            #expect(try names(includeInactive: true) == ["Walk", "Read more"])
            #expect(try session.habitCount(user: user) == 2)
        }
    }

    @Test("day.get, completions.set, completions.toggle, week.counts")
    func daysAndCompletions() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            // 2025-01-06 is a Monday.
            let h = try worker.createHabit(user: user, name: "H", extra: [.init("activated_at", "2025-01-06T07:00:00Z")])
            let g = try worker.createHabit(user: user, name: "G", extra: [.init("activated_at", "2025-01-08T12:00:00Z")])
            let hID = try #require(h["id"])
            let gID = try #require(g["id"])
            let todayBefore = try session.today().description

            let day7 = try worker.call("day.get", params(user, ["date": "2025-01-07"]))
            #expect(Set(day7.keys ?? []) == ["date", "today", "is_future", "habits", "completed", "skipped", "areas"])
            #expect(day7["date"] == "2025-01-07" && day7["is_future"] == false)
            let todayAfter = try session.today().description
            #expect(day7["today"] == .string(todayBefore) || day7["today"] == .string(todayAfter))
            #expect(day7["habits"] == .array([h.with("due", true)]), "the habit objects are the created ones, with due")
            #expect(day7["completed"] == [] && day7["skipped"] == [])

            func set(_ id: WireJSON, _ date: String, _ completed: Bool) throws -> WireJSON {
                try worker.call("completions.set", params(user, ["template_id": id, "date": .string(date), "completed": .bool(completed)]))
            }
            func toggle(_ id: WireJSON, _ date: String) throws -> WireJSON {
                try worker.call("completions.toggle", params(user, ["template_id": id, "date": .string(date)]))
            }
            #expect(try set(hID, "2025-01-07", true) == ["completed": true, "state": "done", "changed": true])
            #expect(try set(hID, "2025-01-07", true) == ["completed": true, "state": "done", "changed": false])
            #expect(try toggle(gID, "2025-01-08") == ["completed": true])
            #expect(try toggle(gID, "2025-01-09") == ["completed": true])
            #expect(try toggle(gID, "2025-01-09") == ["completed": false])
            #expect(try set(hID, "2025-01-08", true) == ["completed": true, "state": "done", "changed": true])

            let day8 = try worker.call("day.get", params(user, ["date": "2025-01-08"]))
            #expect(day8["habits"]?.arrayValue?.compactMap { $0["id"] } == [hID, gID])
            let completed = [hID, gID].compactMap(\.stringValue).sorted().map(WireJSON.string)
            #expect(day8["completed"] == .array(completed), "sorted lower-case ids")

            #expect(try set(hID, "2025-01-07", false) == ["completed": false, "state": "none", "changed": true])
            #expect(try set(hID, "2025-01-07", false) == ["completed": false, "state": "none", "changed": false])
            #expect(try worker.call("day.get", params(user, ["date": "2025-01-07"]))["completed"] == [])

            func day(_ date: String, completed: Int, active: Int) -> WireJSON {
                // Daily habits, nothing skipped: every habit on a day is due.
                ["date": .string(date), "completed": .int(completed), "active": .int(active), "due": .int(active), "skipped": 0]
            }
            let monday = try worker.call("week.counts", params(user, ["date": "2025-01-08"]))
            #expect(monday == [
                "week_start": "2025-01-06",
                "days": [day("2025-01-06", completed: 0, active: 1), day("2025-01-07", completed: 0, active: 1),
                         day("2025-01-08", completed: 2, active: 2), day("2025-01-09", completed: 0, active: 2),
                         day("2025-01-10", completed: 0, active: 2), day("2025-01-11", completed: 0, active: 2),
                         day("2025-01-12", completed: 0, active: 2)],
                // No habit counted from check-ins: no week values.
                "values": [],
            ])
            #expect(try worker.call("week.counts", params(user, ["date": "2025-01-12", "week_start": "monday"]))["week_start"] == "2025-01-06")
            let sunday = try worker.call("week.counts", params(user, ["date": "2025-01-08", "week_start": "sunday"]))
            #expect(sunday["week_start"] == "2025-01-05")
            #expect(sunday["days"]?.arrayValue?.first == day("2025-01-05", completed: 0, active: 0))
            #expect(sunday["days"]?.arrayValue?.last == day("2025-01-11", completed: 0, active: 2))

            // A future date is shown (is_future) but cannot be completed.
            let tomorrow = try session.today().adding(days: 1).description
            let future = try worker.call("day.get", params(user, ["date": .string(tomorrow)]))
            #expect(future["is_future"] == true && future["date"] == .string(tomorrow))
            #expect(future["habits"]?.arrayValue?.count == 2)

            // Time zone: 07:00 UTC on the 6th is still the 5th in Los Angeles.
            #expect(try worker.call("day.get", params(user, ["date": "2025-01-05"]))["habits"] == [])
            #expect(try worker.call("day.get", params(user, ["date": "2025-01-05", "timezone": "America/Los_Angeles"]))["habits"] == .array([h.with("due", true)]))
            try worker.call("profile.set", params(user, ["timezone": "America/Los_Angeles"]))
            #expect(try worker.call("day.get", params(user, ["date": "2025-01-05"]))["habits"] == .array([h.with("due", true)]))
            #expect(try set(hID, "2025-01-05", true) == ["completed": true, "state": "done", "changed": true])
            #expect(try session.completionCount(user: user) == 3)
        }
    }

    @Test("dates and timestamps in results are always ones the API accepts back (four-digit years)")
    func extremeDatesRoundTrip() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            let datePattern = #/^[0-9]{4}-[0-9]{2}-[0-9]{2}$/#
            // A week that would run past 9999-12-31: either refused (-32602 date) or only valid dates.
            let week = try worker.request("week.counts", params: params(user, ["date": "9999-12-31"]))
            if let result = week.result {
                let dates = [result["week_start"]] + (result["days"]?.arrayValue ?? []).map { $0["date"] }
                for date in dates.compactMap({ $0?.stringValue }) {
                    #expect(date.wholeMatch(of: datePattern) != nil, "week.counts returned the date \(date), which day.get would refuse: \(week.raw)")
                }
            } else {
                expectError(week, code: Code.invalidParams, id: nil, field: "date")
            }
            // Instants whose UTC date leaves 0001…9999: refused (-32602 activated_at), or printed so they parse back.
            for input in ["9999-12-31T23:59:59-12:00", "0001-01-01T00:00:00+14:00"] {
                let created = try worker.request("habits.create", params: params(user, ["name": "Edge", "activated_at": .string(input)]))
                guard let habit = created.result else {
                    expectError(created, code: Code.invalidParams, id: nil, field: "activated_at")
                    continue
                }
                let printed = try #require(habit["activated_at"]?.stringValue)
                let again = try worker.request("habits.create", params: params(user, ["name": "Again", "activated_at": .string(printed)]))
                #expect(again.result?["activated_at"] == .string(printed),
                        "activated_at \(input) was stored and printed as \(printed), which the worker itself refuses: \(again.raw)")
            }
        }
    }
}
