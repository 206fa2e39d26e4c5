import Foundation
import PostgresClient
import TestSupport
import Testing

/// Issue 32 (first part) through a spawned worker: measurable habits, check-ins, a day's value
/// and notes (docs/protocol.md, "checkins.add" … "notes.set"; sql/0029).
@Suite("habit serve: measurable habits, check-ins and notes")
struct CheckinMethodTests {
    static func measurable(_ worker: WorkerProcess, user: UUID, target: String = "5", unit: String = "km") throws -> WireJSON {
        try #require(try worker.createHabit(user: user, name: "Run", extra: [
            .init("kind", "measurable"), .init("unit", .string(unit)), .init("target", .string(target)),
            .init("activated_at", "2025-01-06T07:00:00Z"),
        ])["id"])
    }

    @Test("a measurable habit: check-ins sum to the day's value, done once it meets the target; the habit object carries kind and target")
    func checkinsSumToTheTarget() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            let created = try worker.createHabit(user: user, name: "Run", extra: [
                .init("kind", "measurable"), .init("unit", "km"), .init("target", "5.0"), .init("activated_at", "2025-01-06T07:00:00Z"),
            ])
            #expect(created["kind"] == "measurable" && created["unit"] == "km" && created["target"] == "5"
                    && created["target_type"] == "at_least" && created["target_period"] == "day", "\(created)")
            let habit = try #require(created["id"])
            let day: WireJSON = "2025-01-07"
            func add(_ value: String, _ extra: [String: WireJSON] = [:]) throws -> WireJSON {
                try worker.call("checkins.add", params(user, ["template_id": habit, "date": day, "value": .string(value)].merging(extra) { $1 }))
            }
            let first = try add("2.5", ["time": "07:30", "client_id": "watch-1"])
            #expect(first["value"] == "2.5" && first["checkins"] == 1 && first["state"] == "none" && first["created"] == true, "\(first)")
            let retried = try add("2.5", ["time": "07:30", "client_id": "watch-1"])
            #expect(retried["id"] == first["id"] && retried["created"] == false && retried["value"] == "2.5", "a retried client id is applied once: \(retried)")
            #expect(try session.completionCount(user: user) == 0)
            let second = try add("2.500")
            #expect(second["value"] == "5" && second["checkins"] == 2 && second["state"] == "done", "\(second)")
            #expect(try session.completionCount(user: user) == 1, "the day's completion follows its check-ins")

            let list = try worker.call("checkins.list", params(user, ["template_id": habit, "date": day]))
            #expect(list["value"] == "5" && list["state"] == "done")
            #expect(list["checkins"]?.arrayValue?.map { $0["value"] } == ["2.5", "2.5"])
            #expect(list["checkins"]?.arrayValue?.first?["time"] == "07:30" && list["checkins"]?.arrayValue?.first?["client_id"] == "watch-1")

            let removed = try worker.call("checkins.remove", params(user, ["checkin_id": try #require(second["id"])]))
            #expect(removed["value"] == "2.5" && removed["state"] == "none" && removed["template_id"] == habit && removed["date"] == day, "\(removed)")
            #expect(try session.completionCount(user: user) == 0, "below the target again: not done")
            let again = try worker.request("checkins.remove", params: params(user, ["checkin_id": try #require(second["id"])]))
            expectError(again, code: Code.notFound, id: again.id, reason: "not_found")

            // completions.set with a value: the day's total becomes it.
            let set = try worker.call("completions.set", params(user, ["template_id": habit, "date": day, "value": "6.25"]))
            #expect(set == ["completed": true, "state": "done", "changed": true, "value": "6.25", "checkins": 1], "\(set)")
            let same = try worker.call("completions.set", params(user, ["template_id": habit, "date": day, "value": "6.250"]))
            #expect(same["changed"] == false)
            let cleared = try worker.call("completions.set", params(user, ["template_id": habit, "date": day, "value": "0"]))
            #expect(cleared == ["completed": false, "state": "none", "changed": true, "value": "0", "checkins": 0], "\(cleared)")
            // done sets the value to the target: a check-in of the rest.
            _ = try add("1")
            let done = try worker.call("completions.set", params(user, ["template_id": habit, "date": day, "state": "done"]))
            #expect(done["state"] == "done")
            let listed = try worker.call("checkins.list", params(user, ["template_id": habit, "date": day]))
            #expect(listed["value"] == "5" && listed["checkins"]?.arrayValue?.count == 2, "\(listed)")
            // Removed check-ins leave tombstones; a pull (which does not serve check-ins yet) passes over them.
            let pulled = try worker.request("sync.pull", params: params(user))
            #expect(pulled.result?["deleted"] != nil, "\(pulled.raw)")
        }
    }

    @Test("a boolean habit of 8 times a day: each check-in counts 1; done at 8; a toggle fills the rest, an un-toggle clears the day")
    func timesADay() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            let habit = try #require(try worker.createHabit(user: user, name: "Water", extra: [.init("target", "8"), .init("activated_at", "2025-01-06T07:00:00Z")])["id"])
            let day: WireJSON = "2025-01-08"
            for index in 1...7 {
                let added = try worker.call("checkins.add", params(user, ["template_id": habit, "date": day]))
                #expect(added["value"] == .string("\(index)") && added["state"] == "none")
            }
            let dayView = try worker.call("day.get", params(user, ["date": day]))
            let item = try #require(dayView["habits"]?.arrayValue?.first)
            #expect(item["value"] == "7" && item["checkins"] == 7 && item["target"] == "8" && item["kind"] == "boolean", "\(item)")
            let eighth = try worker.call("checkins.add", params(user, ["template_id": habit, "date": day]))
            #expect(eighth["state"] == "done")
            // A fraction of a time is refused, by the database too.
            let half = try worker.request("checkins.add", params: params(user, ["template_id": habit, "date": day, "value": "0.5"]))
            expectError(half, code: Code.invalidParams, id: half.id, reason: "not_whole", field: "value")
            // completions.toggle un-does the day: the check-ins go with it.
            #expect(try worker.call("completions.toggle", params(user, ["template_id": habit, "date": day])) == ["completed": false])
            let list = try worker.call("checkins.list", params(user, ["template_id": habit, "date": day]))
            #expect(list["value"] == "0" && list["checkins"]?.arrayValue?.isEmpty == true, "\(list)")
            #expect(try worker.call("completions.toggle", params(user, ["template_id": habit, "date": day])) == ["completed": true])
            let filled = try worker.call("checkins.list", params(user, ["template_id": habit, "date": day]))
            #expect(filled["value"] == "8" && filled["checkins"]?.arrayValue?.count == 1, "a toggle adds the rest: \(filled)")
        }
    }

    @Test("notes: set, replaced, cleared with null or \"\"; day.get shows it; it survives toggling the day")
    func notes() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            let habit = try #require(try worker.createHabit(user: user, name: "Walk", extra: [.init("activated_at", "2025-01-06T07:00:00Z")])["id"])
            let day: WireJSON = "2025-01-09"
            func note(_ text: WireJSON) throws -> WireJSON { try worker.call("notes.set", params(user, ["template_id": habit, "date": day, "note": text])) }
            func shown() throws -> WireJSON? { try worker.call("day.get", params(user, ["date": day]))["habits"]?.arrayValue?.first?["note"] }
            #expect(try note("knee hurt, walked instead") == ["note": "knee hurt, walked instead", "changed": true])
            #expect(try note("knee hurt, walked instead") == ["note": "knee hurt, walked instead", "changed": false])
            #expect(try shown() == "knee hurt, walked instead")
            try worker.call("completions.set", params(user, ["template_id": habit, "date": day, "completed": true]))
            try worker.call("completions.set", params(user, ["template_id": habit, "date": day, "completed": false]))
            #expect(try shown() == "knee hurt, walked instead", "toggling keeps the note")
            #expect(try note("") == ["note": .null, "changed": true])
            #expect(try shown() == nil)
            try note("again")
            #expect(try note(.null) == ["note": .null, "changed": true])
            let long = try worker.request("notes.set", params: params(user, ["template_id": habit, "date": day, "note": .string(String(repeating: "a", count: 1001))]))
            expectError(long, code: Code.invalidParams, id: long.id, reason: "too_long", field: "note")
            let bidi = try worker.request("notes.set", params: params(user, ["template_id": habit, "date": day, "note": "a\u{202E}b"]))
            expectError(bidi, code: Code.invalidParams, id: bidi.id, reason: "invalid_characters", field: "note")
            let missing = try worker.request("notes.set", params: params(user, ["template_id": habit, "date": day]))
            expectError(missing, code: Code.invalidParams, id: missing.id, reason: "required", field: "note")
        }
    }

    @Test("bad input: a JSON number, a bad decimal or time, a future day, a day the habit is not on, another user's habit or check-in, 100 a day")
    func refusals() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID(), other = UUID()
            let habit = try Self.measurable(worker, user: user)
            let today = try session.today()
            func add(_ members: [String: WireJSON], as who: UUID? = nil) throws -> WorkerResponse {
                try worker.request("checkins.add", params: params(who ?? user, ["template_id": habit, "date": "2025-01-07"].merging(members) { $1 }))
            }
            var response = try add(["value": .number("2.5")])
            expectError(response, code: Code.invalidParams, id: response.id, reason: "wrong_type", field: "value")
            for bad in ["1e3", "-1", ".5", "5.", "1.2345", "1000000000", "", " 1"] {
                response = try add(["value": .string(bad)])
                expectError(response, code: Code.invalidParams, id: response.id, reason: "invalid_decimal", field: "value")
            }
            response = try add(["value": "0"])
            expectError(response, code: Code.invalidParams, id: response.id, reason: "out_of_range", field: "value")
            for bad in ["7:30", "24:00", "07:60", "07:30:61", "0730"] {
                response = try add(["time": .string(bad)])
                expectError(response, code: Code.invalidParams, id: response.id, reason: "invalid_time", field: "time")
            }
            response = try add(["date": .string(today.adding(days: 1).description)])
            expectError(response, code: Code.futureDate, id: response.id, reason: "future_date")
            response = try add(["date": "2025-01-05"])
            expectError(response, code: Code.habitNotActive, id: response.id, reason: "habit_not_active")
            response = try add([:], as: other)
            expectError(response, code: Code.notFound, id: response.id, reason: "not_found")
            let mine = try worker.call("checkins.add", params(user, ["template_id": habit, "date": "2025-01-07", "client_id": "k1"]))
            response = try worker.request("checkins.remove", params: params(other, ["checkin_id": try #require(mine["id"])]))
            expectError(response, code: Code.notFound, id: response.id, reason: "not_found")
            response = try add(["value": "2", "client_id": "k1"])
            expectError(response, code: -32015, id: response.id, reason: "id_conflict")
            response = try worker.request("notes.set", params: params(other, ["template_id": habit, "date": "2025-01-07", "note": "x"]))
            expectError(response, code: Code.notFound, id: response.id, reason: "not_found")
            response = try worker.request("checkins.list", params: params(other, ["template_id": habit, "date": "2025-01-07"]))
            expectError(response, code: Code.notFound, id: response.id, reason: "not_found")
            #expect(try session.admin.queryOne("SELECT count(*) FROM habit_checkins").decode(Int.self, at: 0) == 1, "nothing written by the refusals")

            // At most 100 check-ins per habit and day (the database's limit, for every writer).
            try session.admin.execute("""
                INSERT INTO habit_checkins (user_id, template_id, checkin_date, value)
                SELECT \(user), \(try #require(habit.stringValue.flatMap(UUID.init(uuidString:)))), '2025-01-08', 0.001 FROM generate_series(1, 100)
                """)
            response = try add(["date": "2025-01-08", "value": "0.001"])
            expectError(response, code: -32013, id: response.id, reason: "limit_exceeded")
            // A day's total may pass the largest value of one check-in, and is answered exactly.
            _ = try add(["date": "2025-01-09", "value": "999999999.999"])
            let big = try add(["date": "2025-01-09", "value": "999999999.999"])
            #expect(big.result?["value"] == "1999999999.998" && big.result?["state"] == "done", "\(big.raw)")

            // Kind and target period are fixed; a weekly target takes times_per_week 1 (sql/0033),
            // and a boolean one counts 2 times or more.
            response = try worker.request("habits.update", params: params(user, ["id": habit, "kind": "boolean"]))
            expectError(response, code: Code.invalidParams, id: response.id, reason: "not_supported", field: "kind")
            response = try worker.request("habits.update", params: params(user, ["id": habit, "target_period": "week"]))
            expectError(response, code: Code.invalidParams, id: response.id, reason: "not_supported", field: "target_period")
            response = try worker.request("habits.create", params: params(user, ["name": "Read", "kind": "measurable", "target": "100", "target_period": "week",
                                                                                 "schedule": ["type": "daily"]]))
            expectError(response, code: Code.invalidParams, id: response.id, reason: "invalid_schedule", field: "schedule")
            response = try worker.request("habits.create", params: params(user, ["name": "Read", "target_period": "week"]))
            expectError(response, code: Code.invalidParams, id: response.id, reason: "out_of_range", field: "target")
            response = try worker.request("habits.create", params: params(user, ["name": "Floss", "unit": "km"]))
            expectError(response, code: Code.invalidParams, id: response.id, reason: "not_allowed", field: "unit")
            response = try worker.request("habits.create", params: params(user, ["name": "Floss", "target": "1.5"]))
            expectError(response, code: Code.invalidParams, id: response.id, reason: "not_whole", field: "target")
            #expect(try session.habitCount(user: user) == 1)
        }
    }

    @Test("sync.push carries check-ins and notes: applied once, a pushed again mutation answers its recorded outcome")
    func pushedOnce() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            let habit = try Self.measurable(worker, user: user)
            let push = params(user, ["client_id": "phone", "mutations": .array([
                .object([.init("mutation_id", "1"), .init("method", "checkins.add"),
                         .init("params", .object([.init("template_id", habit), .init("date", "2025-01-07"), .init("value", "3")]))]),
                .object([.init("mutation_id", "2"), .init("method", "notes.set"),
                         .init("params", .object([.init("template_id", habit), .init("date", "2025-01-07"), .init("note", "offline")]))]),
            ])])
            let first = try worker.call("sync.push", push)
            let again = try worker.call("sync.push", push)
            #expect(first["results"]?.arrayValue?.map { $0["result"] != nil } == [true, true], "\(first)")
            #expect(again["results"] == first["results"], "the recorded outcomes: \(again)")
            let list = try worker.call("checkins.list", params(user, ["template_id": habit, "date": "2025-01-07"]))
            #expect(list["value"] == "3" && list["checkins"]?.arrayValue?.count == 1, "applied once: \(list)")
        }
    }

    /// At most (sql/0031): "at most 2 cups of coffee". A day is done when it was entered within
    /// the target: check-ins summing to at most 2, or kept without any (a toggle, a value of 0,
    /// its value 0). An empty day is not done (Loop's unknown checkmark); a day over the target
    /// is not done, and marking it done is refused (-32004 over_target); un-toggling a kept day
    /// clears its check-ins; switching the type re-decides the days with check-ins.
    @Test("an at-most habit: done when entered within the target; over it, not done and not markable; 0 keeps the day")
    func atMost() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            let created = try worker.createHabit(user: user, name: "Coffee", extra: [
                .init("kind", "measurable"), .init("unit", "cups"), .init("target", "2"), .init("target_type", "at_most"),
                .init("activated_at", "2025-01-06T07:00:00Z"),
            ])
            #expect(created["target_type"] == "at_most", "\(created)")
            let habit = try #require(created["id"])
            func add(_ day: String, _ value: String) throws -> WireJSON {
                try worker.call("checkins.add", params(user, ["template_id": habit, "date": .string(day), "value": .string(value)]))
            }
            func day(_ date: String) throws -> WireJSON {
                try #require(try worker.call("day.get", params(user, ["date": .string(date)]))["habits"]?.arrayValue?.first)
            }
            // Empty: not entered, not done; its value 0.
            let empty = try day("2025-01-07")
            #expect(empty["value"] == "0" && empty["checkins"] == 0, "\(empty)")
            #expect(try worker.call("day.get", params(user, ["date": "2025-01-07"]))["completed"] == [], "an empty at-most day is not done")
            var answer = try add("2025-01-07", "1")
            #expect(answer["value"] == "1" && answer["state"] == "done", "\(answer)")
            answer = try add("2025-01-07", "1")
            #expect(answer["value"] == "2" && answer["state"] == "done", "at the target: within it: \(answer)")
            let third = try add("2025-01-07", "0.5")
            #expect(third["value"] == "2.5" && third["state"] == "none", "over the target: not done: \(third)")
            #expect(try session.completionCount(user: user) == 0)
            for (method, members) in [("completions.set", ["completed": true] as [String: WireJSON]), ("completions.toggle", [:])] {
                let refused = try worker.request(method, params: params(user, ["template_id": habit, "date": "2025-01-07"].merging(members) { $1 }))
                expectError(refused, code: -32004, id: refused.id, reason: "invalid_state")
                #expect(refused.json["error"]?["data"]?["detail"] == "over_target", "\(refused.raw)")
            }
            let back = try worker.call("checkins.remove", params(user, ["checkin_id": try #require(third["id"])]))
            #expect(back["value"] == "2" && back["state"] == "done", "\(back)")
            // Un-toggled: the day is not entered any more (its check-ins go).
            #expect(try worker.call("completions.toggle", params(user, ["template_id": habit, "date": "2025-01-07"])) == ["completed": false])
            #expect(try worker.call("checkins.list", params(user, ["template_id": habit, "date": "2025-01-07"]))["checkins"] == [])
            // Kept without check-ins: a toggle, or a value of 0; the value is 0.
            #expect(try worker.call("completions.toggle", params(user, ["template_id": habit, "date": "2025-01-08"])) == ["completed": true])
            let kept = try day("2025-01-08")
            #expect(kept["value"] == "0" && kept["checkins"] == 0, "\(kept)")
            let zero = try worker.call("completions.set", params(user, ["template_id": habit, "date": "2025-01-09", "value": "0"]))
            #expect(zero["state"] == "done" && zero["value"] == "0", "\(zero)")
            // The last check-in removed: not entered.
            let only = try add("2025-01-10", "1")
            let gone = try worker.call("checkins.remove", params(user, ["checkin_id": try #require(only["id"])]))
            #expect(gone["state"] == "none" && gone["value"] == "0", "\(gone)")
            // habits.stats: a kept day counts 0; done days are the streak.
            _ = try add("2025-01-10", "1.5")
            let stats = try #require(try worker.call("habits.stats", params(user, ["id": habit, "date": "2025-01-10"]))["habits"]?.arrayValue?.first)
            #expect(stats["value_total"] == "1.5" && stats["total_done"] == 3, "\(stats)")
            // Switching to at least 2 re-decides the days with check-ins (1.5 < 2: not done);
            // the kept days keep their state (and count the target as their value).
            _ = try worker.call("habits.update", params(user, ["id": habit, "target_type": "at_least"]))
            #expect(try worker.call("checkins.list", params(user, ["template_id": habit, "date": "2025-01-10"]))["state"] == "none")
            #expect(try day("2025-01-08")["value"] == "2")
        }
    }

    /// Weekly targets (sql/0033): "run 15 km a week". The week's check-ins are summed in the
    /// user's weeks; the week is met once, on the day its sum reached the target (that day shows
    /// done, the later ones are not due); a toggle after it is refused (-32004
    /// week_target_met), one before it makes that day the one; streaks and rates count weeks.
    @Test("a weekly target: the week's sum, met on one day; a toggle before it moves it, after it is refused; streaks in weeks")
    func weeklyTarget() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            // 2025-01-06 is a Monday.
            let created = try worker.createHabit(user: user, name: "Run", extra: [
                .init("kind", "measurable"), .init("unit", "km"), .init("target", "15"), .init("target_period", "week"),
                .init("activated_at", "2024-12-30T07:00:00Z"),
            ])
            #expect(created["schedule"] == ["type": "times_per_week", "times": 1], "\(created)")
            #expect(created["target_period"] == "week", "\(created)")
            let habit = try #require(created["id"])
            func add(_ day: String, _ value: String) throws -> WireJSON {
                try worker.call("checkins.add", params(user, ["template_id": habit, "date": .string(day), "value": .string(value)]))
            }
            func day(_ date: String) throws -> WireJSON {
                try #require(try worker.call("day.get", params(user, ["date": .string(date)]))["habits"]?.arrayValue?.first)
            }
            var answer = try add("2025-01-07", "10")
            #expect(answer["state"] == "none" && answer["week_value"] == "10", "\(answer)")
            answer = try add("2025-01-09", "6")
            #expect(answer["state"] == "done" && answer["value"] == "6" && answer["week_value"] == "16", "met on Thursday: \(answer)")
            let friday = try day("2025-01-10")
            #expect(friday["due"] == false && friday["week_value"] == "16" && friday["value"] == "0", "after the week was met: \(friday)")
            #expect(try day("2025-01-09")["due"] == true, "the day it was met stays due")
            let refused = try worker.request("completions.set", params: params(user, ["template_id": habit, "date": "2025-01-10", "completed": true]))
            expectError(refused, code: -32004, id: refused.id, reason: "invalid_state")
            #expect(refused.json["error"]?["data"]?["detail"] == "week_target_met", "\(refused.raw)")
            // A toggle on Monday: met by Monday (a check-in of the rest, 15), Thursday no longer.
            #expect(try worker.call("completions.set", params(user, ["template_id": habit, "date": "2025-01-06", "completed": true]))["state"] == "done")
            let monday = try worker.call("checkins.list", params(user, ["template_id": habit, "date": "2025-01-06"]))
            #expect(monday["value"] == "15" && monday["week_value"] == "31", "\(monday)")
            #expect(try worker.call("checkins.list", params(user, ["template_id": habit, "date": "2025-01-09"]))["state"] == "none")
            // Un-done on Monday: its check-ins go, and the rest meets the week on Thursday again.
            #expect(try worker.call("completions.set", params(user, ["template_id": habit, "date": "2025-01-06", "completed": false]))["state"] == "none")
            #expect(try worker.call("checkins.list", params(user, ["template_id": habit, "date": "2025-01-09"]))["state"] == "done")
            // The next week: 14 of 15, not met; the week before: nothing. Counted on the Monday
            // after: the streak of one week ended with the missed one.
            _ = try add("2025-01-14", "14")
            let stats = try #require(try worker.call("habits.stats", params(user, ["id": habit, "date": "2025-01-20"]))["habits"]?.arrayValue?.first)
            #expect(stats["unit"] == "weeks" && stats["current_streak"]?["length"] == 0 && stats["longest_streak"]?["length"] == 1, "\(stats)")
            #expect(StatsMethodsTests.rate(stats["rate_all"]) == .some(1.0 / 3.0), "one week met of three: \(stats)")
            #expect(stats["value_total"] == "30", "\(stats)")
            // A Sunday week start regroups the weeks: Sun 2025-01-12 … Sat 01-18 holds 14; Sun
            // 01-05 … Sat 01-11 holds 16, met on Thursday still.
            _ = try worker.call("profile.set", params(user, ["week_start": "sunday"]))
            #expect(try worker.call("checkins.list", params(user, ["template_id": habit, "date": "2025-01-09"]))["state"] == "done")
            #expect(try day("2025-01-14")["week_value"] == "14")
        }
    }

    /// The calendar of one counted habit (sql/0032): each day's value, and a level by value ÷
    /// target, so a partial day shows; an at-most habit's done day is full. Several habits keep
    /// the done ÷ due level and have no value.
    @Test("stats.calendar of one counted habit: the day's value, and the level by value against the target")
    func calendarByValue() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            let run = try Self.measurable(worker, user: user, target: "4")
            for (day, value) in [("2025-01-07", "1"), ("2025-01-08", "2.5"), ("2025-01-09", "4")] {
                _ = try worker.call("completions.set", params(user, ["template_id": run, "date": .string(day), "value": .string(value)]))
            }
            _ = try worker.call("completions.set", params(user, ["template_id": run, "date": "2025-01-11", "state": "skipped"]))
            let calendar = try worker.call("stats.calendar", params(user, ["id": run, "from": "2025-01-07", "to": "2025-01-11"]))
            let days = try #require(calendar["days"]?.arrayValue)
            #expect(days.map { $0["level"] } == [1, 3, 4, 0, 0], "\(calendar)")
            #expect(days.map { $0["value"] } == ["1", "2.5", "4", "0", "0"], "\(calendar)")
            let coffee = try #require(try worker.createHabit(user: user, name: "Coffee", extra: [
                .init("kind", "measurable"), .init("unit", "cups"), .init("target", "2"), .init("target_type", "at_most"),
                .init("activated_at", "2025-01-06T07:00:00Z"),
            ])["id"])
            for (day, value) in [("2025-01-07", "1"), ("2025-01-08", "3")] {
                _ = try worker.call("checkins.add", params(user, ["template_id": coffee, "date": .string(day), "value": .string(value)]))
            }
            let cups = try worker.call("stats.calendar", params(user, ["id": coffee, "from": "2025-01-07", "to": "2025-01-09"]))
            #expect(cups["days"]?.arrayValue?.map { $0["level"] } == [4, 0, 0], "\(cups)")
            #expect(cups["days"]?.arrayValue?.map { $0["value"] } == ["1", "3", "0"], "\(cups)")
            // Every habit: done ÷ due, no value.
            let all = try worker.call("stats.calendar", params(user, ["from": "2025-01-07", "to": "2025-01-07"]))
            #expect(all["days"]?.arrayValue?.first?["value"] == nil && all["days"]?.arrayValue?.first?["level"] == 2, "\(all)")
            // week.counts: the week's value of each counted habit (Monday 01-06 … 01-12): Run
            // 1 + 2.5 + 4, Coffee 1 + 3; a plain habit has none; a week without entries 0.
            _ = try worker.createHabit(user: user, name: "Floss", extra: [.init("activated_at", "2025-01-06T07:00:00Z")])
            let week = try worker.call("week.counts", params(user, ["date": "2025-01-07", "week_start": "monday"]))
            let values = try #require(week["values"]?.arrayValue)
            let byHabit = Dictionary(uniqueKeysWithValues: values.map { ($0["template_id"]?.stringValue ?? "", $0["value"]) })
            #expect(byHabit == [try #require(run.stringValue): "7.5", try #require(coffee.stringValue): "4"], "\(week)")
            let later = try worker.call("week.counts", params(user, ["date": "2025-02-05"]))
            #expect(later["values"]?.arrayValue?.map { $0["value"] } == ["0", "0"], "\(later)")
        }
    }

    @Test("a new target re-decides the days with check-ins, not the others")
    func retarget() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            let habit = try Self.measurable(worker, user: user, target: "5")
            try worker.call("completions.set", params(user, ["template_id": habit, "date": "2025-01-07", "value": "4"]))
            try worker.call("completions.set", params(user, ["template_id": habit, "date": "2025-01-08", "value": "6"]))
            func states() throws -> [WireJSON?] {
                try ["2025-01-07", "2025-01-08"].map { day in
                    try worker.call("checkins.list", params(user, ["template_id": habit, "date": .string(day)]))["state"]
                }
            }
            #expect(try states() == ["none", "done"])
            try worker.call("habits.update", params(user, ["id": habit, "target": "4"]))
            #expect(try states() == ["done", "done"])
            try worker.call("habits.update", params(user, ["id": habit, "target": "6.5"]))
            #expect(try states() == ["none", "none"])
            #expect(try session.completionCount(user: user) == 0, "the completions follow: every streak and count reads them")
            // habits.stats sums the values: 4 + 6 on or before R, and in the windows ending at R.
            let stats = try worker.call("habits.stats", params(user, ["id": habit, "date": "2025-01-09"]))
            let item = try #require(stats["habits"]?.arrayValue?.first)
            #expect(item["value_total"] == "10" && item["value_7"] == "10" && item["value_30"] == "10" && item["total_done"] == 0, "\(item)")
            let before = try worker.call("habits.stats", params(user, ["id": habit, "date": "2025-01-07"]))["habits"]?.arrayValue?.first
            #expect(before?["value_total"] == "4", "\(String(describing: before))")
            // A boolean habit of target 1 has none.
            let plain = try #require(try worker.createHabit(user: user, name: "Floss")["id"])
            let plainStats = try worker.call("habits.stats", params(user, ["id": plain]))["habits"]?.arrayValue?.first
            #expect(plainStats?["value_total"] == nil, "\(String(describing: plainStats))")
        }
    }
}
