import Foundation
import HabitBatch
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// `habit weekly-counts --values` (issue 32: "the week's value totals per habit"): per habit
/// counted from check-ins and week with an entry, the week's value, against hand-computed
/// answers and against the worker's own reading of one user's week (HabitRepository.weekSummary,
/// week.counts' `values`), which the two must share.
@Suite struct WeeklyValuesTests {
    static let dana = UUID(uuidString: "00000000-0000-0000-0000-0000000000da")!
    static let eve = UUID(uuidString: "00000000-0000-0000-0000-0000000000ee")!
    static let run = UUID(uuidString: "da000000-0000-0000-0000-000000000001")!     // dana: 5 km a day
    static let coffee = UUID(uuidString: "da000000-0000-0000-0000-000000000002")!  // dana: at most 2 cups a day
    static let floss = UUID(uuidString: "da000000-0000-0000-0000-000000000003")!   // dana: boolean, target 1: not counted
    static let swim = UUID(uuidString: "ee000000-0000-0000-0000-000000000001")!    // eve: 10 km a week

    static func runValues(_ job: WeeklyCountsJob, on connection: Connection) throws -> String {
        try output(of: job, on: connection, values: true)
    }

    /// Monday weeks 2021-01-04 and 2021-01-11 (both users in UTC).
    static func load(_ admin: Connection) throws {
        try admin.execute("SET habit.backfill = 'on'")
        try admin.executeScript(unsafeSQL: """
            INSERT INTO profiles (user_id, timezone) VALUES ('\(dana)', 'UTC'), ('\(eve)', 'UTC');
            INSERT INTO habit_templates (id, user_id, name, activated_at, kind, unit, target, target_type, target_period, schedule) VALUES
                ('\(run)', '\(dana)', 'Run', '2021-01-01 00:00Z', 'measurable', 'km', 5, 'at_least', 'day', '{"type":"daily"}'),
                ('\(coffee)', '\(dana)', 'Coffee', '2021-01-01 00:00Z', 'measurable', 'cups', 2, 'at_most', 'day', '{"type":"daily"}'),
                ('\(floss)', '\(dana)', 'Floss', '2021-01-01 00:00Z', 'boolean', NULL, 1, 'at_least', 'day', '{"type":"daily"}'),
                ('\(swim)', '\(eve)', 'Swim', '2021-01-01 00:00Z', 'measurable', 'km', 10, 'at_least', 'week', '{"type":"times_per_week","times":1}');
            INSERT INTO habit_checkins (user_id, template_id, checkin_date, value) VALUES
                ('\(dana)', '\(run)', '2021-01-04', 2.5), ('\(dana)', '\(run)', '2021-01-04', 3), ('\(dana)', '\(run)', '2021-01-10', 1.25),
                ('\(dana)', '\(run)', '2021-01-12', 7),
                ('\(dana)', '\(coffee)', '2021-01-05', 1),
                ('\(eve)', '\(swim)', '2021-01-05', 4), ('\(eve)', '\(swim)', '2021-01-08', 6.5);
            -- A run day done by a toggle (a check-in of the rest, 5), a coffee day kept at 0, a floss day.
            INSERT INTO habit_completions (user_id, template_id, completed_date) VALUES
                ('\(dana)', '\(run)', '2021-01-06'), ('\(dana)', '\(coffee)', '2021-01-13'), ('\(dana)', '\(floss)', '2021-01-06');
            """)
        try admin.execute("RESET habit.backfill")
    }

    @Test("per counted habit and week with an entry: the week's value; not counted habits and empty weeks have no row")
    func valuesPerHabitAndWeek() throws {
        try TestDatabase.with { database in
            let admin = try database.connect()
            try Self.load(admin)
            let batch = try database.connect(user: "habit_batch")
            var job = WeeklyCountsJob(from: day("2021-01-04"), to: day("2021-01-17"))
            #expect(try Self.runValues(job, on: batch) == """
                user_id,template_id,week_start,value
                \(Self.dana.lowercaseString),\(Self.run.lowercaseString),2021-01-04,11.75
                \(Self.dana.lowercaseString),\(Self.run.lowercaseString),2021-01-11,7
                \(Self.dana.lowercaseString),\(Self.coffee.lowercaseString),2021-01-04,1
                \(Self.dana.lowercaseString),\(Self.coffee.lowercaseString),2021-01-11,0
                \(Self.eve.lowercaseString),\(Self.swim.lowercaseString),2021-01-04,10.5

                """)
            // Sunday weeks move 2021-01-10 (a Sunday) into the next week; one user; JSON lines.
            job.weekStart = .sunday
            job.user = Self.dana
            job.format = .json
            let lines = try Self.runValues(job, on: batch).split(separator: "\n")
            #expect(lines.count == 4, "\(lines)")
            #expect(lines.first == #"{"user_id" : "\#(Self.dana.lowercaseString)", "template_id" : "\#(Self.run.lowercaseString)", "week_start" : "2021-01-03", "value" : "10.5"}"#)
            #expect(lines.dropFirst().first?.contains(#""week_start" : "2021-01-10", "value" : "8.25""#) == true, "\(lines)")
        }
    }

    @Test("the batch's values are week.counts' values of the same week, habit by habit")
    func valuesAgreeWithWeekCounts() throws {
        try TestDatabase.with { database in
            try Self.load(try database.connect())
            let batch = try database.connect(user: "habit_batch")
            let repository = HabitRepository(connection: try database.connect(user: "habit_worker"))
            for user in [Self.dana, Self.eve] {
                for (convention, some) in [WeekStart.monday, .sunday].flatMap({ c in [day("2021-01-05"), day("2021-01-12")].map { (c, $0) } }) {
                    let monday = convention.weekStart(containing: some)
                    var job = WeeklyCountsJob(from: monday, to: monday.adding(days: 6))
                    job.weekStart = convention
                    job.user = user
                    let batchValues = try Self.runValues(job, on: batch).split(separator: "\n").dropFirst().map { line in
                        let cells = line.split(separator: ",")
                        return (template: String(cells[1]), value: DecimalValue(normalizing: String(cells[3]))!)
                    }
                    // week.counts lists every counted habit on in the week, 0 without an entry;
                    // the batch only the weeks with an entry.
                    let worker = try repository.weekSummary(user: user, containing: monday, weekStart: convention).values
                    for (template, value) in worker.map({ ($0.templateID.lowercaseString, $0.value) }) {
                        let row = batchValues.first { $0.template == template }
                        #expect(row?.value ?? .zero == value, "\(template) in the week of \(monday): batch \(String(describing: row)), week.counts \(value)")
                    }
                    #expect(batchValues.allSatisfy { row in worker.contains { $0.templateID.lowercaseString == row.template } }, "\(batchValues)")
                }
            }
        }
    }
}
