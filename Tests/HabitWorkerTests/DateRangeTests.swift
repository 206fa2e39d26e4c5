import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Issue 31, finding 1 ("Spans"): dates and instants have a documented range, refused
/// -32602 `out_of_range` naming the field, in the worker's reading of the params (nothing is
/// written; docs/protocol.md, "Values"). Written dates (activated_at, completions, skips) start
/// at 1970-01-01; reference dates (day.get, week.counts, habits.stats, stats.calendar) lie in
/// 1970-01-01 … five years after the latest today anywhere (UTC's date + 1 day). Before, a
/// habit activated in 1880 wrote 146 years of derived rows and habits.stats at 2100 ran into
/// the statement timeout (-32011, which the docs call retryable).
@Suite struct DateRangeTests {
    /// `date` + `years` years (29 February → 28 February).
    static func adding(years: Int, to date: CalendarDate) -> CalendarDate {
        CalendarDate(year: date.year + years, month: date.month, day: date.day)
            ?? CalendarDate(year: date.year + years, month: date.month, day: date.day - 1)!
    }

    @Test("written dates before 1970-01-01 are refused out_of_range with their field; nothing is written")
    func writtenDatesStartIn1970() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            let refused = try worker.request("habits.create", params: params(user, ["name": "Old", "activated_at": "1880-01-01T00:00:00Z"]))
            expectError(refused, code: Code.invalidParams, id: nil, reason: "out_of_range", field: "activated_at")
            let justBefore = try worker.request("habits.create", params: params(user, ["name": "Old", "activated_at": "1969-12-31T23:59:59.999999Z"]))
            expectError(justBefore, code: Code.invalidParams, id: nil, reason: "out_of_range", field: "activated_at")
            #expect(try session.habitCount(user: user) == 0)
            // The first instant of the range is taken.
            let habit = try #require(try worker.createHabit(user: user, name: "Epoch", extra: [.init("activated_at", "1970-01-01T00:00:00Z")]).habitID)
            #expect(try session.habitCount(user: user) == 1)

            for (method, members, field) in [
                ("completions.set", ["date": WireJSON.string("1881-03-03"), "completed": true], "date"),
                ("completions.set", ["date": "1969-12-31", "state": "skipped"], "date"),
                ("completions.toggle", ["date": "1969-12-31"], "date"),
                ("skips.set_range", ["from": "1969-12-31", "to": "1970-01-05", "skipped": true], "from"),
            ] as [(String, [String: WireJSON], String)] {
                let response = try worker.request(method, params: params(user, members.merging(["template_id": .uuid(habit)]) { $1 }))
                expectError(response, code: Code.invalidParams, id: nil, reason: "out_of_range", field: field)
            }
            #expect(try session.completionCount(user: user) == 0)
            #expect(try session.admin.queryOne("SELECT count(*) FROM public.habit_skips WHERE user_id = \(user)").decode(Int.self, at: 0) == 0)
            // 1970-01-01 itself is a day the habit is on (UTC profile): completed.
            #expect(try worker.call("completions.set", params(user, ["template_id": .uuid(habit), "date": "1970-01-01", "completed": true]))["completed"] == true)
        }
    }

    @Test("reference dates lie in 1970-01-01 … today + 5 years: outside refused out_of_range before any work; the edges answer")
    func referenceDatesAreBounded() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            let habit = try #require(try worker.createHabit(user: user, name: "Run", extra: [.init("activated_at", "1970-01-01T00:00:00Z")]).habitID)
            let today = try session.today()
            // Past every zone's today + 5 years (UTC's today + 1 day + 5 years), with a day to
            // spare for a date that turns while the test runs.
            let tooLate = Self.adding(years: 5, to: today).adding(days: 3).description
            let inRange = Self.adding(years: 5, to: today).description
            let cases: [(String, [String: WireJSON], String)] = [
                ("habits.stats", ["date": "2100-01-01"], "date"),
                ("habits.stats", ["date": .string(tooLate)], "date"),
                ("habits.stats", ["date": "1969-12-31"], "date"),
                ("habits.stats", ["date": "0001-01-01"], "date"),
                ("day.get", ["date": "2100-01-01", "include": ["streaks"]], "date"),
                ("day.get", ["date": "1969-12-31"], "date"),
                ("week.counts", ["date": "0001-01-01"], "date"),
                ("week.counts", ["date": "1969-12-31", "week_start": "monday"], "date"),
                ("week.counts", ["date": .string(tooLate)], "date"),
                ("stats.calendar", ["from": "1969-12-31", "to": "1970-01-31"], "from"),
                ("stats.calendar", ["from": .string(inRange), "to": .string(tooLate)], "to"),
            ]
            for (method, members, field) in cases {
                let response = try worker.request(method, params: params(user, members))
                expectError(response, code: Code.invalidParams, id: nil, reason: "out_of_range", field: field)
                #expect(response.dataMessage?.isEmpty == false, "\(method) \(members): \(response.raw)")
            }
            // The edges of the range answer, whichever day the week starts on: 1970-01-01's
            // week begins in 1969 (Monday 29 December, Sunday 28 December), inside no bound.
            for start in ["monday", "sunday"] {
                let week = try worker.call("week.counts", params(user, ["date": "1970-01-01", "week_start": .string(start)]))
                #expect(week["week_start"] == (start == "monday" ? "1969-12-29" : "1969-12-28"), "\(week)")
            }
            #expect(try worker.call("week.counts", params(user, ["date": "1970-01-01"]))["days"]?.arrayValue?.count == 7)
            let first = try worker.call("habits.stats", params(user, ["date": "1970-01-01"]))
            #expect(first["habits"]?.arrayValue?.map { $0["id"] } == [.uuid(habit)], "\(first)")
            #expect(try worker.call("habits.stats", params(user, ["date": .string(inRange)]))["date"] == .string(inRange))
            #expect(try worker.call("day.get", params(user, ["date": .string(inRange), "include": ["streaks"]]))["date"] == .string(inRange))
            #expect(try worker.call("stats.calendar", params(user, ["from": "1970-01-01", "to": "1970-12-31"]))["days"]?.arrayValue?.count == 365)
        }
    }

    @Test("account.import: a period starting, or a completion or skip lying, before 1970 is refused out_of_range at its JSON path; nothing written")
    func importRefusesDatesBefore1970() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            let habitID: WireJSON = "aaaaaaaa-0000-4000-8000-000000000001"
            func document(start: String, completion: String? = nil, skip: String? = nil) -> WireJSON {
                .object([
                    .init("format", "habit-account"), .init("version", 1), .init("profile", .null),
                    .init("habits", [.object([.init("id", habitID), .init("name", "Walk"),
                                              .init("periods", [.object([.init("started_at", .string(start)), .init("schedule", ["type": "daily"])])])])]),
                    .init("completions", .array(completion.map { [.object([.init("template_id", habitID), .init("date", .string($0))])] } ?? [])),
                    .init("skips", .array(skip.map { [.object([.init("template_id", habitID), .init("date", .string($0))])] } ?? [])),
                    .init("lists", []), .init("tasks", []),
                ])
            }
            let cases: [(WireJSON, String)] = [
                (document(start: "1880-01-01T00:00:00Z"), "document.habits[0].periods[0].started_at"),
                (document(start: "1970-01-01T00:00:00Z", completion: "1969-12-31"), "document.completions[0].date"),
                (document(start: "1970-01-01T00:00:00Z", skip: "1881-03-03"), "document.skips[0].date"),
            ]
            for (refused, field) in cases {
                for mode in ["merge", "replace"] as [WireJSON] {
                    let response = try worker.request("account.import", params: params(user, ["document": refused, "mode": mode]))
                    expectError(response, code: Code.invalidParams, id: nil, reason: "out_of_range", field: field)
                }
            }
            #expect(try session.habitCount(user: user) == 0)
            // The first day of the range is taken.
            _ = try worker.call("account.import", params(user, ["document": document(start: "1970-01-01T00:00:00Z", completion: "1970-01-01"), "mode": "replace"]))
            #expect(try session.completionCount(user: user) == 1)
        }
    }
}
