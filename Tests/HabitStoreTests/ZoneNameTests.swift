import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Issue 31 #11: only IANA zone names (and the aliases tzdata keeps for them, such as US/Pacific)
/// are zones of a user, for every writer: `localtime` tied a user's today to the database host's
/// clock, and `posixrules`, `Factory`, `posix/…`, `right/…` are tzdata's files, not zones.
@Suite struct ZoneNameTests {
    static let refused = ["localtime", "posixrules", "Factory", "posix/Europe/Paris", "right/Europe/Paris", "posix", "right"]

    @Test func onlyCanonicalNamesAreZones() throws {
        try TestDatabase.with { database throws in
            let connection = try database.connect()
            // The table the worker and profiles_timezone_fkey read holds none of them …
            let held = try connection.query("""
                SELECT name FROM habit.time_zones
                WHERE name IN ('localtime', 'posixrules', 'Factory', 'posix', 'right') OR name ~ '^(posix|right)/'
                ORDER BY 1 LIMIT 10
                """).map { try $0.decode(String.self, at: 0) }
            #expect(held.isEmpty, "\(held)")
            #expect(try connection.queryOne("SELECT count(*) FROM habit.time_zones WHERE name IN ('Europe/Paris', 'UTC', 'US/Pacific')")
                .decode(Int.self, at: 0) == 3)
            // … and cannot be given them again, e.g. by the documented refresh after a tzdata upgrade.
            try connection.execute("INSERT INTO habit.time_zones SELECT name FROM pg_timezone_names WHERE habit.is_zone_name(name) ON CONFLICT DO NOTHING")
            #expect(try connection.queryOne("""
                SELECT count(*) FROM habit.time_zones
                WHERE name IN ('localtime', 'posixrules', 'Factory') OR name ~ '^(posix|right)/'
                """).decode(Int.self, at: 0) == 0)
            for name in Self.refused {
                let error = try #require(throws: PostgresError.self, "\(name)") {
                    try connection.execute("INSERT INTO habit.time_zones (name) VALUES (\(name))")
                }
                #expect(error.sqlState == "23514", "\(name): \(error)")
            }
            // A user writing its profile directly (as through Supabase) meets the foreign key.
            let user = UUID()
            for name in Self.refused {
                let error = try #require(throws: PostgresError.self, "\(name)") {
                    try connection.withTransaction(prelude: [
                        "SET LOCAL ROLE authenticated",
                        "SELECT set_config('request.jwt.claims', \(#"{"sub":"\#(user.uuidString.lowercased())","role":"authenticated"}"#), true)",
                    ]) { try $0.execute("INSERT INTO public.profiles (user_id, timezone) VALUES (\(user), \(name))") }
                }
                #expect(error.sqlState == "23503", "\(name): \(error)")
            }
        }
    }
}
