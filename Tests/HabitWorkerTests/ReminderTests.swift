import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Reminders (issue 33, item 3) over the pipes: a user's reminders.set / reminders.list, and
/// the push sender's reminders.due / claim / ack, against `ReminderModel`.
@Suite("habit serve: reminders")
struct ReminderTests {
    static let zones = ["America/New_York", "Europe/London", "Australia/Lord_Howe", "America/Santiago", "Europe/Dublin",
                        "Asia/Tehran", "Africa/Casablanca", "Pacific/Chatham", "America/St_Johns", "UTC", "Asia/Kolkata",
                        "America/Los_Angeles", "Europe/Berlin", "Australia/Sydney"]
    /// Times near the transitions of these zones (00:00–03:00), and the ends of the day.
    static let awkwardMinutes = [0, 30, 59, 60, 90, 119, 120, 135, 150, 165, 179, 180, 210, 1439, 1410, 1380]
    static let dayStarts = [0, 0, 180, 270, 1380, 60]

    static func instant(_ text: String) -> Int {
        Int(PostgresTimestamp(rfc3339: text)!.microsecondsSinceUnixEpoch / 1_000_000)
    }

    static func hhmm(_ minute: Int) -> String { String(format: "%02d:%02d", minute / 60, minute % 60) }

    /// The worker's answer for [from, to) as model firings, in its order.
    static func due(_ worker: WorkerProcess, from: Int, to: Int, limit: Int = 10_000) throws -> (firings: [ReminderModel.Firing], more: Bool) {
        let result = try worker.call("reminders.due", .object([.init("from", .string(ReminderModel.rfc3339(from))),
                                                               .init("limit", .int(limit)),
                                                               .init("to", .string(ReminderModel.rfc3339(to)))]))
        let firings = try (result["firings"]?.arrayValue ?? []).map { item in
            ReminderModel.Firing(firingID: try #require(item["firing_id"]?.stringValue),
                                 reminderID: try #require(item["reminder_id"]?.stringValue.flatMap(UUID.init(uuidString:))),
                                 fireAt: instant(try #require(item["fire_at"]?.stringValue)),
                                 habitDay: try #require(item["habit_day"]?.stringValue.flatMap(CalendarDate.init(iso8601:))).daysSinceUnixEpoch)
        }
        return (firings, try #require(result["more"]?.boolValue))
    }

    /// Sets up the model's users through the worker (profiles, habits from 2020, reminders,
    /// done and skipped days) and returns the model with the reminders' ids.
    static func seed(_ worker: WorkerProcess, users count: Int, rng: inout SeededGenerator, today: Int) throws -> ReminderModel {
        var model = ReminderModel()
        let startedAt = instant("2020-01-01T00:00:00Z")
        for userIndex in 0..<count {
            var user = ReminderModel.User(id: UUID(), zone: zones[userIndex % zones.count], dayStart: dayStarts.randomElement(using: &rng)!)
            try worker.call("profile.set", params(user.id, ["timezone": .string(user.zone), "day_starts_at": .string(hhmm(user.dayStart))]))
            for habitIndex in 0..<3 {
                let schedule: ReminderModel.Schedule = switch Int.random(in: 0..<3, using: &rng) {
                case 0: .daily
                case 1: .weekdays(Set((1...7).filter { _ in Bool.random(using: &rng) }).union([Int.random(in: 1...7, using: &rng)]))
                default: .everyNDays(Int.random(in: 2...5, using: &rng))
                }
                let scheduleJSON: WireJSON = switch schedule {
                case .daily: .object([.init("type", "daily")])
                case .weekdays(let days): .object([.init("type", "weekdays"), .init("days", .array(days.sorted().map { .int($0) }))])
                case .everyNDays(let n): .object([.init("n", .int(n)), .init("type", "every_n_days")])
                }
                let name = "U\(userIndex)H\(habitIndex)"
                let created = try worker.call("habits.create", params(user.id, ["name": .string(name), "schedule": scheduleJSON,
                                                                                 "activated_at": "2020-01-01T00:00:00Z"]))
                var habit = ReminderModel.Habit(id: try #require(created.habitID), name: name, schedule: schedule, startedAt: startedAt)
                // Reminders: awkward times and random ones, due days or chosen weekdays.
                var specs: [(minute: Int, weekdays: Set<Int>?)] = []
                for _ in 0..<Int.random(in: 1...4, using: &rng) {
                    let minute = Bool.random(using: &rng) ? awkwardMinutes.randomElement(using: &rng)! : Int.random(in: 0..<1440, using: &rng)
                    let weekdays: Set<Int>? = Int.random(in: 0..<3, using: &rng) == 0 ? Set((1...7).filter { _ in Bool.random(using: &rng) }).union([Int.random(in: 1...7, using: &rng)]) : nil
                    guard !specs.contains(where: { $0.minute == minute && $0.weekdays == weekdays }) else { continue }
                    specs.append((minute, weekdays))
                }
                let set = try worker.call("reminders.set", params(user.id, ["template_id": .uuid(habit.id), "reminders": .array(specs.map { spec in
                    .object([.init("days", spec.weekdays.map { .array($0.sorted().map { .int($0) }) } ?? "due"), .init("time", .string(hhmm(spec.minute)))])
                })]))
                let answered = set["reminders"]?.arrayValue ?? []
                #expect(answered.count == specs.count)
                habit.reminders = try specs.map { spec in
                    let match = try #require(answered.first { item in
                        item["time"]?.stringValue == hhmm(spec.minute)
                            && (spec.weekdays == nil ? item["days"]?.stringValue == "due" : Set((item["days"]?.arrayValue ?? []).compactMap(\.intValue)) == spec.weekdays)
                    })
                    return ReminderModel.Reminder(id: try #require(match["id"]?.stringValue.flatMap(UUID.init(uuidString:))), minute: spec.minute, weekdays: spec.weekdays)
                }
                // Done days (past) and skipped days (up to a year ahead) between 2021 and 2027.
                for _ in 0..<25 {
                    let day = Int.random(in: 18_628...21_184, using: &rng) // 2021-01-01 … 2027-12-31
                    guard !habit.done.contains(day), !habit.skipped.contains(day) else { continue }
                    if day < today, Bool.random(using: &rng) {
                        try worker.call("completions.set", params(user.id, ["template_id": .uuid(habit.id), "date": .string(ReminderModel.date(day)), "state": "done"]))
                        habit.done.insert(day)
                    } else if day <= today + 360 {
                        try worker.call("completions.set", params(user.id, ["template_id": .uuid(habit.id), "date": .string(ReminderModel.date(day)), "state": "skipped"]))
                        habit.skipped.insert(day)
                    }
                }
                user.habits.append(habit)
            }
            model.users.append(user)
        }
        return model
    }

    /// Windows around the zones' transitions (2021–2027) and anywhere, from a minute to a day.
    static func windows(_ model: ReminderModel, count: Int, rng: inout SeededGenerator) -> [(Int, Int)] {
        let transitions = Set(model.users.map(\.zone)).flatMap { name in
            ReminderModel.transitions(TimeZone(identifier: name)!, from: instant("2021-01-01T00:00:00Z"), to: instant("2027-12-31T00:00:00Z"))
        }
        let lengths = [60, 420, 3_600, 5 * 3_600, 86_400, 86_399, 1]
        return (0..<count).map { _ in
            let length = lengths.randomElement(using: &rng)!
            let start: Int
            if let transition = transitions.randomElement(using: &rng), Int.random(in: 0..<5, using: &rng) > 0 {
                // Exactly at the transition, or minutes and hours around it.
                start = Bool.random(using: &rng) ? transition - length / 2 : transition + 60 * Int.random(in: -30 * 60...30 * 60, using: &rng)
            } else {
                start = instant("2021-01-01T00:00:00Z") + 60 * Int.random(in: 0...(7 * 366 * 1440), using: &rng)
            }
            return (start, start + length)
        }
    }

    static func compare(_ worker: WorkerProcess, _ model: ReminderModel, windows: [(Int, Int)], now: Int) throws -> Bool {
        var compared = 0
        defer { #expect(compared > windows.count, "the windows held \(compared) firings: too few to say anything") }
        for (from, to) in windows {
            let expected = model.firings(from: from, to: to, now: now)
            let (actual, more) = try due(worker, from: from, to: to)
            #expect(!more)
            #expect(actual == expected, "[\(ReminderModel.rfc3339(from)), \(ReminderModel.rfc3339(to))): missing \(Set(expected).subtracting(actual).sorted()), extra \(Set(actual).subtracting(expected).sorted())")
            guard actual == expected else { return false }
            compared += expected.count
            // A page: the first `limit` of them, earliest first, and more to come.
            if expected.count >= 2 {
                let page = try due(worker, from: from, to: to, limit: expected.count - 1)
                #expect(page.firings == Array(expected.prefix(expected.count - 1)) && page.more)
            }
        }
        return true
    }

    @Test("the window against the model: zones with spring-forward gaps (an hour, half an hour), fall-back repeats, day starts, weekdays, schedules, done, skipped, archived and inactive days; then zone and day-start changes")
    func windowProperty() throws {
        let rounds = Int(ProcessInfo.processInfo.environment["HABIT_REMINDER_WINDOWS"] ?? "") ?? 60
        let seed = UInt64(ProcessInfo.processInfo.environment["HABIT_REMINDER_SEED"] ?? "") ?? 3_303
        try WorkerSession.with { session in
            let worker = session.worker
            var rng = SeededGenerator(seed: seed)
            let today = try session.today().daysSinceUnixEpoch
            var model = try Self.seed(worker, users: 8, rng: &rng, today: today)
            // One habit archived, one deactivated (on only before the user's today).
            try worker.call("habits.archive", params(model.users[0].id, ["template_id": .uuid(model.users[0].habits[0].id)]))
            model.users[0].habits[0].archived = true
            try worker.call("habits.deactivate", params(model.users[1].id, ["id": .uuid(model.users[1].habits[1].id)]))
            model.users[1].habits[1].deactivated = true
            let now = Int(Date().timeIntervalSince1970)
            guard try Self.compare(worker, model, windows: Self.windows(model, count: rounds, rng: &rng), now: now) else { return }
            // The zone and the day's start change: the next firings follow them.
            for index in stride(from: 0, to: model.users.count, by: 2) {
                model.users[index].zone = Self.zones[(index + 5) % Self.zones.count]
                model.users[index].dayStart = Self.dayStarts.randomElement(using: &rng)!
                try worker.call("profile.set", params(model.users[index].id, ["timezone": .string(model.users[index].zone),
                                                                               "day_starts_at": .string(Self.hhmm(model.users[index].dayStart))]))
            }
            try worker.call("habits.unarchive", params(model.users[0].id, ["template_id": .uuid(model.users[0].habits[0].id)]))
            model.users[0].habits[0].archived = false
            _ = try Self.compare(worker, model, windows: Self.windows(model, count: rounds, rng: &rng), now: now)
        }
    }

    @Test("hand-picked DST days: 02:30 on New York's spring-forward day fires at 03:00 EDT, once; 01:30 on its fall-back day at the first 01:30; a day's start moves a 01:00 reminder to the day before")
    func dstCases() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            try worker.call("profile.set", params(user, ["timezone": "America/New_York"]))
            let habit = try #require(worker.createHabit(user: user, name: "Stretch", extra: [.init("activated_at", "2020-01-01T00:00:00Z")]).habitID)
            try worker.call("reminders.set", params(user, ["template_id": .uuid(habit), "reminders": [["time": "02:30"], ["time": "01:30"]]]))
            func fireTimes(_ from: String, _ to: String) throws -> [String] {
                try Self.due(worker, from: Self.instant(from), to: Self.instant(to)).firings.map { ReminderModel.rfc3339($0.fireAt) + " " + $0.firingID.suffix(10) }
            }
            // Spring forward, 2026-03-08: 02:00 EST becomes 03:00 EDT (07:00Z).
            // 01:30 EST is 06:30Z; 02:30 does not exist and fires at the gap's end; the next day's
            // 01:30 EDT (05:30Z) is past the window.
            #expect(try fireTimes("2026-03-08T05:00:00Z", "2026-03-09T05:00:00Z") == ["2026-03-08T06:30:00Z 2026-03-08", "2026-03-08T07:00:00Z 2026-03-08"])
            #expect(try fireTimes("2026-03-08T07:00:00Z", "2026-03-08T07:00:01Z") == ["2026-03-08T07:00:00Z 2026-03-08"])
            #expect(try fireTimes("2026-03-08T06:59:59Z", "2026-03-08T07:00:00Z").isEmpty)
            // Fall back, 2026-11-01: 02:00 EDT becomes 01:00 EST (06:00Z); 01:30 fires at 05:30Z only.
            #expect(try fireTimes("2026-11-01T04:00:00Z", "2026-11-02T04:00:00Z") == ["2026-11-01T05:30:00Z 2026-11-01", "2026-11-01T07:30:00Z 2026-11-01"])
            #expect(try fireTimes("2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z").isEmpty)
            // With days starting at 04:00, 01:30 on Monday 2026-11-02 belongs to Sunday: a Sunday-only
            // reminder fires then, not on Sunday night's 01:30.
            try worker.call("profile.set", params(user, ["day_starts_at": "04:00"]))
            try worker.call("reminders.set", params(user, ["template_id": .uuid(habit), "reminders": [["time": "01:30", "days": [7]]]]))
            let firings = try Self.due(worker, from: Self.instant("2026-11-01T04:00:00Z"), to: Self.instant("2026-11-02T04:00:00Z")).firings
                + Self.due(worker, from: Self.instant("2026-11-02T04:00:00Z"), to: Self.instant("2026-11-03T04:00:00Z")).firings
            #expect(firings.map { ReminderModel.rfc3339($0.fireAt) } == ["2026-11-02T06:30:00Z"])
            #expect(firings.map { ReminderModel.date($0.habitDay) } == ["2026-11-01"])
        }
    }

    /// Claims `ids` as `sender` on `worker`; the ids it now holds.
    static func claim(_ worker: WorkerProcess, _ ids: [String], leaseMs: Int, sender: String? = nil) throws -> Set<String> {
        var members: [WireJSON.Member] = [.init("firing_ids", .array(ids.map { .string($0) })), .init("lease_ms", .int(leaseMs))]
        if let sender { members.append(.init("sender", .string(sender))) }
        let result = try worker.call("reminders.claim", .object(members))
        return Set((result["firings"]?.arrayValue ?? []).compactMap { $0["firing_id"]?.stringValue })
    }

    @Test("exactly once across senders: a sender killed after its claim loses nothing (the claim returns after its lease); two senders split one window; a retried claim by the same sender gets its firings back; a second ack changes nothing; a day done before the claim is not claimed")
    func claimsAndAcks() throws {
        try WorkerSession.with { session in
            let user = UUID()
            let worker = session.worker
            let habits = try (0..<6).map { index in
                try #require(worker.createHabit(user: user, name: "R\(index)", extra: [.init("activated_at", "2020-01-01T00:00:00Z")]).habitID)
            }
            for habit in habits {
                try worker.call("reminders.set", params(user, ["template_id": .uuid(habit), "reminders": [["time": "09:00"], ["time": "09:01"]]]))
            }
            // Tomorrow's 09:00–09:02 UTC: twelve firings.
            let tomorrow = try session.today().daysSinceUnixEpoch + 1
            let from = tomorrow * 86_400 + 9 * 3_600, to = from + 120
            let ids = try Self.due(worker, from: from, to: to).firings.map(\.firingID)
            #expect(ids.count == 12)

            // A sender claims them all and is killed before acknowledging.
            try session.withAnotherWorker { doomed in
                let held = try Self.claim(doomed, ids, leaseMs: 2_000, sender: "doomed")
                #expect(held == Set(ids))
                #expect(doomed.terminate(signal: SIGKILL))
            }
            // Meanwhile nobody else gets them, and the window leaves them out.
            #expect(try Self.claim(worker, ids, leaseMs: 60_000, sender: "b").isEmpty)
            #expect(try Self.due(worker, from: from, to: to).firings.isEmpty)
            // After the lease they come back, all of them (waiting, not timing: the lease is 2 s).
            var reclaimed: Set<String> = []
            for _ in 0..<300 where reclaimed.isEmpty {
                Thread.sleep(forTimeInterval: 0.1)
                reclaimed = try Self.claim(worker, ids, leaseMs: 60_000, sender: "b")
            }
            #expect(reclaimed == Set(ids))
            // The same sender's retried claim gets them back (its lease renewed); another gets none.
            #expect(try Self.claim(worker, ids, leaseMs: 60_000, sender: "b") == Set(ids))
            #expect(try Self.claim(worker, ids, leaseMs: 60_000, sender: "c").isEmpty)
            #expect(try Self.claim(worker, ids, leaseMs: 60_000).isEmpty)
            // Acknowledged once: listed by the first ack only, never claimed or listed again.
            let acked = try worker.call("reminders.ack", .object([.init("firing_ids", .array(ids.map { .string($0) }))]))["acked"]?.arrayValue ?? []
            #expect(Set(acked.compactMap(\.stringValue)) == Set(ids))
            let again = try worker.call("reminders.ack", .object([.init("firing_ids", .array(ids.map { .string($0) }))]))["acked"]?.arrayValue
            #expect(again == [])
            #expect(try Self.claim(worker, ids, leaseMs: 60_000, sender: "b").isEmpty)
            #expect(try Self.due(worker, from: from, to: to).firings.isEmpty)
            // One row per firing claimed, each claimed four times (the killed sender, b, b's retry… and
            // no more: refused claims write nothing).
            let rows = try session.admin.queryOne("SELECT count(*), min(claims), max(claims) FROM habit.reminder_firings")
            #expect(try rows.decode(Int64.self, at: 0) == 12)
            #expect(try rows.decode(Int32.self, at: 1) == 3 && rows.decode(Int32.self, at: 2) == 3)

            // Two senders claim the next day's window at once, on two workers: each firing held once.
            let nextFrom = from + 86_400
            let nextIDs = try Self.due(worker, from: nextFrom, to: nextFrom + 120).firings.map(\.firingID)
            #expect(nextIDs.count == 12)
            try session.withAnotherWorker { other in
                try worker.sendRequest("reminders.claim", params: .object([.init("firing_ids", .array(nextIDs.map { .string($0) })), .init("lease_ms", 60_000), .init("sender", "x")]), id: "x")
                try other.sendRequest("reminders.claim", params: .object([.init("firing_ids", .array(nextIDs.reversed().map { .string($0) })), .init("lease_ms", 60_000), .init("sender", "y")]), id: "y")
                let x = Set((try worker.response(id: "x").result?["firings"]?.arrayValue ?? []).compactMap { $0["firing_id"]?.stringValue })
                let y = Set((try other.response(id: "y").result?["firings"]?.arrayValue ?? []).compactMap { $0["firing_id"]?.stringValue })
                #expect(x.isDisjoint(with: y))
                #expect(x.union(y) == Set(nextIDs))
            }

            // A day done (or skipped) between the window and the claim: not claimed.
            let thirdFrom = nextFrom + 86_400
            let third = try Self.due(worker, from: thirdFrom, to: thirdFrom + 60).firings
            #expect(third.count == 6)
            // Only a past day can be done: skip the future day instead.
            try worker.call("completions.set", params(user, ["template_id": .uuid(habits[0]), "date": .string(ReminderModel.date(tomorrow + 2)), "state": "skipped"]))
            let held = try Self.claim(worker, third.map(\.firingID), leaseMs: 60_000, sender: "z")
            #expect(held.count == 5)
        }
    }

    @Test("bad input gets a precise error: windows, limits, firing ids, leases, reminder lists; another user's habit is not found; a direct writer meets the same rules (24 a habit, whole minutes, the zone copied from the profile)")
    func errorsAndRules() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID(), other = UUID()
            try worker.call("profile.set", params(user, ["timezone": "Europe/Berlin", "day_starts_at": "03:00"]))
            let habit = try #require(worker.createHabit(user: user, name: "Read").habitID)
            func due(_ members: [WireJSON.Member]) throws -> WorkerResponse { try worker.request("reminders.due", params: .object(members)) }
            expectError(try due([.init("from", "2026-01-01T00:00:00Z"), .init("to", "2026-01-01T00:00:00Z")]), code: Code.invalidParams, id: nil, reason: "invalid_order", field: "to")
            expectError(try due([.init("from", "2026-01-01T00:00:00Z"), .init("to", "2026-01-02T00:00:00.000001Z")]), code: Code.invalidParams, id: nil, reason: "out_of_range", field: "to")
            expectError(try due([.init("from", "2026-01-01"), .init("to", "2026-01-02T00:00:00Z")]), code: Code.invalidParams, id: nil, reason: "invalid_timestamp", field: "from")
            expectError(try due([.init("to", "2026-01-02T00:00:00Z")]), code: Code.invalidParams, id: nil, reason: "required", field: "from")
            expectError(try due([.init("from", "2026-01-01T00:00:00Z"), .init("to", "2026-01-01T01:00:00Z"), .init("limit", 0)]), code: Code.invalidParams, id: nil, reason: "out_of_range", field: "limit")
            expectError(try due([.init("from", "2026-01-01T00:00:00Z"), .init("to", "2026-01-01T01:00:00Z"), .init("user_id", .uuid(user))]), code: Code.invalidParams, id: nil, reason: "unknown_key", field: "user_id")
            let bad = "\(habit.uuidString.lowercased())/2026-02-30"
            expectError(try worker.request("reminders.claim", params: .object([.init("firing_ids", [.string(bad)]), .init("lease_ms", 5_000)])),
                        code: Code.invalidParams, id: nil, reason: "invalid_firing_id", field: "firing_ids[0]")
            expectError(try worker.request("reminders.claim", params: .object([.init("firing_ids", []), .init("lease_ms", 5_000)])),
                        code: Code.invalidParams, id: nil, reason: "empty", field: "firing_ids")
            expectError(try worker.request("reminders.claim", params: .object([.init("firing_ids", [.string("\(habit.uuidString.lowercased())/2026-02-28")]), .init("lease_ms", 999)])),
                        code: Code.invalidParams, id: nil, reason: "out_of_range", field: "lease_ms")
            expectError(try worker.request("reminders.ack", params: .object([.init("firing_ids", [.string(habit.uuidString)])])),
                        code: Code.invalidParams, id: nil, reason: "invalid_firing_id", field: "firing_ids[0]")
            // An id of the right shape that is no firing: nothing claimed, nothing acknowledged.
            #expect(try Self.claim(worker, ["\(UUID().uuidString.lowercased())/2026-02-28"], leaseMs: 5_000).isEmpty)
            func set(_ reminders: WireJSON, as owner: UUID? = nil) throws -> WorkerResponse {
                try worker.request("reminders.set", params: params(owner ?? user, ["template_id": .uuid(habit), "reminders": reminders]))
            }
            expectError(try set([["time": "7:30"]]), code: Code.invalidParams, id: nil, reason: "invalid_time", field: "reminders[0].time")
            expectError(try set([["time": "07:30", "days": [1, 8]]]), code: Code.invalidParams, id: nil, reason: "out_of_range", field: "reminders[0].days[1]")
            expectError(try set([["time": "07:30", "days": [2, 2]]]), code: Code.invalidParams, id: nil, reason: "duplicate_value", field: "reminders[0].days[1]")
            expectError(try set([["time": "07:30", "days": []]]), code: Code.invalidParams, id: nil, reason: "empty", field: "reminders[0].days")
            expectError(try set([["time": "07:30", "days": "daily"]]), code: Code.invalidParams, id: nil, reason: "wrong_type", field: "reminders[0].days")
            expectError(try set([["time": "07:30"], ["time": "07:30", "days": "due"]]), code: Code.invalidParams, id: nil, reason: "duplicate_value", field: "reminders[1]")
            expectError(try set([["time": "07:30", "at": "x"]]), code: Code.invalidParams, id: nil, reason: "unknown_key", field: "reminders[0].at")
            expectError(try set(.array((0..<25).map { .object([.init("time", .string(Self.hhmm($0)))]) })), code: Code.invalidParams, id: nil, reason: "too_many", field: "reminders")
            expectError(try set([["time": "07:30"]], as: other), code: Code.notFound, id: nil)
            expectError(try worker.request("reminders.list", params: params(other, ["template_id": .uuid(habit)])), code: Code.notFound, id: nil)
            // Replacing keeps unchanged reminders' ids.
            let first = try #require(set([["time": "07:30"], ["time": "21:00", "days": [1, 2, 3, 4, 5]]]).result)
            let kept = try #require(first["reminders"]?[0]?["id"])
            let second = try #require(set([["time": "07:30"], ["time": "22:00"]]).result)
            #expect(second["reminders"]?[0]?["id"] == kept)
            #expect(second["reminders"]?.arrayValue?.count == 2)
            #expect(try worker.call("reminders.list", params(other))["reminders"]?.arrayValue == [])
            #expect(try worker.call("reminders.list", params(user))["reminders"]?.arrayValue?.count == 2)
            #expect(try #require(set([]).result)["reminders"]?.arrayValue == [])

            // A direct writer (psql as the owner, or an app through Supabase): the same rules.
            let copied = try session.admin.queryOne("""
                INSERT INTO public.habit_reminders (user_id, template_id, local_time, time_zone, day_starts_at)
                VALUES (\(user), \(habit), '06:00', 'UTC', '00:00') RETURNING time_zone, day_starts_at::text
                """)
            #expect(try copied.decode(String.self, at: 0) == "Europe/Berlin")
            #expect(try copied.decode(String.self, at: 1) == "03:00:00")
            #expect(throws: PostgresError.self) {
                try session.admin.execute("INSERT INTO public.habit_reminders (user_id, template_id, local_time) VALUES (\(user), \(habit), '06:00:30')")
            }
            try session.admin.execute("""
                INSERT INTO public.habit_reminders (user_id, template_id, local_time)
                SELECT \(user), \(habit), make_time(7, m, 0) FROM generate_series(0, 22) m
                """)
            do {
                try session.admin.execute("INSERT INTO public.habit_reminders (user_id, template_id, local_time) VALUES (\(user), \(habit), '08:00')")
                Issue.record("a 25th reminder was accepted")
            } catch let error as PostgresError {
                #expect(error.sqlState == .rowLimitExceeded)
            }
            // The profile's zone follows into the copies.
            try worker.call("profile.set", params(user, ["timezone": "Asia/Tokyo"]))
            #expect(try session.admin.queryOne("SELECT count(*) FROM public.habit_reminders WHERE user_id = \(user) AND time_zone <> 'Asia/Tokyo'").decode(Int64.self, at: 0) == 0)
            // Deleting the habit deletes its reminders.
            try worker.call("habits.delete", params(user, ["id": .uuid(habit)]))
            #expect(try session.admin.queryOne("SELECT count(*) FROM public.habit_reminders WHERE user_id = \(user)").decode(Int64.self, at: 0) == 0)
        }
    }

    @Test("reminders.list pages every habit's reminders by habit, time and days, each once, in the order of one unpaged answer; a cursor of another listing, or a damaged one, is refused")
    func listPages() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            var rng = SeededGenerator(seed: 41)
            for index in 0..<3 {
                let habit = try #require(worker.createHabit(user: user, name: "R\(index)").habitID)
                var specs: [WireJSON] = []
                var seen = Set<String>()
                while specs.count < 24 {
                    let time = String(format: "%02d:%02d", Int.random(in: 0...23, using: &rng), [0, 15, 30, 45].randomElement(using: &rng)!)
                    let days: WireJSON = Bool.random(using: &rng) ? "due" : .array(Array(Set((0..<3).map { _ in Int.random(in: 1...7, using: &rng) })).sorted().map { .int($0) })
                    guard seen.insert("\(time) \(days)").inserted else { continue }
                    specs.append(.object([.init("time", .string(time)), .init("days", days)]))
                }
                _ = try worker.call("reminders.set", params(user, ["template_id": .uuid(habit), "reminders": .array(specs)]))
            }
            let whole = try worker.call("reminders.list", params(user))
            let all = whole["reminders"]?.arrayValue ?? []
            #expect(all.count == 72 && whole["next_cursor"] == .null, "\(whole)")
            for limit in [1, 7, 24, 71] {
                var walked: [WireJSON] = []
                var cursor: WireJSON = .null
                var pages = 0
                repeat {
                    var members: [String: WireJSON] = ["limit": .int(limit)]
                    if cursor != .null { members["cursor"] = cursor }
                    let page = try worker.call("reminders.list", params(user, members))
                    let items = page["reminders"]?.arrayValue ?? []
                    #expect(items.count <= limit)
                    walked += items
                    cursor = page["next_cursor"] ?? .null
                    pages += 1
                } while cursor != .null && pages < 100
                #expect(walked == all, "limit \(limit): \(walked.count) of \(all.count)")
            }
            let habitsCursor = try #require(worker.call("habits.list", params(user, ["limit": 1]))["next_cursor"])
            for cursor in [habitsCursor, "v1", "djF8cmVtaW5kZXJzfHh8eXx6"] {
                expectError(try worker.request("reminders.list", params: params(user, ["cursor": cursor])),
                            code: Code.invalidParams, id: nil, reason: "invalid_cursor", field: "cursor")
            }
            for limit in [0, 1_001] {
                expectError(try worker.request("reminders.list", params: params(user, ["limit": .int(limit)])),
                            code: Code.invalidParams, id: nil, reason: "out_of_range", field: "limit")
            }
        }
    }

}
