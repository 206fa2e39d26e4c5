import Foundation
import PostgresClient
import TestSupport
import Testing

/// Every supported type goes to the server as a binary parameter and comes back decoded;
/// the server's own text rendering is checked too, so a symmetric encode/decode bug
/// cannot hide.
@Suite struct ValueRoundTripTests {
    let connection: Connection

    init() throws {
        connection = try TestDatabase.adminConnection()
    }

    func roundTrip<Value: PostgresCodable & Equatable>(_ value: Value, cast: String, text expected: String? = nil,
                                                       sourceLocation: SourceLocation = #_sourceLocation) throws {
        let row = try connection.queryOne("SELECT \(value)::\(unsafeSQL: cast), (\(value)::\(unsafeSQL: cast))::text")
        #expect(try row.decode(Value.self, at: 0) == value, sourceLocation: sourceLocation)
        if let expected {
            #expect(try row.decode(String.self, at: 1) == expected, sourceLocation: sourceLocation)
        }
    }

    @Test func integers() throws {
        try roundTrip(Int16.min, cast: "int2", text: "-32768")
        try roundTrip(Int16.max, cast: "int2", text: "32767")
        try roundTrip(Int32.min, cast: "int4", text: "-2147483648")
        try roundTrip(Int32.max, cast: "int4", text: "2147483647")
        try roundTrip(Int64.min, cast: "int8", text: "-9223372036854775808")
        try roundTrip(Int64.max, cast: "int8", text: "9223372036854775807")
        try roundTrip(0, cast: "int8", text: "0")
        try roundTrip(-1, cast: "int8", text: "-1")
        // Narrowing decodes refuse values that do not fit.
        let row = try connection.queryOne("SELECT 70000::int4 AS wide")
        #expect(throws: PostgresError.self) { try row.decode(Int16.self, at: 0) }
        #expect(try row.decode(Int64.self, at: 0) == 70000)
    }

    @Test func booleansAndFloats() throws {
        try roundTrip(true, cast: "bool", text: "true")
        try roundTrip(false, cast: "bool", text: "false")
        try roundTrip(1.5, cast: "float8", text: "1.5")
        try roundTrip(-0.0, cast: "float8", text: "-0")
        try roundTrip(Double.greatestFiniteMagnitude, cast: "float8")
    }

    @Test func text() throws {
        try roundTrip("", cast: "text", text: "")
        try roundTrip("plain", cast: "text", text: "plain")
        try roundTrip("Ünïcödé — 日本語 🏃‍♀️", cast: "text", text: "Ünïcödé — 日本語 🏃‍♀️")
        try roundTrip("quote ' and \" and \\ and $1", cast: "text", text: "quote ' and \" and \\ and $1")
        let long = String(repeating: "x", count: 1_000_000)
        try roundTrip(long, cast: "text")
        // Zero bytes are not valid in PostgreSQL text: the server says so, nothing crashes.
        #expect(throws: PostgresError.self) { try connection.queryOne("SELECT \("a\u{0}b")::text") }
    }

    @Test func uuids() throws {
        let id = UUID(uuidString: "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0")!
        try roundTrip(id, cast: "uuid", text: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")
        let nilUUID = UUID(uuidString: "00000000-0000-0000-0000-000000000000")!
        try roundTrip(nilUUID, cast: "uuid", text: "00000000-0000-0000-0000-000000000000")
        let generated = try connection.queryOne("SELECT gen_random_uuid()::text, gen_random_uuid()").decode(UUID.self, at: 1)
        #expect(generated != nilUUID)
    }

    @Test func dates() throws {
        try roundTrip(CalendarDate(year: 2026, month: 11, day: 21)!, cast: "date", text: "2026-11-21")
        try roundTrip(CalendarDate(year: 2000, month: 1, day: 1)!, cast: "date", text: "2000-01-01")
        try roundTrip(CalendarDate(year: 1999, month: 12, day: 31)!, cast: "date", text: "1999-12-31")
        try roundTrip(CalendarDate(year: 2024, month: 2, day: 29)!, cast: "date", text: "2024-02-29")
        try roundTrip(CalendarDate(year: 1, month: 1, day: 1)!, cast: "date", text: "0001-01-01")
        // PostgreSQL's extremes: 4713 BC (astronomical year -4712) and 5874897 AD.
        try roundTrip(CalendarDate(year: -4712, month: 1, day: 1)!, cast: "date", text: "4713-01-01 BC")
        try roundTrip(CalendarDate(year: 5_874_897, month: 12, day: 31)!, cast: "date", text: "5874897-12-31")
        let infinity = try connection.queryOne("SELECT 'infinity'::date AS d")
        #expect(throws: PostgresError.self) { try infinity.decode(CalendarDate.self, "d") }
    }

    /// A date is a calendar date: whatever the session's time zone, it reads back unchanged.
    @Test(arguments: ["Pacific/Kiritimati", "America/Los_Angeles", "Pacific/Auckland", "UTC"])
    func datesIgnoreSessionTimeZone(zone: String) throws {
        try connection.execute("SELECT set_config('TimeZone', \(zone), false)")
        let date = CalendarDate(year: 2026, month: 11, day: 21)!
        let row = try connection.queryOne("SELECT \(date)::date, '2026-11-21'::date, (\(date)::date)::text")
        #expect(try row.decode(CalendarDate.self, at: 0) == date)
        #expect(try row.decode(CalendarDate.self, at: 1) == date)
        #expect(try row.decode(String.self, at: 2) == "2026-11-21")
    }

    @Test func timestamps() throws {
        let instant = PostgresTimestamp(rfc3339: "2026-11-21T23:30:00.123456-08:00")!
        #expect(instant.rfc3339 == "2026-11-22T07:30:00.123456Z")
        try connection.execute("SELECT set_config('TimeZone', 'UTC', false)")
        try roundTrip(instant, cast: "timestamptz", text: "2026-11-22 07:30:00.123456+00")
        try roundTrip(PostgresTimestamp(rfc3339: "1970-01-01T00:00:00Z")!, cast: "timestamptz", text: "1970-01-01 00:00:00+00")
        try roundTrip(PostgresTimestamp(rfc3339: "0001-01-01T00:00:00Z")!, cast: "timestamptz", text: "0001-01-01 00:00:00+00")
        try roundTrip(PostgresTimestamp(rfc3339: "9999-12-31T23:59:59.999999Z")!, cast: "timestamptz", text: "9999-12-31 23:59:59.999999+00")
        let infinite = try connection.queryOne("SELECT 'infinity'::timestamptz").decode(PostgresTimestamp.self, at: 0)
        #expect(infinite.isInfinite && infinite.rfc3339 == "infinity")
        // Our RFC 3339 text against the server's rendering of the same instants (years 1…9999,
        // with and without microseconds), so the formatter cannot drift from the decoder.
        var generator = SystemRandomNumberGenerator()
        for index in 0..<300 {
            var micros = Int64.random(in: -63_082_281_600_000_000...252_455_615_999_999_999, using: &generator)
            if index.isMultiple(of: 2) { micros -= micros % 1_000_000 }
            let instant = PostgresTimestamp(microsecondsSincePostgresEpoch: micros)
            let text = try connection.queryOne("""
                SELECT to_char(\(instant)::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS')
                       || CASE WHEN extract(microseconds FROM \(instant)::timestamptz)::bigint % 1000000 = 0 THEN ''
                               ELSE to_char(\(instant)::timestamptz AT TIME ZONE 'UTC', '.US') END || 'Z'
                """).decode(String.self, at: 0)
            #expect(instant.rfc3339 == text)
        }
        // The session zone changes how the server prints, never the instant we decode.
        try connection.execute("SELECT set_config('TimeZone', 'Pacific/Kiritimati', false)")
        let row = try connection.queryOne("SELECT \(instant)::timestamptz, (\(instant)::timestamptz)::text")
        #expect(try row.decode(PostgresTimestamp.self, at: 0) == instant)
        #expect(try row.decode(String.self, at: 1) == "2026-11-22 21:30:00.123456+14")
        // Foundation Date binds as timestamptz too.
        let now = Date(timeIntervalSince1970: 1_790_000_000.25)
        #expect(try connection.queryOne("SELECT \(now)").decode(Date.self, at: 0) == now)
        // timestamp without time zone is a wall-clock reading, not an instant: refused.
        let wallClock = try connection.queryOne("SELECT now()::timestamp AS local")
        #expect(throws: PostgresError.self) { try wallClock.decode(PostgresTimestamp.self, "local") }
    }

    @Test func jsonb() throws {
        let document = JSONB(text: #"{"a": [1, 2, {"b": "ü ✓"}], "c": null}"#)
        let row = try connection.queryOne("SELECT \(document), \(document)->'a'->2->>'b', \(document)::json")
        #expect(try row.decode(JSONB.self, at: 0).text == #"{"a": [1, 2, {"b": "ü ✓"}], "c": null}"#)
        #expect(try row.decode(String.self, at: 1) == "ü ✓")
        #expect(try row.decode(JSONB.self, at: 2).text == #"{"a": [1, 2, {"b": "ü ✓"}], "c": null}"#)
        #expect(throws: PostgresError.self) { try connection.query("SELECT \(JSONB(text: "{not json"))") }
    }

    @Test func numeric() throws {
        let row = try connection.queryOne("SELECT 0::numeric, 1234567.0089::numeric, -0.000012::numeric, 10000::numeric, 'NaN'::numeric, (2::numeric / 3)::numeric(10,4)")
        #expect(try row.decode(PostgresNumeric.self, at: 0).text == "0")
        #expect(try row.decode(PostgresNumeric.self, at: 1).text == "1234567.0089")
        #expect(try row.decode(PostgresNumeric.self, at: 2).text == "-0.000012")
        #expect(try row.decode(PostgresNumeric.self, at: 3).text == "10000")
        #expect(try row.decode(PostgresNumeric.self, at: 4).text == "NaN")
        #expect(try row.decode(Double.self, at: 5) == 0.6667)
    }

    @Test func nulls() throws {
        let row = try connection.queryOne("""
            SELECT \(String?.none)::text AS t, \(Int?.none) AS i, \(UUID?.none) AS u, \(CalendarDate?.none) AS d,
                   \(PostgresTimestamp?.none) AS ts, \(Bool?.none) AS b, \(JSONB?.none) AS j, \(Optional("x"))::text AS x
            """)
        #expect(try row.decode(String?.self, "t") == nil)
        #expect(try row.decode(Int?.self, "i") == nil)
        #expect(try row.decode(UUID?.self, "u") == nil)
        #expect(try row.decode(CalendarDate?.self, "d") == nil)
        #expect(try row.decode(PostgresTimestamp?.self, "ts") == nil)
        #expect(try row.decode(Bool?.self, "b") == nil)
        #expect(try row.decode(JSONB?.self, "j") == nil)
        #expect(try row.decode(String?.self, "x") == "x")
        #expect(row.isNull(at: 0) && !row.isNull(at: 7))
        // A NULL where the caller expects a value is a decoding error naming the column.
        let error = try #require(throws: PostgresError.self) { try row.decode(String.self, "t") }
        #expect(error.kind == .decoding)
        #expect(error.message.contains("\"t\""))
    }

    @Test func decodingErrorsNameColumnAndTypes() throws {
        let row = try connection.queryOne("SELECT now() AS created_at")
        let error = try #require(throws: PostgresError.self) { try row.decode(Int.self, "created_at") }
        #expect(error.kind == .decoding)
        #expect(error.message.contains("\"created_at\""))
        #expect(error.message.contains("timestamptz"))
        #expect(error.message.contains("Int"))
        let missing = try #require(throws: PostgresError.self) { try row.decode(Int.self, "nope") }
        #expect(missing.message.contains("nope"))
    }
}

@Suite struct UUIDTextTests {
    @Test func canonicalParsingMatchesFoundation() {
        for _ in 0..<200 {
            let id = UUID()
            #expect(UUID(canonical: id.uuidString) == id)
            #expect(UUID(canonical: id.lowercaseString) == id)
            #expect(id.lowercaseString == id.uuidString.lowercased())
            var appended = Array("x".utf8)
            id.appendLowercase(to: &appended)
            #expect(appended == Array(("x" + id.lowercaseString).utf8))
            let other = UUID()
            #expect(UUID.textOrder(id, other) == (id.lowercaseString < other.lowercaseString))
            #expect(!UUID.textOrder(id, id))
        }
        for bad in ["", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f00",
                    "0f1e2d3c4b5a-6978-8796-a5b4c3d2e1f0-", "{0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f}",
                    "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1fg", "0f1e2d3c 4b5a 6978 8796 a5b4c3d2e1f0", "ö0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1"] {
            #expect(UUID(canonical: bad) == nil, "\(bad)")
        }
    }
}
