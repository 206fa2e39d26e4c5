import Foundation
import HabitStore
import PostgresClient
import Testing
import TestSupport

/// day.get's `due` and `skipped` and week.counts' `due` and `skipped` through the spawned
/// worker, for one fixed week of four schedules (issue 16). The rules themselves are
/// habit.due_days and habit.habit_days_at's; HistoryPropertyTests compares them with a model.
@Suite("habit serve: due and skipped in day.get and week.counts")
struct DueAndSkippedTests {
    @Test("each schedule's due days, a times_per_week target met in the user's week, a skip, completions of habits not on the day left out")
    func dueAndSkipped() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            #expect(try worker.call("profile.set", params(user, ["timezone": "UTC", "week_start": "sunday"]))["week_start"] == "sunday")
            // Made by psql with their schedule from the first day on. 2025-01-05 is a Sunday.
            func habit(_ name: String, _ schedule: String) throws -> UUID {
                let id = try session.admin.queryOne("""
                    INSERT INTO public.habit_templates (user_id, name, activated_at, schedule, sort_order)
                    VALUES (\(user), \(name), '2025-01-05T12:00:00Z', \(schedule)::jsonb, \(Int32(name.unicodeScalars.first!.value)))
                    RETURNING id
                    """).decode(UUID.self, at: 0)
                return id
            }
            let daily = try habit("D", #"{"type":"daily"}"#)
            let weekdays = try habit("W", #"{"type":"weekdays","days":[1,3,5]}"#)        // Mon, Wed, Fri
            let everyThird = try habit("N", #"{"type":"every_n_days","n":3}"#)             // 5th, 8th, 11th
            let twice = try habit("T", #"{"type":"times_per_week","times":2}"#)            // done Mon and Tue
            for date in ["2025-01-06", "2025-01-07"] {
                #expect(try worker.call("completions.set", params(user, ["template_id": .uuid(twice), "date": .string(date), "completed": true]))["changed"] == true)
            }
            try session.admin.execute("""
                INSERT INTO public.habit_skips (user_id, template_id, skipped_date) VALUES (\(user), \(daily), '2025-01-09')
                """)
            // A completion dated before D's first day, written on purpose by an admin: D is not
            // on that day, so day.get lists neither D nor its id.
            try session.admin.withTransaction(prelude: ["SET LOCAL habit.backfill = 'on'"]) { connection in
                _ = try connection.execute("""
                    INSERT INTO public.habit_completions (user_id, template_id, completed_date)
                    VALUES (\(user), \(daily), '2025-01-01')
                    """)
            }

            func day(_ date: String) throws -> (due: Set<UUID>, notDue: Set<UUID>, completed: WireJSON?, skipped: WireJSON?) {
                let view = try worker.call("day.get", params(user, ["date": .string(date)]))
                let habits = view["habits"]?.arrayValue ?? []
                func ids(_ due: Bool) -> Set<UUID> {
                    Set(habits.filter { $0["due"] == .bool(due) }.compactMap { $0["id"]?.stringValue.flatMap(UUID.init(uuidString:)) })
                }
                return (ids(true), ids(false), view["completed"], view["skipped"])
            }
            let sunday = try day("2025-01-05")
            #expect(sunday.due == [daily, everyThird, twice] && sunday.notDue == [weekdays])
            let tuesday = try day("2025-01-07")
            #expect(tuesday.due == [daily, twice], "the day of the completion that meets the target is still due")
            #expect(tuesday.completed == .array([.uuid(twice)]) && tuesday.skipped == [])
            let wednesday = try day("2025-01-08")
            #expect(wednesday.due == [daily, weekdays, everyThird] && wednesday.notDue == [twice], "target met on Tuesday")
            let thursday = try day("2025-01-09")
            #expect(thursday.due == [daily] && thursday.skipped == .array([.uuid(daily)]) && thursday.completed == [])
            let first = try day("2025-01-01")
            #expect(first.due.isEmpty && first.notDue.isEmpty && first.completed == [], "completed lists only habits on the day")

            func counts(_ date: String, _ completed: Int, _ active: Int, _ due: Int, _ skipped: Int) -> WireJSON {
                ["date": .string(date), "completed": .int(completed), "active": .int(active), "due": .int(due), "skipped": .int(skipped)]
            }
            // No week_start: the profile's (Sunday).
            let week = try worker.call("week.counts", params(user, ["date": "2025-01-08"]))
            #expect(week == [
                "week_start": "2025-01-05",
                "days": [counts("2025-01-05", 0, 4, 3, 0), counts("2025-01-06", 1, 4, 3, 0), counts("2025-01-07", 1, 4, 2, 0),
                         counts("2025-01-08", 0, 4, 3, 0), counts("2025-01-09", 0, 4, 1, 1), counts("2025-01-10", 0, 4, 2, 0),
                         counts("2025-01-11", 0, 4, 2, 0)],
                "values": [],
            ])
            // Monday weeks group the days differently; T's target still counts in the user's
            // (Sunday) weeks, so Sunday the 12th starts a new one and T is due again.
            let monday = try worker.call("week.counts", params(user, ["date": "2025-01-08", "week_start": "monday"]))
            #expect(monday["week_start"] == "2025-01-06")
            #expect(monday["days"]?.arrayValue?.last == counts("2025-01-12", 0, 4, 2, 0))
        }
    }

    /// Issue 30, item 7: a holiday (`skips.set_range` over every habit) skips each habit on,
    /// due or not, but week.counts counts as skipped only the due ones, so `skipped` never
    /// exceeds `due` (it answered due 1, skipped 3). A holiday is rows written when it is set:
    /// a habit created afterwards is on during it and not skipped, until the range is sent
    /// again (which leaves the days already skipped as they are).
    @Test("a holiday counts as skipped only the habits due; a habit created after it is not covered")
    func holidaySkipsCountOnlyDueHabits() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            #expect(try worker.call("profile.set", params(user, ["timezone": "UTC", "week_start": "monday"]))["week_start"] == "monday")
            // Made by psql from Monday 2025-01-06 on: daily, Mondays only, Wednesdays only.
            func habit(_ name: String, _ schedule: String) throws -> UUID {
                try session.admin.queryOne("""
                    INSERT INTO public.habit_templates (user_id, name, activated_at, schedule)
                    VALUES (\(user), \(name), '2025-01-06T08:00:00Z', \(schedule)::jsonb)
                    RETURNING id
                    """).decode(UUID.self, at: 0)
            }
            let daily = try habit("Daily", #"{"type":"daily"}"#)
            _ = try habit("Mondays", #"{"type":"weekdays","days":[1]}"#)
            _ = try habit("Wednesdays", #"{"type":"weekdays","days":[3]}"#)

            // Tuesday and Wednesday off: every habit on is skipped, due or not.
            let holiday = try worker.call("skips.set_range", params(user, ["from": "2025-01-07", "to": "2025-01-08", "skipped": true]))
            #expect(holiday == ["changed": 6, "days": ["2025-01-07", "2025-01-08"]])
            func counts(_ date: String, _ active: Int, _ due: Int, _ skipped: Int) -> WireJSON {
                ["date": .string(date), "completed": 0, "active": .int(active), "due": .int(due), "skipped": .int(skipped)]
            }
            let week = try worker.call("week.counts", params(user, ["date": "2025-01-08"]))
            #expect(week == [
                "week_start": "2025-01-06",
                "days": [counts("2025-01-06", 3, 2, 0), counts("2025-01-07", 3, 1, 1), counts("2025-01-08", 3, 2, 2),
                         counts("2025-01-09", 3, 1, 0), counts("2025-01-10", 3, 1, 0), counts("2025-01-11", 3, 1, 0),
                         counts("2025-01-12", 3, 1, 0)],
                "values": [],
            ])

            // A holiday ahead, then a habit created today: on during the holiday, not skipped.
            let today = try session.today()
            let first = today.adding(days: 1), last = today.adding(days: 3)
            let ahead = try worker.call("skips.set_range", params(user, ["from": .string(first.description), "to": .string(last.description), "skipped": true]))
            #expect(ahead["changed"] == 9)
            let later = try #require(try worker.call("habits.create", params(user, ["name": "Later"]))["id"]?.stringValue.flatMap(UUID.init(uuidString:)))
            var day = first
            while day <= last {
                let view = try worker.call("day.get", params(user, ["date": .string(day.description)]))
                let skipped = Set((view["skipped"]?.arrayValue ?? []).compactMap { $0.stringValue.flatMap(UUID.init(uuidString:)) })
                #expect(skipped.contains(daily) && !skipped.contains(later), "\(day): \(view)")
                let days = try worker.call("week.counts", params(user, ["date": .string(day.description)]))["days"]?.arrayValue ?? []
                let counts = try #require(days.first { $0["date"] == .string(day.description) })
                // Every due habit but the new one is skipped.
                #expect(counts["skipped"]?.intValue == counts["due"]?.intValue.map { $0 - 1 }, "\(day): \(counts)")
                day = day.adding(days: 1)
            }
            // Sent again, the holiday covers the new habit too; the other days stay skipped.
            #expect(try worker.call("skips.set_range", params(user, ["from": .string(first.description), "to": .string(last.description), "skipped": true]))["changed"] == 3)
        }
    }
}
