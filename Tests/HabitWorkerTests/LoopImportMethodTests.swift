import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// `account.import {source: "loop", files}` over the pipes: a small Loop Habit Tracker export
/// (written as Loop's exporter writes it: the 12-column Habits.csv, `NNN Name/Checkmarks.csv`
/// newest first) lands as habits, completions and skips in the user's zone, with the numeric
/// habit named and not imported; a second import changes nothing; a broken file is refused
/// with its reason, file, line and column, and nothing is written. The converter itself is
/// covered row by row in LoopImportTests.
@Suite("habit serve: account.import from a Loop Habit Tracker export")
struct LoopImportMethodTests {
    static func files(today: CalendarDate) -> [String: WireJSON] {
        let day = { (back: Int) in today.adding(days: -back).description }
        return [
            "Habits.csv": .string(#"""
                Position,Name,Type,Question,Description,FrequencyNumerator,FrequencyDenominator,Color,Unit,Target Type,Target Value,Archived?
                001,"Read, then ""write""",YES_NO,,,1,1,#1976D2,,,,false
                002,Weight,NUMERICAL,How much?,,1,1,#D32F2F,kg,AT_LEAST,70,false
                003,Gym,YES_NO,Did you go?,,3,7,#388E3C,,,,false
                004,Coffee,NUMERICAL,,,1,1,#D32F2F,cups,AT_MOST,2.0,false

                """#),
            "001 Read then write/Checkmarks.csv": .string("Date,Value,Notes\n\(day(0)),YES_MANUAL,two chapters\n\(day(1)),SKIP,\n\(day(2)),NO,\n\(day(3)),YES_MANUAL,\n"),
            "002 Weight/Checkmarks.csv": .string("Date,Value,Notes\n\(day(0)),71000,\n"),
            "003 Gym/Checkmarks.csv": .string("Date,Value,Notes\n\(day(1)),YES_AUTO,\n\(day(2)),YES_MANUAL,\n"),
            // At most 2 cups: 1 within (done), 3 over (a check-in, not done).
            "004 Coffee/Checkmarks.csv": .string("Date,Value,Notes\n\(day(0)),1000,\n\(day(1)),3000,\n"),
        ]
    }

    @Test("a Loop export: yes/no habits with their schedules, YES_MANUAL as completions, SKIP as skips, the numeric habit reported; again: nothing changes")
    func importsOnceAndReports() throws {
        try WorkerSession.with { session in
            let user = UUID()
            _ = try session.worker.call("profile.set", params(user, ["timezone": "Pacific/Auckland"]))
            let today = try session.today(in: "Pacific/Auckland")
            let request = params(user, ["source": "loop", "mode": "merge", "files": .object(Self.files(today: today).sorted { $0.key < $1.key }.map { WireJSON.Member($0.key, $0.value) })])
            let first = try session.worker.call("account.import", request)
            // Weight (at least 70 kg a day) is measurable: today's 71,000 thousandths are a check-in
            // of 71, which meets the target; Coffee (at most 2 cups, sql/0031) too: 1 cup is within
            // it (done), 3 over (not done).
            #expect(first["counts"]?["habits"]?["inserted"] == 4)
            #expect(first["counts"]?["completions"]?["inserted"] == 3, "Weight's and Coffee's came with their check-ins: \(first)")
            #expect(first["counts"]?["checkins"]?["inserted"] == 3 && first["counts"]?["notes"]?["inserted"] == 1, "\(first)")
            #expect(first["counts"]?["skips"]?["inserted"] == 1)
            #expect(first["loop"]?["numeric_habits_not_imported"] == [])
            let weight = try session.admin.queryOne("""
                SELECT h.kind || ' ' || h.unit || ' ' || h.target || ' ' || (SELECT string_agg(value::text, ',') FROM habit_checkins c WHERE c.user_id = h.user_id AND c.template_id = h.id)
                FROM habit_templates h WHERE h.user_id = \(user) AND h.name = 'Weight'
                """).decode(String.self, at: 0)
            #expect(weight == "measurable kg 70 71", "\(weight)")

            let rows = try session.admin.query("""
                SELECT h.name, h.schedule::text, h.color,
                       (SELECT string_agg(c.completed_date::text, ',' ORDER BY c.completed_date) FROM habit_completions c WHERE c.user_id = h.user_id AND c.template_id = h.id),
                       (SELECT string_agg(s.skipped_date::text, ',' ORDER BY s.skipped_date) FROM habit_skips s WHERE s.user_id = h.user_id AND s.template_id = h.id)
                FROM habit_templates h WHERE h.user_id = \(user) ORDER BY h.sort_order
                """).map { row in (0..<5).map { (try? row.decode(String?.self, at: $0)).flatMap { $0 } ?? "-" } }
            let day = { (back: Int) in today.adding(days: -back).description }
            #expect(rows == [
                [#"Read, then "write""#, #"{"type": "daily"}"#, "#1976D2", "\(day(3)),\(day(0))", day(1)],
                ["Weight", #"{"type": "daily"}"#, "#D32F2F", day(0), "-"],
                ["Gym", #"{"type": "times_per_week", "times": 3}"#, "#388E3C", day(2), "-"],
                ["Coffee", #"{"type": "daily"}"#, "#D32F2F", day(0), "-"],
            ])

            let again = try session.worker.call("account.import", request)
            for kind in ["habits", "completions", "skips", "checkins", "notes"] {
                #expect(again["counts"]?[kind]?["inserted"] == 0 && again["counts"]?[kind]?["updated"] == 0, "\(kind): \(again)")
            }
        }
    }

    /// Loop's numeric habits with a weekly frequency (1/7) are weekly targets (sql/0033): their
    /// amounts become check-ins, and each of the user's weeks (here from Sunday) is met on the
    /// day the database's rules say — the converter's completions are the ones the check-ins'
    /// own trigger keeps, so the import writes them without a refusal (an at-most 0 entry in a
    /// week over the target is not a kept day).
    @Test("Loop's weekly numeric habits: weekly targets, met on the day the user's week reached them")
    func weeklyNumericHabits() throws {
        try WorkerSession.with { session in
            let user = UUID()
            _ = try session.worker.call("profile.set", params(user, ["timezone": "UTC", "week_start": "sunday"]))
            let today = try session.today(in: "UTC")
            let sunday = today.adding(days: -(today.isoWeekday % 7)), week = sunday.adding(days: -7), before = sunday.adding(days: -14)
            let files: [String: WireJSON] = [
                "Habits.csv": .string("Position,Name,Type,Question,Description,FrequencyNumerator,FrequencyDenominator,Color,Unit,Target Type,Target Value,Archived?\n"
                                      + "001,Run,NUMERICAL,,,1,7,#D32F2F,km,AT_LEAST,15,false\n"
                                      + "002,Sugar,NUMERICAL,,,1,7,#D32F2F,g,AT_MOST,100,false\n"),
                // Last week: 10 on Monday, 6 on Wednesday (met); the week before: 5.
                "001 Run/Checkmarks.csv": .string("Date,Value,Notes\n\(week.adding(days: 3)),6000,\n\(week.adding(days: 1)),10000,\n\(before.adding(days: 2)),5000,\n"),
                // Last week: 30, an entered 0, 50 (within: Monday and the 0 day); the week before:
                // 80 and 40 (over: none, its 0 entry no kept day).
                "002 Sugar/Checkmarks.csv": .string("Date,Value,Notes\n\(week.adding(days: 4)),50000,\n\(week.adding(days: 2)),0,\n\(week.adding(days: 1)),30000,\n"
                                                   + "\(before.adding(days: 5)),0,\n\(before.adding(days: 3)),40000,\n\(before.adding(days: 1)),80000,\n"),
            ]
            let answer = try session.worker.call("account.import", params(user, ["source": "loop", "mode": "merge",
                                                                                 "files": .object(files.sorted { $0.key < $1.key }.map { WireJSON.Member($0.key, $0.value) })]))
            #expect(answer["loop"]?["numeric_habits_not_imported"] == [], "\(answer)")
            let rows = try session.admin.query("""
                SELECT h.name, h.target_period, h.schedule::text,
                       (SELECT string_agg(c.completed_date::text, ',' ORDER BY c.completed_date) FROM habit_completions c WHERE c.user_id = h.user_id AND c.template_id = h.id)
                FROM habit_templates h WHERE h.user_id = \(user) ORDER BY h.sort_order
                """).map { row in (0..<4).map { (try? row.decode(String?.self, at: $0)).flatMap { $0 } ?? "-" } }
            #expect(rows == [
                ["Run", "week", #"{"type": "times_per_week", "times": 1}"#, week.adding(days: 3).description],
                ["Sugar", "week", #"{"type": "times_per_week", "times": 1}"#, "\(week.adding(days: 1)),\(week.adding(days: 2))"],
            ])
            let again = try session.worker.call("account.import", params(user, ["source": "loop", "mode": "merge",
                                                                                "files": .object(files.sorted { $0.key < $1.key }.map { WireJSON.Member($0.key, $0.value) })]))
            for kind in ["habits", "completions", "checkins"] {
                #expect(again["counts"]?[kind]?["inserted"] == 0 && again["counts"]?[kind]?["deleted"] ?? 0 == 0, "\(kind): \(again)")
            }
        }
    }

    @Test("a broken Loop file: -32602 with the reason, file, line and column; nothing written; files with document refused")
    func brokenFileIsRefused() throws {
        try WorkerSession.with { session in
            let user = UUID()
            var files = Self.files(today: try session.today())
            files["003 Gym/Checkmarks.csv"] = .string("Date,Value,Notes\n2026-13-45,YES_MANUAL,\n")
            let response = try session.worker.request("account.import", params: params(user, [
                "source": "loop", "mode": "merge", "files": .object(files.sorted { $0.key < $1.key }.map { WireJSON.Member($0.key, $0.value) }),
            ]))
            #expect(response.error?["code"] == -32602)
            #expect(response.reason == "invalid_date", "\(response.raw)")
            #expect(response.data?["file"] == "003 Gym/Checkmarks.csv" && response.data?["line"] == 2, "\(response.raw)")
            #expect(try session.admin.queryOne("SELECT count(*)::int FROM habit_templates WHERE user_id = \(user)").decode(Int.self, at: 0) == 0)

            let both = try session.worker.request("account.import", params: params(user, [
                "source": "loop", "mode": "merge", "files": .object([]), "document": .object([]),
            ]))
            #expect(both.reason == "not_allowed" && both.data?["field"] == "document", "\(both.raw)")
            let none = try session.worker.request("account.import", params: params(user, ["source": "loop", "mode": "merge"]))
            #expect(none.reason == "required" && none.data?["field"] == "files", "\(none.raw)")
        }
    }
}
