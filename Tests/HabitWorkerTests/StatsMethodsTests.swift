import Foundation
import HabitStore
import PostgresClient
import Testing
import TestSupport

/// habits.stats, stats.calendar and day.get's `include: ["streaks"]` through the spawned worker
/// (issue 17): each param's validation, the result shapes for one hand-computed fortnight,
/// and isolation between users. The definitions themselves are sql/0011's; the model helper's
/// property test compares them with a model over random histories.
@Suite("habit serve: habits.stats, stats.calendar, day.get include streaks")
struct StatsMethodsTests {
    /// User in UTC, Monday weeks. 2025-01-06 is a Monday. Made by psql with activated_at in
    /// the past (their periods open then). R = 2025-01-13 (Monday, nothing done yet).
    ///
    ///          06  07  08  09  10  11  12 | 13 (R)
    ///   D daily  K   K   E   K   M   K   K |  -     current 2 from 11; longest 3 (06…09)
    ///   T 2/week K   K   .   .   .   .   . |  -     week of 06 kept; R's week not over
    ///   E daily  K   M   M   M   M   M   M |  -     current 0; longest 1 (06)
    ///   L daily: activated 2025-02-01, not on at R
    struct Fixture {
        let user: UUID
        let daily: UUID, weekly: UUID, once: UUID, later: UUID
    }

    static func arrange(_ session: WorkerSession, user: UUID = UUID()) throws -> Fixture {
        let worker = session.worker
        try worker.call("profile.set", params(user, ["timezone": "UTC", "week_start": "monday"]))
        func habit(_ name: String, _ order: Int32, _ schedule: String, from activated: String = "2025-01-06T12:00:00Z") throws -> UUID {
            try session.admin.queryOne("""
                INSERT INTO public.habit_templates (user_id, name, activated_at, schedule, sort_order)
                VALUES (\(user), \(name), \(activated)::timestamptz, \(schedule)::jsonb, \(order))
                RETURNING id
                """).decode(UUID.self, at: 0)
        }
        let daily = try habit("D", 1, #"{"type":"daily"}"#)
        let weekly = try habit("T", 2, #"{"type":"times_per_week","times":2}"#)
        let once = try habit("E", 3, #"{"type":"daily"}"#)
        let later = try habit("L", 4, #"{"type":"daily"}"#, from: "2025-02-01T12:00:00Z")
        func set(_ habit: UUID, _ date: String, _ state: String) throws {
            #expect(try worker.call("completions.set", params(user, ["template_id": .uuid(habit), "date": .string(date), "state": .string(state)]))["changed"] == true)
        }
        for date in ["2025-01-06", "2025-01-07", "2025-01-09", "2025-01-11", "2025-01-12"] { try set(daily, date, "done") }
        try set(daily, "2025-01-08", "skipped")
        for date in ["2025-01-06", "2025-01-07"] { try set(weekly, date, "done") }
        try set(once, "2025-01-06", "done")
        return Fixture(user: user, daily: daily, weekly: weekly, once: once, later: later)
    }

    static func streak(_ length: Int, _ start: String?) -> WireJSON {
        ["length": .int(length), "start": start.map(WireJSON.string) ?? .null]
    }

    static func longest(_ length: Int, _ start: String?, _ end: String?) -> WireJSON {
        ["length": .int(length), "start": start.map(WireJSON.string) ?? .null, "end": end.map(WireJSON.string) ?? .null]
    }

    /// A rate member as a Double (nil for null), so 0.8 and 0.8000000000000000 compare equal.
    static func rate(_ json: WireJSON?) -> Double?? {
        guard let json else { return .none }
        if json.isNull { return .some(nil) }
        return json.numberLiteral.flatMap(Double.init).map { .some($0) } ?? .none
    }

    @Test("habits.stats: streaks, rates and totals of every habit on R in day.get's order, or of one habit whatever its state")
    func statsShapes() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let f = try Self.arrange(session)
            let all = try worker.call("habits.stats", params(f.user, ["date": "2025-01-13"]))
            #expect(all["date"] == "2025-01-13")
            let habits = all["habits"]?.arrayValue ?? []
            #expect(habits.map { $0["id"] } == [.uuid(f.daily), .uuid(f.weekly), .uuid(f.once)], "L is not on R; order is day.get's: \(all)")
            #expect(habits.first?.keys == ["id", "unit", "current_streak", "longest_streak", "rate_7", "rate_30", "rate_365", "rate_all",
                                           "total_done", "last_done", "score"])
            guard habits.count == 3 else { return }
            let (d, t, e) = (habits[0], habits[1], habits[2])

            #expect(d["unit"] == "days")
            #expect(d["current_streak"] == Self.streak(2, "2025-01-11"), "R not done yet does not break it; \(d)")
            #expect(d["longest_streak"] == Self.longest(3, "2025-01-06", "2025-01-09"), "the skip on the 8th is passed over; \(d)")
            // rate_7 over 07…13: due 07…12 (R not over) = 6, excused 1, kept 4.
            #expect(Self.rate(d["rate_7"]) == .some(0.8), "\(d)")
            for key in ["rate_30", "rate_365", "rate_all"] { #expect(Self.rate(d[key]) == .some(5.0 / 6.0), "\(key): \(d)") }
            #expect(d["total_done"] == 5 && d["last_done"] == "2025-01-12")

            #expect(t["unit"] == "weeks")
            #expect(t["current_streak"] == Self.streak(1, "2025-01-06"), "R's week counts only once kept; \(t)")
            #expect(t["longest_streak"] == Self.longest(1, "2025-01-06", "2025-01-12"), "a week's end is its last day; \(t)")
            for key in ["rate_7", "rate_30", "rate_365", "rate_all"] { #expect(Self.rate(t[key]) == .some(1.0), "\(key): \(t)") }
            #expect(t["total_done"] == 2 && t["last_done"] == "2025-01-07")

            #expect(e["current_streak"] == Self.streak(0, nil), "missed days since its last kept day; \(e)")
            #expect(e["longest_streak"] == Self.longest(1, "2025-01-06", "2025-01-06"))
            #expect(Self.rate(e["rate_7"]) == .some(0.0) && Self.rate(e["rate_all"]) == .some(1.0 / 7.0), "\(e)")

            // One habit by id: the same object as in the list, and a habit not on R too.
            let one = try worker.call("habits.stats", params(f.user, ["id": .uuid(f.daily), "date": "2025-01-13"]))
            #expect(one == ["date": "2025-01-13", "habits": [d]])
            let later = try worker.call("habits.stats", params(f.user, ["id": .uuid(f.later), "date": "2025-01-13"]))
            #expect(later == ["date": "2025-01-13", "habits": [[
                "id": .uuid(f.later), "unit": "days", "current_streak": Self.streak(0, nil), "longest_streak": Self.longest(0, nil, nil),
                "rate_7": .null, "rate_30": .null, "rate_365": .null, "rate_all": .null, "total_done": 0, "last_done": .null,
                "score": "0.0000",
            ]]], "\(later)")

            // Every habit carries Loop's score (protocol 1.10.0; LoopScoreTests has its numbers);
            // include ["score"], which asked for it before, is accepted and changes nothing.
            #expect(one["habits"]?[0]?.keys == ["id", "unit", "current_streak", "longest_streak", "rate_7", "rate_30", "rate_365", "rate_all",
                                               "total_done", "last_done", "score"], "\(one)")
            #expect(one["habits"]?[0]?["score"]?.stringValue?.count == 6, "\(one)")
            let scored = try worker.call("habits.stats", params(f.user, ["id": .uuid(f.daily), "date": "2025-01-13", "include": ["score"]]))
            #expect(scored == one)

            // Without date: R is today in the user's zone, and the result says so.
            let today = try worker.call("habits.stats", params(f.user, ["id": .uuid(f.daily)]))
            #expect(today["date"] == .string(try session.today(in: "UTC").description))
            #expect(try worker.call("habits.stats", params(f.user, ["date": .null]))["date"] == today["date"])
        }
    }

    @Test("stats.calendar: every day of the range with due, done, skipped and level, for all habits or one")
    func calendarShapes() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let f = try Self.arrange(session)
            func day(_ date: String, _ due: Int, _ done: Int, _ skipped: Int, _ level: Int) -> WireJSON {
                ["date": .string(date), "due": .int(due), "done": .int(done), "skipped": .int(skipped), "level": .int(level)]
            }
            let all = try worker.call("stats.calendar", params(f.user, ["from": "2025-01-05", "to": "2025-01-13"]))
            #expect(all == ["from": "2025-01-05", "to": "2025-01-13", "days": [
                day("2025-01-05", 0, 0, 0, 0),  // before any habit is on
                day("2025-01-06", 3, 3, 0, 4),
                day("2025-01-07", 3, 2, 0, 3),  // ceil(4 × 2 / 3)
                day("2025-01-08", 2, 0, 1, 0),  // T's target met: not due
                day("2025-01-09", 2, 1, 0, 2),
                day("2025-01-10", 2, 0, 0, 0),
                day("2025-01-11", 2, 1, 0, 2),
                day("2025-01-12", 2, 1, 0, 2),
                day("2025-01-13", 3, 0, 0, 0),
            ]], "\(all)")
            let daily = try worker.call("stats.calendar", params(f.user, ["id": .uuid(f.daily), "from": "2025-01-08", "to": "2025-01-10"]))
            #expect(daily == ["from": "2025-01-08", "to": "2025-01-10", "days": [
                day("2025-01-08", 1, 0, 1, 0), day("2025-01-09", 1, 1, 0, 4), day("2025-01-10", 1, 0, 0, 0),
            ]], "\(daily)")
            // 366 days is the most, and every one of them is there.
            let year = try worker.call("stats.calendar", params(f.user, ["from": "2024-01-01", "to": "2024-12-31"]))
            #expect(year["days"]?.arrayValue?.count == 366)
            #expect(year["days"]?.arrayValue?.last?["date"] == "2024-12-31")
        }
    }

    @Test("day.get include [\"streaks\"]: each habit gains current_streak at the day's date; without it, nothing changes")
    func dayGetStreaks() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let f = try Self.arrange(session)
            let plain = try worker.call("day.get", params(f.user, ["date": "2025-01-13"]))
            #expect(plain["habits"]?.arrayValue?.allSatisfy { $0["current_streak"] == nil } == true)
            for empty: WireJSON in [.array([]), .null] {
                #expect(try worker.call("day.get", params(f.user, ["date": "2025-01-13", "include": empty])) == plain)
            }
            let withStreaks = try worker.call("day.get", params(f.user, ["date": "2025-01-13", "include": ["streaks"]]))
            let habits = withStreaks["habits"]?.arrayValue ?? []
            #expect(habits.map { $0["id"] } == [.uuid(f.daily), .uuid(f.weekly), .uuid(f.once)])
            #expect(habits.map { $0["current_streak"] } == [Self.streak(2, "2025-01-11"), Self.streak(1, "2025-01-06"), Self.streak(0, nil)],
                    "\(withStreaks)")
            // Apart from current_streak (the last member), the same day.
            let stripped = WireJSON.object(habits.map { .init($0["id"]?.stringValue ?? "", .object(($0.members ?? []).filter { $0.key != "current_streak" })) })
            let plainByID = WireJSON.object((plain["habits"]?.arrayValue ?? []).map { .init($0["id"]?.stringValue ?? "", $0) })
            #expect(stripped == plainByID)
            #expect(habits.first?.keys?.last == "current_streak")
            // A zone override changes today, not the streaks of a past date.
            let tokyo = try worker.call("day.get", params(f.user, ["date": "2025-01-13", "timezone": "Asia/Tokyo", "include": ["streaks"]]))
            #expect(tokyo["habits"]?.arrayValue?.map { $0["current_streak"] } == habits.map { $0["current_streak"] })
            // The same as habits.stats' current_streak for the same R, on another day too.
            for date in ["2025-01-09", "2025-01-10", "2025-01-12"] {
                let day = try worker.call("day.get", params(f.user, ["date": .string(date), "include": ["streaks", "streaks"]]))
                let stats = try worker.call("habits.stats", params(f.user, ["date": .string(date)]))
                #expect(day["habits"]?.arrayValue?.map { [$0["id"], $0["current_streak"]] }
                        == stats["habits"]?.arrayValue?.map { [$0["id"], $0["current_streak"]] }, "\(date)")
            }
        }
    }

    @Test("each param's validation: a precise -32602 naming the field, and not_found for a habit that is not the caller's")
    func validation() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let f = try Self.arrange(session)
            let stranger = UUID()
            let cases: [(String, WireJSON, String, String)] = [
                ("habits.stats", params(f.user, ["date": "2025-02-30"]), "date", "invalid_date"),
                ("habits.stats", params(f.user, ["date": 20250101]), "date", "wrong_type"),
                ("habits.stats", params(f.user, ["date": "9999-12-31"]), "date", "out_of_range"),
                ("habits.stats", params(f.user, ["id": "not-a-uuid"]), "id", "invalid_uuid"),
                ("habits.stats", params(f.user, ["timezone": "UTC"]), "timezone", "unknown_key"),
                ("stats.calendar", params(f.user, ["to": "2025-01-01"]), "from", "required"),
                ("stats.calendar", params(f.user, ["from": "2025-01-01"]), "to", "required"),
                ("stats.calendar", params(f.user, ["from": "2025-01-01", "to": "2025-1-2"]), "to", "invalid_date"),
                ("stats.calendar", params(f.user, ["from": "2025-01-02", "to": "2025-01-01"]), "to", "out_of_range"),
                ("stats.calendar", params(f.user, ["from": "2024-01-01", "to": "2025-01-01"]), "to", "out_of_range"),  // 367 days
                ("stats.calendar", params(f.user, ["id": 7, "from": "2025-01-01", "to": "2025-01-01"]), "id", "wrong_type"),
                ("day.get", params(f.user, ["date": "2025-01-13", "include": "streaks"]), "include", "wrong_type"),
                ("day.get", params(f.user, ["date": "2025-01-13", "include": ["streaks": true]]), "include", "wrong_type"),
                ("day.get", params(f.user, ["date": "2025-01-13", "include": [1]]), "include[0]", "wrong_type"),
                ("day.get", params(f.user, ["date": "2025-01-13", "include": ["streaks", "rates"]]), "include[1]", "invalid_choice"),
                ("day.get", params(f.user, ["date": "2025-01-13", "include": ["Streaks"]]), "include[0]", "invalid_choice"),
            ]
            for (method, request, field, reason) in cases {
                let response = try worker.request(method, params: request)
                expectError(response, code: Code.invalidParams, id: nil, reason: reason, field: field)
                #expect(response.dataMessage?.isEmpty == false, "\(method) \(request): \(response.raw)")
            }
            // Not the caller's habit, or no habit at all: the same not_found, byte for byte.
            for (method, extra) in [("habits.stats", [String: WireJSON]()), ("stats.calendar", ["from": "2025-01-06", "to": "2025-01-13"])] {
                let theirs = try worker.request(method, params: params(stranger, extra.merging(["id": .uuid(f.daily)]) { $1 }))
                let unknown = try worker.request(method, params: params(f.user, extra.merging(["id": .uuid(UUID())]) { $1 }))
                expectError(theirs, code: Code.notFound, id: nil, reason: "not_found")
                expectError(unknown, code: Code.notFound, id: nil, reason: "not_found")
                #expect(theirs.error == unknown.error)
            }
        }
    }

    @Test("isolation: another user sees none of the user's habits in habits.stats, stats.calendar or day.get's streaks")
    func isolation() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let f = try Self.arrange(session)
            let other = try Self.arrange(session)  // the same fortnight for a second user
            let stranger = UUID()
            #expect(try worker.call("habits.stats", params(stranger, ["date": "2025-01-13"])) == ["date": "2025-01-13", "habits": []])
            let calendar = try worker.call("stats.calendar", params(stranger, ["from": "2025-01-06", "to": "2025-01-13"]))
            #expect(calendar["days"]?.arrayValue?.allSatisfy { $0["due"] == 0 && $0["done"] == 0 && $0["skipped"] == 0 && $0["level"] == 0 } == true)
            #expect(try worker.call("day.get", params(stranger, ["date": "2025-01-13", "include": ["streaks"]]))["habits"] == [])
            // Two users with the same history: each sees only their own ids, with the same numbers.
            let mine = try worker.call("habits.stats", params(f.user, ["date": "2025-01-13"]))
            let theirs = try worker.call("habits.stats", params(other.user, ["date": "2025-01-13"]))
            #expect(mine["habits"]?.arrayValue?.map { $0["id"] } == [.uuid(f.daily), .uuid(f.weekly), .uuid(f.once)])
            #expect(theirs["habits"]?.arrayValue?.map { $0["id"] } == [.uuid(other.daily), .uuid(other.weekly), .uuid(other.once)])
            #expect(mine["habits"]?.arrayValue?.map { $0.with("id", .null) } == theirs["habits"]?.arrayValue?.map { $0.with("id", .null) })
            let myCalendar = try worker.call("stats.calendar", params(f.user, ["from": "2025-01-06", "to": "2025-01-13"]))
            #expect(myCalendar == (try worker.call("stats.calendar", params(other.user, ["from": "2025-01-06", "to": "2025-01-13"]))),
                    "the other user's habits are not counted twice")
        }
    }
}
