import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Issue 31, finding 7: `habit.import_account` called directly — as `authenticated` with the
/// user's claims, what psql or PostgREST would do — meets every rule the worker's
/// `AccountDocument` checks, with the same JSON path and reason (HB010: COLUMN, DETAIL).
/// Before, periods given out of order went in as `is_active = false` beside an open period
/// with `deactivated_at` before `activated_at`, and 20,000 periods went in where
/// docs/protocol.md ("account.import", Limits) says one habit takes at most 10,000.
@Suite struct ImportAccountWallTests {
    static let habitID = "aaaaaaaa-0000-4000-8000-0000000000a1"

    static func document(periods: [String], completions: [String] = [], habits extra: [String] = []) -> String {
        let habit = #"{"id":"\#(habitID)","name":"Run","periods":[\#(periods.joined(separator: ","))]}"#
        return #"{"format":"habit-account","version":1,"profile":null,"habits":[\#(([habit] + extra).joined(separator: ","))],"completions":[\#(completions.joined(separator: ","))],"skips":[],"lists":[],"tasks":[]}"#
    }

    static func period(_ start: String, _ end: String?) -> String {
        #"{"started_at":"\#(start)","ended_at":\#(end.map { "\"\($0)\"" } ?? "null"),"schedule":{"type":"daily"}}"#
    }

    /// Calls the function as the user and expects HB010 naming `path` with `reason`; nothing
    /// of the user's is written.
    static func expectRefusal(_ document: String, mode: String = "merge", path: String, reason: String,
                              on connection: Connection, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let user = UUID()
        // A fresh habit id per call: a document accepted by mistake would keep its id taken.
        let document = document.replacingOccurrences(of: habitID, with: UUID().uuidString.lowercased())
        do {
            _ = try RuleFunctionsTests.asUser(user, on: connection) { connection in
                try connection.queryOne("SELECT habit.import_account(\(user), \(document)::jsonb, \(mode))::text")
            }
            let state = try connection.queryOne("""
                SELECT t.is_active::text || ' ' || coalesce(t.activated_at::text, '-') || ' ' || coalesce(t.deactivated_at::text, '-')
                       || ' periods ' || (SELECT count(*) FROM public.habit_periods p WHERE p.user_id = t.user_id)
                FROM public.habit_templates t WHERE t.user_id = \(user) LIMIT 1
                """).decode(String.self, at: 0)
            Issue.record("accepted; expected \(reason) at \(path). Stored: \(state)", sourceLocation: sourceLocation)
        } catch let error as PostgresError {
            #expect(error.sqlState == .importRefused && error.column == path && error.detail == reason, "\(error)",
                    sourceLocation: sourceLocation)
        }
        #expect(try connection.queryOne("SELECT count(*) FROM public.habit_templates WHERE user_id = \(user)").decode(Int.self, at: 0) == 0,
                sourceLocation: sourceLocation)
    }

    @Test("periods out of order, or an open one before the last, are refused naming the period")
    func periodsOutOfOrder() throws {
        try TestDatabase.with { database throws in
            let connection = try database.connect()
            // The finding's document: the open period first, a closed one after it.
            try Self.expectRefusal(Self.document(periods: [Self.period("2025-03-01T08:00:00Z", nil),
                                                           Self.period("2025-01-01T08:00:00Z", "2025-02-01T08:00:00Z")]),
                                   path: "document.habits[0].periods[0].ended_at", reason: "invalid_order", on: connection)
            // Two closed periods, newest first.
            try Self.expectRefusal(Self.document(periods: [Self.period("2025-03-01T08:00:00Z", "2025-04-01T08:00:00Z"),
                                                           Self.period("2025-01-01T08:00:00Z", "2025-02-01T08:00:00Z")]),
                                   mode: "replace", path: "document.habits[0].periods[1].started_at", reason: "invalid_order", on: connection)
            // Overlapping.
            try Self.expectRefusal(Self.document(periods: [Self.period("2025-01-01T08:00:00Z", "2025-02-01T08:00:00Z"),
                                                           Self.period("2025-01-15T08:00:00Z", nil)]),
                                   path: "document.habits[0].periods[1].started_at", reason: "invalid_order", on: connection)
            // Ending before it starts.
            try Self.expectRefusal(Self.document(periods: [Self.period("2025-02-01T08:00:00Z", "2025-01-01T08:00:00Z")]),
                                   path: "document.habits[0].periods[0].ended_at", reason: "invalid_order", on: connection)
        }
    }

    @Test("10,001 periods of one habit are refused (the documented cap is 10,000), nothing written")
    func tooManyPeriods() throws {
        try TestDatabase.with { database throws in
            let connection = try database.connect()
            // One-hour periods, one after another from 2020-01-01, the last open.
            let base = Date(timeIntervalSince1970: 1_577_836_800)
            let formatter = ISO8601DateFormatter()
            var periods: [String] = []
            for n in 0..<10_001 {
                let start = base.addingTimeInterval(Double(2 * n) * 3_600)
                let end: String? = n == 10_000 ? nil : formatter.string(from: start.addingTimeInterval(3_600))
                periods.append(Self.period(formatter.string(from: start), end))
            }
            try Self.expectRefusal(Self.document(periods: periods), path: "document.habits[0].periods", reason: "too_many", on: connection)
        }
    }

    @Test("duplicate ids and days and references outside the document are refused with the worker's paths")
    func consistencyInsideTheDocument() throws {
        try TestDatabase.with { database throws in
            let connection = try database.connect()
            let open = [Self.period("2025-01-01T08:00:00Z", nil)]
            let day = #"{"template_id":"\#(Self.habitID)","date":"2025-01-05"}"#
            try Self.expectRefusal(Self.document(periods: open, habits: [#"{"id":"\#(Self.habitID)","name":"Again","periods":[]}"#]),
                                   path: "document.habits[1].id", reason: "duplicate_value", on: connection)
            try Self.expectRefusal(Self.document(periods: open, completions: [day, day]),
                                   path: "document.completions[1]", reason: "duplicate_value", on: connection)
            try Self.expectRefusal(Self.document(periods: open, completions: [#"{"template_id":"\#(UUID().uuidString.lowercased())","date":"2025-01-05"}"#]),
                                   path: "document.completions[0].template_id", reason: "unknown_reference", on: connection)
        }
    }

    /// docs/protocol.md ("account.import", Limits): one import takes at most 10,000 habits,
    /// 500,000 completions, 500,000 skips, 10,000 lists and 200,000 tasks. The documents are
    /// built by the server (small rows, nothing else in them): one more than the cap is
    /// refused naming the array, the cap itself is not refused for its size.
    @Test("the documented caps of one import: one more is too_many, the cap is not", arguments: [
        ("habits", 10_000), ("completions", 500_000), ("skips", 500_000), ("lists", 10_000), ("tasks", 200_000),
    ])
    func documentedCaps(member: String, cap: Int) throws {
        try TestDatabase.with { database throws in
            let connection = try database.connect()
            let element: String = switch member {
            case "habits": "jsonb_build_object('id', gen_random_uuid(), 'name', 'H', 'periods', '[]'::jsonb)"
            case "lists": "jsonb_build_object('id', gen_random_uuid(), 'name', 'L')"
            case "tasks": "jsonb_build_object('id', gen_random_uuid(), 'title', 'T', 'state', 'not_started', 'position', n)"
            default: "jsonb_build_object('template_id', gen_random_uuid(), 'date', '2020-01-01')"
            }
            for count in [cap + 1, cap] {
                let user = UUID()
                var refusal: PostgresError?
                do {
                    _ = try RuleFunctionsTests.asUser(user, on: connection) { connection in
                        try connection.queryOne(Query(unsafeSQL: """
                            SELECT habit.import_account('\(user.uuidString.lowercased())',
                                jsonb_build_object('format', 'habit-account', 'version', 1, 'profile', NULL,
                                                   'habits', '[]'::jsonb, 'completions', '[]'::jsonb, 'skips', '[]'::jsonb,
                                                   'lists', '[]'::jsonb, 'tasks', '[]'::jsonb)
                                || jsonb_build_object('\(member)', (SELECT jsonb_agg(\(element)) FROM generate_series(1, \(count)) n)),
                                'merge')::text
                            """))
                    }
                } catch let error as PostgresError {
                    refusal = error
                }
                let tooMany = refusal?.sqlState == .importRefused && refusal?.detail == "too_many" && refusal?.column == "document.\(member)"
                if count > cap {
                    #expect(tooMany, "\(count) \(member): \(String(describing: refusal))")
                } else {
                    #expect(!tooMany, "\(count) \(member) (the documented cap) refused for its size")
                }
            }
        }
    }

    /// A NULL mode is refused like any unknown one: it used to run as a merge that skipped the
    /// merge's own rules (the kept rows' day rule, the zone it judges by).
    @Test func aNullModeIsRefused() throws {
        try TestDatabase.with { database throws in
            let connection = try database.connect()
            let user = UUID()
            let refused = #expect(throws: PostgresError.self) {
                try RuleFunctionsTests.asUser(user, on: connection) { connection in
                    try connection.queryOne("SELECT habit.import_account(\(user), \(Self.document(periods: []))::jsonb, NULL)::text")
                }
            }
            #expect(refused?.sqlState == .invalidParameterValue, "\(String(describing: refused))")
        }
    }
}
