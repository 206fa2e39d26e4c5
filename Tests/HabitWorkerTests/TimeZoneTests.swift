import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// The worker's process time zone (TZ) — and libpq's session zone (PGTZ) — must not change
/// any date it computes or any timestamp it prints.
@Suite("habit serve: process time zone")
struct TimeZoneTests {
    @Test("workers under far-apart zones answer identically", arguments: [["TZ"], ["TZ", "PGTZ"]])
    func processTimeZoneDoesNotMatter(variables: [String]) throws {
        try WorkerSession.with { session in
            let user = UUID()
            // 23:30 UTC on 1 March is already 2 March in Kiritimati (UTC+14) and still 1 March
            // in Los Angeles; 20:30 UTC is written with a +14:00 offset.
            let late = try #require(try session.worker.createHabit(user: user, name: "Late", extra: [.init("activated_at", "2025-03-01T23:30:00Z")])["id"])
            let offset = try #require(try session.worker.createHabit(user: user, name: "Offset", extra: [.init("activated_at", "2025-03-02T10:30:00+14:00")])["id"])
            #expect(try session.worker.call("completions.set", params(user, ["template_id": late, "date": "2025-03-01", "completed": true]))
                == ["completed": true, "state": "done", "changed": true])

            let requests: [(String, WireJSON)] = [
                ("day.get", params(user, ["date": "2025-03-01"])),
                ("day.get", params(user, ["date": "2025-02-28"])),
                ("day.get", params(user, ["date": "2025-03-01", "timezone": "Pacific/Kiritimati"])),
                ("day.get", params(user, ["date": "2025-03-02", "timezone": "America/Los_Angeles"])),
                ("day.get", params(user, ["date": .string(try session.today().description)])),
                ("week.counts", params(user, ["date": "2025-03-01"])),
                ("week.counts", params(user, ["date": "2025-03-01", "week_start": "sunday", "timezone": "Pacific/Kiritimati"])),
                ("habits.list", params(user)),
                ("profile.get", params(user)),
            ]
            func answers(zone: String) throws -> [WireJSON] {
                let environment = Dictionary(uniqueKeysWithValues: variables.map { ($0, zone) })
                var results: [WireJSON] = []
                try session.withAnotherWorker(environment: environment) { worker in
                    results = try requests.map { try worker.call($0.0, $0.1) }
                }
                return results
            }
            let kiritimati = try answers(zone: "Pacific/Kiritimati")
            var losAngeles = try answers(zone: "America/Los_Angeles")
            if kiritimati != losAngeles {
                // Only a UTC midnight between the two runs may explain a difference: run again.
                losAngeles = try answers(zone: "America/Los_Angeles")
                let again = try answers(zone: "Pacific/Kiritimati")
                #expect(again == losAngeles, "Kiritimati: \(again)\nLos Angeles: \(losAngeles)")
            }

            // And the answers are the zone-independent truth.
            let ids = { (day: WireJSON) in day["habits"]?.arrayValue?.compactMap { $0["id"] } }
            #expect(ids(kiritimati[0]) == [late, offset])
            #expect(kiritimati[0]["date"] == "2025-03-01" && kiritimati[0]["completed"] == .array([late]))
            #expect(ids(kiritimati[1]) == [])
            #expect(ids(kiritimati[2]) == [], "both start on 2 March in Kiritimati")
            #expect(ids(kiritimati[3]) == [late, offset])
            let today = try #require(kiritimati[4]["today"]?.stringValue)
            #expect(kiritimati[4]["is_future"] == false)
            #expect([kiritimati[4]["date"]?.stringValue, try session.today().description].contains(today), "today \(today)")
            let activations = kiritimati[7]["habits"]?.arrayValue?.compactMap { $0["activated_at"]?.stringValue }
            #expect(activations == ["2025-03-01T23:30:00Z", "2025-03-01T20:30:00Z"])
            #expect(kiritimati[5]["week_start"] == "2025-02-24")
            #expect(kiritimati[6]["week_start"] == "2025-02-23")
        }
    }
}
