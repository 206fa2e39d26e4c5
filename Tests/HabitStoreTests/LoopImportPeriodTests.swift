import Foundation
import JSONRPC
@testable import LoopImport
import PostgresClient
import TestSupport
import Testing

/// The Loop converter chooses each habit's period from Loop's dates (where the user's day
/// begins in the user's zone: local midnight, or the profile's day start); the database decides which days a period makes its habit on
/// (habit.period_on_days). Here the two are checked against each other on random exports in
/// zones a day apart and across DST changes, with day starts at midnight, at 03:00 (inside
/// Berlin's and Los Angeles' DST changes) and at random minutes: every completion and skip the converter produces
/// is on a day PostgreSQL counts as on (else the importer would refuse it, HB004), and the
/// periods' days are the ones docs/admin.md promises (from the first known day; an archived
/// habit's up to the day after its last).
@Suite struct LoopImportPeriodTests {
    static let zones = ["Pacific/Kiritimati", "Etc/GMT+12", "Australia/Lord_Howe", "Europe/Berlin",
                        "America/Los_Angeles", "America/Sao_Paulo", "Asia/Kathmandu", "UTC"]
    /// Days of DST changes in some of the zones, and an ordinary one.
    static let todays = ["2026-03-08", "2026-03-29", "2026-04-05", "2026-10-25", "2026-11-01", "2026-11-23"]
    /// Minutes after midnight at which the user's day begins: 00:00, 02:30 (in the skipped hour
    /// of Berlin and Los Angeles), 03:00, 23:59.
    static let dayStarts = [0, 0, 150, 180, 1_439]

    @Test(arguments: [UInt64(19), 1919])
    func producedRowsAreOnDaysPostgresCountsAsOn(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        var rows: [JSONValue] = []
        var periods: [JSONValue] = []
        let values: [LoopExport.CheckmarkValue] = [.yesManual, .yesManual, .skip, .no, .yesAuto, .unknown]
        for round in 0..<60 {
            let zone = Self.zones.randomElement(using: &random)!
            let today = LoopDay(iso: Self.todays.randomElement(using: &random)!)!
            let dayStart = Bool.random(using: &random) ? Self.dayStarts.randomElement(using: &random)! : Int.random(in: 0..<1_440, using: &random)
            let start = String(format: "%02d:%02d", dayStart / 60, dayStart % 60)
            var habits: [LoopExport.Habit] = []
            for position in 1...4 {
                var days = Set<Int>()
                for _ in 0..<Int.random(in: 0...8, using: &random) { days.insert(Int.random(in: -40...2, using: &random)) }
                let checkmarks = days.sorted().map {
                    LoopExport.Checkmark(date: today.adding(days: $0), value: values.randomElement(using: &random)!)
                }
                habits.append(LoopExport.Habit(position: position, name: "h\(round)-\(position)", question: "", type: .yesNo,
                                               numerator: 1, denominator: 1, color: "#D32F2F", unit: "",
                                               archived: Bool.random(using: &random), checkmarks: checkmarks, line: position + 1))
            }
            let export = LoopExport(habits: habits)
            let (document, _) = try export.accountDocument(user: UUID(), timeZone: zone, today: today, dayStartMinutes: dayStart)
            let root = document.objectValue!
            var periodOf: [String: JSONObject] = [:]
            for habit in root["habits"]!.arrayValue! {
                let object = habit.objectValue!
                periodOf[object["id"]!.stringValue!] = object["periods"]!.arrayValue![0].objectValue!
            }
            for kind in ["completions", "skips"] {
                for row in root[kind]!.arrayValue! {
                    let period = periodOf[row.objectValue!["template_id"]!.stringValue!]!
                    rows.append(.object(JSONObject([("s", period["started_at"]!), ("e", period["ended_at"]!),
                                                    ("d", row.objectValue!["date"]!), ("z", .string(zone)), ("t", .string(today.description)),
                                                    ("ds", .string(start))])))
                }
            }
            // The promised bounds, from Loop's dates alone.
            for habit in habits {
                let known = habit.checkmarks!.map(\.date).filter { $0 <= today }
                guard let first = known.min(), first < today else { continue }
                let id = root["habits"]!.arrayValue!.first { $0.objectValue!["sort_order"] == .int(habit.position) }!.objectValue!["id"]!
                let period = periodOf[id.stringValue!]!
                let last = known.max()!
                let upper: JSONValue = habit.archived ? .string(min(last.adding(days: 1), today).description) : .null
                periods.append(.object(JSONObject([("s", period["started_at"]!), ("e", period["ended_at"]!), ("z", .string(zone)),
                                                   ("t", .string(today.description)), ("lower", .string(first.description)), ("upper", upper),
                                                   ("ds", .string(start))])))
            }
        }
        #expect(rows.count > 100, "the random exports should produce rows")
        try TestDatabase.with { database throws in
            let connection = try database.connect()
            let offDays = try connection.query("""
                SELECT r.d::text || ' in ' || r.z || ' from ' || r.ds || ' (today ' || r.t || '): ' || habit.period_on_days(r.s, r.e, r.z, r.t, r.ds)::text
                FROM jsonb_to_recordset(\(JSONValue.array(rows).jsonString)::jsonb) AS r(s timestamptz, e timestamptz, d date, z text, t date, ds time)
                WHERE NOT habit.period_on_days(r.s, r.e, r.z, r.t, r.ds) @> r.d
                """).map { try $0.decode(String.self, at: 0) }
            #expect(offDays.isEmpty, "seed \(seed): rows on days that are not on: \(offDays.prefix(5))")
            let wrongBounds = try connection.query("""
                SELECT r.z || ' from ' || r.ds || ' (today ' || r.t || '): ' || habit.period_on_days(r.s, r.e, r.z, r.t, r.ds)::text
                       || ', expected from ' || r.lower || ' to ' || coalesce(r.upper::text, '∞')
                FROM jsonb_to_recordset(\(JSONValue.array(periods).jsonString)::jsonb)
                     AS r(s timestamptz, e timestamptz, z text, t date, lower date, upper date, ds time)
                WHERE lower(habit.period_on_days(r.s, r.e, r.z, r.t, r.ds)) IS DISTINCT FROM r.lower
                   OR upper(habit.period_on_days(r.s, r.e, r.z, r.t, r.ds)) IS DISTINCT FROM r.upper
                   OR r.e <= r.s
                """).map { try $0.decode(String.self, at: 0) }
            #expect(wrongBounds.isEmpty, "seed \(seed): \(wrongBounds.prefix(5))")
            #expect(periods.count > 50)
        }
    }
}
