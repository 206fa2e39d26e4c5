import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Schedules and `habits.history` over the worker's pipes (issue 16, "Schedules", "Methods";
/// docs/protocol.md "Schedule", "habits.history").
@Suite("habit serve: schedules and habits.history")
struct ScheduleTests {
    static func schedule(_ text: String) -> WireJSON { try! WireJSON.parse(text) }

    @Test("habits.create with each shape: every habit result carries it, as sent")
    func eachShapeRoundTrips() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            let today = try session.today()
            let shapes = [#"{"type":"daily"}"#, #"{"type":"weekdays","days":[1,3,5]}"#, #"{"type":"every_n_days","n":2}"#,
                          #"{"type":"times_per_week","times":3}"#, #"{"type":"weekdays","days":[1,2,3,4,5,6,7]}"#,
                          #"{"type":"times_in_days","times":2,"days":3}"#,
                          #"{"type":"every_n_days","n":365}"#]
            var ids: [WireJSON] = []
            for (index, shape) in shapes.enumerated() {
                let created = try worker.call("habits.create", params(user, ["name": .string("H\(index)"), "activated_at": "2020-01-01T00:00:00Z",
                                                                             "schedule": Self.schedule(shape)]))
                #expect(created["schedule"]?.encoded == shape)
                ids.append(try #require(created["id"]))
            }
            let listed = try worker.call("habits.list", params(user))["habits"]?.arrayValue ?? []
            #expect(listed.map { $0["schedule"]?.encoded } == shapes)
            let day = try worker.call("day.get", params(user, ["date": .string(today.description)]))["habits"]?.arrayValue ?? []
            #expect(Set(day.compactMap { $0["schedule"]?.encoded }) == Set(shapes))
            // Absent and null: daily. Weekdays in any order come back ascending.
            #expect(try worker.createHabit(user: user, name: "Plain")["schedule"]?.encoded == #"{"type":"daily"}"#)
            #expect(try worker.call("habits.create", params(user, ["name": "Null", "schedule": .null]))["schedule"]?.encoded == #"{"type":"daily"}"#)
            #expect(try worker.call("habits.create", params(user, ["name": "Odd", "schedule": Self.schedule(#"{"days":[6,2],"type":"weekdays"}"#)]))["schedule"]?.encoded
                    == #"{"type":"weekdays","days":[2,6]}"#)
            // deactivate / activate answer it too.
            #expect(try worker.call("habits.deactivate", params(user, ["id": ids[1]]))["schedule"]?.encoded == shapes[1])
            #expect(try worker.call("habits.activate", params(user, ["id": ids[1]]))["schedule"]?.encoded == shapes[1])
        }
    }

    /// Each bad shape, for create and for update: -32602, the member at fault and a stable reason;
    /// nothing is written.
    @Test("bad schedules answer -32602 naming the member", arguments: ["habits.create", "habits.update"])
    func badShapes(method: String) throws {
        let cases: [(schedule: String, field: String, reason: String)] = [
            (#""daily""#, "schedule", "wrong_type"),
            (#"[{"type":"daily"}]"#, "schedule", "wrong_type"),
            (#"{}"#, "schedule.type", "required"),
            (#"{"type":null}"#, "schedule.type", "required"),
            (#"{"type":1}"#, "schedule.type", "wrong_type"),
            (#"{"type":"hourly"}"#, "schedule.type", "invalid_choice"),
            (#"{"type":"Daily"}"#, "schedule.type", "invalid_choice"),
            (#"{"type":"daily","days":[1]}"#, "schedule.days", "unknown_key"),
            (#"{"type":"weekdays","days":[1],"n":2}"#, "schedule.n", "unknown_key"),
            (#"{"type":"every_n_days","times":2}"#, "schedule.times", "unknown_key"),
            (#"{"type":"daily","type":"daily"}"#, "schedule.type", "duplicate_key"),
            (#"{"type":"weekdays"}"#, "schedule.days", "required"),
            (#"{"type":"weekdays","days":null}"#, "schedule.days", "required"),
            (#"{"type":"weekdays","days":1}"#, "schedule.days", "wrong_type"),
            (#"{"type":"weekdays","days":[]}"#, "schedule.days", "out_of_range"),
            (#"{"type":"weekdays","days":[1,"2"]}"#, "schedule.days[1]", "wrong_type"),
            (#"{"type":"weekdays","days":[1.0]}"#, "schedule.days[0]", "wrong_type"),
            (#"{"type":"weekdays","days":[0]}"#, "schedule.days[0]", "out_of_range"),
            (#"{"type":"weekdays","days":[1,8]}"#, "schedule.days[1]", "out_of_range"),
            (#"{"type":"weekdays","days":[99999999999999999999]}"#, "schedule.days[0]", "out_of_range"),
            (#"{"type":"weekdays","days":[3,5,3]}"#, "schedule.days[2]", "duplicate_value"),
            (#"{"type":"every_n_days"}"#, "schedule.n", "required"),
            (#"{"type":"every_n_days","n":"2"}"#, "schedule.n", "wrong_type"),
            (#"{"type":"every_n_days","n":2.5}"#, "schedule.n", "wrong_type"),
            (#"{"type":"every_n_days","n":0}"#, "schedule.n", "out_of_range"),
            (#"{"type":"every_n_days","n":366}"#, "schedule.n", "out_of_range"),
            (#"{"type":"every_n_days","n":-1}"#, "schedule.n", "out_of_range"),
            (#"{"type":"times_per_week"}"#, "schedule.times", "required"),
            (#"{"type":"times_per_week","times":true}"#, "schedule.times", "wrong_type"),
            (#"{"type":"times_per_week","times":0}"#, "schedule.times", "out_of_range"),
            (#"{"type":"times_per_week","times":8}"#, "schedule.times", "out_of_range"),
            (#"{"type":"times_in_days","times":2}"#, "schedule.days", "required"),
            (#"{"type":"times_in_days","days":3}"#, "schedule.times", "required"),
            (#"{"type":"times_in_days","times":2,"days":"3"}"#, "schedule.days", "wrong_type"),
            (#"{"type":"times_in_days","times":3,"days":3}"#, "schedule.times", "out_of_range"),
            (#"{"type":"times_in_days","times":1,"days":366}"#, "schedule.days", "out_of_range"),
            (#"{"type":"times_in_days","times":1,"days":3,"n":2}"#, "schedule.n", "unknown_key"),
        ]
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            let habit = try #require(try worker.createHabit(user: user, name: "Kept").habitID)
            let prefix = #"{"jsonrpc":"2.0","id":1,"method":"\#(method)","params":{"user_id":"\#(user.uuidString.lowercased())","#
                + (method == "habits.create" ? #""name":"New","# : #""id":"\#(habit.uuidString.lowercased())","#)
            for (schedule, field, reason) in cases {
                try worker.sendRaw(Array((prefix + #""schedule":\#(schedule)}}"#).utf8) + [0x0A])
                let response = try worker.readResponse()
                expectError(response, code: Code.invalidParams, id: 1, reason: reason, field: field)
                #expect(response.dataMessage?.isEmpty == false, "\(response.raw)")
            }
            #expect(try session.habitCount(user: user) == 1)
            let periods = try worker.call("habits.history", params(user, ["id": .uuid(habit)]))["periods"]?.arrayValue ?? []
            #expect(periods.map { $0["schedule"]?.encoded } == [#"{"type":"daily"}"#])
        }
    }

    @Test("habits.update's schedule: habits.history shows the old and new periods meeting at one instant")
    func updateShowsInHistory() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            let created = try worker.call("habits.create", params(user, ["name": "Read", "activated_at": "2026-01-01T07:00:00Z",
                                                                         "schedule": Self.schedule(#"{"type":"weekdays","days":[1,3]}"#)]))
            let id = try #require(created["id"])
            let updated = try worker.call("habits.update", params(user, ["id": id, "schedule": Self.schedule(#"{"type":"times_per_week","times":2}"#)]))
            #expect(updated["schedule"]?.encoded == #"{"type":"times_per_week","times":2}"#)
            #expect(updated["name"] == "Read")
            let history = try worker.call("habits.history", params(user, ["id": id]))
            #expect(history["id"] == id)
            let periods = history["periods"]?.arrayValue ?? []
            #expect(periods.count == 2, "\(history)")
            guard periods.count == 2 else { return }
            #expect(periods[0]["started_at"] == "2026-01-01T07:00:00Z")
            #expect(periods[0]["schedule"]?.encoded == #"{"type":"weekdays","days":[1,3]}"#)
            #expect(periods[0]["ended_at"] == periods[1]["started_at"] && periods[0]["ended_at"]?.stringValue != nil)
            #expect(periods[1]["ended_at"] == .null)
            #expect(periods[1]["schedule"]?.encoded == #"{"type":"times_per_week","times":2}"#)
            // Retried (the same params): no new period. Absent or null schedule: kept.
            _ = try worker.call("habits.update", params(user, ["id": id, "schedule": Self.schedule(#"{"type":"times_per_week","times":2}"#)]))
            _ = try worker.call("habits.update", params(user, ["id": id, "name": "Read more", "schedule": .null]))
            #expect(try worker.call("habits.history", params(user, ["id": id]))["periods"] == history["periods"])
        }
    }

    @Test("habits.deactivate closes the open period, habits.activate opens one with the habit's schedule")
    func activityShowsInHistory() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            let id = try #require(try worker.call("habits.create", params(user, ["name": "Walk", "activated_at": "2026-01-01T00:00:00Z",
                                                                                 "schedule": Self.schedule(#"{"type":"every_n_days","n":3}"#)]))["id"])
            let deactivated = try worker.call("habits.deactivate", params(user, ["id": id]))
            var periods = try worker.call("habits.history", params(user, ["id": id]))["periods"]?.arrayValue ?? []
            #expect(periods.count == 1 && periods.first?["ended_at"] == deactivated["deactivated_at"], "\(periods)")
            // While inactive a new schedule is only the habit's (for the next activation).
            let inactive = try worker.call("habits.update", params(user, ["id": id, "schedule": Self.schedule(#"{"type":"daily"}"#)]))
            #expect(inactive["schedule"]?.encoded == #"{"type":"daily"}"# && inactive["is_active"] == false)
            #expect(try worker.call("habits.history", params(user, ["id": id]))["periods"]?.arrayValue == periods)
            _ = try worker.call("habits.activate", params(user, ["id": id]))
            periods = try worker.call("habits.history", params(user, ["id": id]))["periods"]?.arrayValue ?? []
            #expect(periods.count == 2, "\(periods)")
            #expect(periods.map { $0["schedule"]?.encoded } == [#"{"type":"every_n_days","n":3}"#, #"{"type":"daily"}"#])
            #expect(periods.last?["ended_at"] == .null)
        }
    }

    @Test("habits.create retried with the id and the same schedule answers the habit; another schedule is -32015")
    func retryComparesTheSchedule() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID(), id = UUID()
            let request = params(user, ["id": .uuid(id), "name": "Swim", "schedule": Self.schedule(#"{"type":"weekdays","days":[2,4]}"#)])
            let first = try worker.call("habits.create", request)
            #expect(try worker.call("habits.create", request) == first)
            for other in [nil, #"{"type":"daily"}"#, #"{"type":"weekdays","days":[2]}"#, #"{"type":"times_per_week","times":2}"#] {
                var members: [String: WireJSON] = ["id": .uuid(id), "name": "Swim"]
                if let other { members["schedule"] = Self.schedule(other) }
                expectError(try worker.request("habits.create", params: params(user, members)), code: -32015, id: nil, reason: "id_conflict")
            }
            #expect(try session.habitCount(user: user) == 1)
        }
    }

    @Test("habits.history of an unknown id or another user's habit: -32001, the same answer")
    func historyIsPerUser() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let owner = UUID(), stranger = UUID()
            let id = try #require(try worker.createHabit(user: owner, name: "Private")["id"])
            let theirs = try worker.request("habits.history", params: params(stranger, ["id": id]))
            let unknown = try worker.request("habits.history", params: params(stranger, ["id": .uuid(UUID())]))
            expectError(theirs, code: Code.notFound, id: nil, reason: "not_found")
            expectError(unknown, code: Code.notFound, id: nil, reason: "not_found")
            #expect(theirs.data == unknown.data)
            #expect(try worker.call("habits.history", params(owner, ["id": id]))["periods"]?.arrayValue?.count == 1)
        }
    }
}
