import Foundation
import JSONRPC
@testable import LoopImport
import Testing

/// The converter against an export written like Loop's exporter writes it (LoopExportFixture),
/// checked row by row against what the fixture says.
@Suite("Loop export → habit-account document")
struct LoopConversionTests {
    static let user = UUID(uuidString: "7D9F0E2A-3C41-4B8E-9A57-1F2E3D4C5B6A")!
    static let today = LoopDay(iso: "2026-11-23")!

    static let fixture = LoopExportFixture(habits: [
        .init(name: "Morning run, 5 km", description: "Before \"work\"", paletteIndex: 7, entries: [
            ("2026-11-18", .yesManual, "felt good, \"fast\"\nand long"), ("2026-11-19", .no, ""),
            ("2026-11-20", .yesManual, ""), ("2026-11-21", .skip, "rain"), ("2026-11-22", .yesAuto, ""),
            ("2026-11-23", .yesManual, ""), ("2026-11-24", .yesManual, ""),
        ]),
        .init(name: "Say \"thank you\"", numerator: 3, denominator: 7, paletteIndex: 19, entries: [
            ("2026-11-16", .yesManual, ""), ("2026-11-17", .yesAuto, ""), ("2026-11-18", .yesManual, ""),
        ]),
        .init(name: "Méditation 瞑想", numerator: 2, denominator: 3, paletteIndex: 13, entries: [
            ("2026-11-01", .skip, ""), ("2026-11-02", .yesManual, ""),
        ]),
        .init(name: "", question: "Did you floss?", paletteIndex: 0, entries: [("2026-11-22", .yesManual, "")]),
        .init(name: "Water", numerical: true, paletteIndex: 10, unit: "glasses", targetValue: 8, amounts: [("2026-11-22", 8000)]),
        .init(name: "Old habit", paletteIndex: 16, archived: true, entries: [
            ("2026-06-30", .yesManual, ""), ("2026-07-01", .no, ""), ("2026-07-02", .yesManual, ""),
        ]),
        .init(name: "Archived today", numerator: 1, denominator: 14, paletteIndex: 3, archived: true, entries: [
            ("2026-11-20", .yesManual, ""), ("2026-11-23", .yesManual, ""),
        ]),
        .init(name: "Not selected", paletteIndex: 5, selected: false),
        // At most 2 cups (sql/0031): 1.5 is within (done), 0 an entry of nothing (kept, no
        // check-in), 3 over (a check-in, not done).
        .init(name: "Coffee", numerical: true, paletteIndex: 2, unit: "cups", targetValue: 2, targetType: "AT_MOST",
              amounts: [("2026-11-20", 1500), ("2026-11-21", 0), ("2026-11-22", 3000)]),
    ])

    static func id(_ position: Int, _ name: String, user: UUID = user) -> String {
        NameBasedUUID.v5(namespace: NameBasedUUID.loopHabitNamespace,
                         name: "\(user.uuidString.lowercased())\u{0}\(position)\u{0}\(name)").uuidString.lowercased()
    }

    struct ExpectedHabit {
        var position: Int, loopName: String, name: String, color: String
        var startedAt: String, endedAt: String?, schedule: String
        var completions: [String], skips: [String]
        /// A numeric habit imported as measurable: its unit, target and target type (sql/0029, 0031).
        var measure: (unit: String, target: String, type: String)? = nil
    }

    static let expected: [ExpectedHabit] = [
        .init(position: 1, loopName: "Morning run, 5 km", name: "Morning run, 5 km", color: "#388E3C",
              startedAt: "2026-11-17T23:00:00Z", endedAt: nil, schedule: #"{"type":"daily"}"#,
              completions: ["2026-11-18", "2026-11-20", "2026-11-23"], skips: ["2026-11-21"]),
        .init(position: 2, loopName: "Say \"thank you\"", name: "Say \"thank you\"", color: "#AAAAAA",
              startedAt: "2026-11-15T23:00:00Z", endedAt: nil, schedule: #"{"type":"times_per_week","times":3}"#,
              completions: ["2026-11-16", "2026-11-18"], skips: []),
        .init(position: 3, loopName: "Méditation 瞑想", name: "Méditation 瞑想", color: "#5E35B1",
              startedAt: "2026-10-31T23:00:00Z", endedAt: nil, schedule: #"{"type":"times_in_days","times":2,"days":3}"#,
              completions: ["2026-11-02"], skips: ["2026-11-01"]),
        .init(position: 4, loopName: "", name: "Did you floss?", color: "#D32F2F",
              startedAt: "2026-11-21T23:00:00Z", endedAt: nil, schedule: #"{"type":"daily"}"#,
              completions: ["2026-11-22"], skips: []),
        // Summer time in Paris: UTC+2.
        // Numeric, at least 8 glasses a day: a measurable habit; its 8,000 thousandths are 8.
        .init(position: 5, loopName: "Water", name: "Water", color: "#039BE5",
              startedAt: "2026-11-21T23:00:00Z", endedAt: nil, schedule: #"{"type":"daily"}"#,
              completions: ["2026-11-22"], skips: [], measure: ("glasses", "8", "at_least")),
        .init(position: 6, loopName: "Old habit", name: "Old habit", color: "#5D4037",
              startedAt: "2026-06-29T22:00:00Z", endedAt: "2026-07-02T22:00:00Z", schedule: #"{"type":"daily"}"#,
              completions: ["2026-06-30", "2026-07-02"], skips: []),
        .init(position: 7, loopName: "Archived today", name: "Archived today", color: "#FF8F00",
              startedAt: "2026-11-19T23:00:00Z", endedAt: "2026-11-22T23:00:00Z", schedule: #"{"type":"times_in_days","times":1,"days":14}"#,
              completions: ["2026-11-20"], skips: []),
        .init(position: 8, loopName: "Not selected", name: "Not selected", color: "#AFB42B",
              startedAt: "2026-11-22T23:00:00Z", endedAt: nil, schedule: #"{"type":"daily"}"#,
              completions: [], skips: []),
        .init(position: 9, loopName: "Coffee", name: "Coffee", color: "#F57C00",
              startedAt: "2026-11-19T23:00:00Z", endedAt: nil, schedule: #"{"type":"daily"}"#,
              completions: ["2026-11-20", "2026-11-21"], skips: [], measure: ("cups", "2", "at_most")),
    ]

    @Test("the fixture's zip (stored and deflated entries) becomes the expected document, row by row")
    func rowByRow() throws {
        let export = try LoopExport.read(zip: Self.fixture.zip())
        let (document, report) = try export.accountDocument(user: Self.user, timeZone: "Europe/Paris", today: Self.today)
        let root = try #require(document.objectValue)
        #expect(root.keys == ["format", "version", "exported_at", "profile", "habits", "completions", "skips", "lists", "tasks", "checkins", "notes"])
        #expect(root["format"] == .string("habit-account"))
        #expect(root["version"] == .int(1))
        #expect(root["exported_at"] == .null)
        #expect(root["profile"] == .null)
        #expect(root["lists"] == .array([]))
        #expect(root["tasks"] == .array([]))

        let habits = try #require(root["habits"]?.arrayValue).compactMap(\.objectValue)
        let ids = habits.compactMap { $0["id"]?.stringValue }
        #expect(ids == ids.sorted(), "habits sorted by id")
        #expect(Set(ids) == Set(Self.expected.map { Self.id($0.position, $0.loopName) }))
        var expectedCompletions: [(String, String)] = [], expectedSkips: [(String, String)] = []
        for want in Self.expected {
            let id = Self.id(want.position, want.loopName)
            let habit = try #require(habits.first { $0["id"]?.stringValue == id }, "habit \(want.name)")
            // An archived Loop habit is archived here from its period's end (sql/0035).
            let archived = want.endedAt.map { [$0] } ?? []
            #expect(habit["archived_at"] == want.endedAt.map { .string($0) }, "\(want.name)")
            if let measure = want.measure {
                #expect(habit.keys == ["id", "name", "icon", "color", "sort_order", "created_at", "updated_at",
                                       "kind", "unit", "target", "target_type", "target_period"] + archived.map { _ in "archived_at" } + ["periods"])
                #expect(habit["kind"] == .string("measurable") && habit["unit"] == .string(measure.unit) && habit["target"] == .string(measure.target)
                        && habit["target_type"] == .string(measure.type) && habit["target_period"] == .string("day"))
            } else {
                #expect(habit.keys == ["id", "name", "icon", "color", "sort_order", "created_at", "updated_at"] + archived.map { _ in "archived_at" } + ["periods"])
            }
            #expect(habit["name"] == .string(want.name))
            #expect(habit["icon"] == .null)
            #expect(habit["color"] == .string(want.color))
            #expect(habit["sort_order"] == .int(want.position))
            #expect(habit["created_at"] == .null && habit["updated_at"] == .null)
            let periods = try #require(habit["periods"]?.arrayValue)
            #expect(periods.count == 1)
            let period = try #require(periods.first?.objectValue)
            #expect(period.keys == ["started_at", "ended_at", "schedule"])
            #expect(period["started_at"] == .string(want.startedAt), "\(want.name)")
            #expect(period["ended_at"] == (want.endedAt.map { .string($0) } ?? .null), "\(want.name)")
            #expect(period["schedule"]?.jsonString == want.schedule, "\(want.name)")
            expectedCompletions += want.completions.map { (id, $0) }
            expectedSkips += want.skips.map { (id, $0) }
        }
        func rows(_ key: String) throws -> [String] {
            try #require(root[key]?.arrayValue).map { row in
                let object = row.objectValue!
                #expect(object.keys == ["template_id", "date"])
                return "\(object["template_id"]!.stringValue!) \(object["date"]!.stringValue!)"
            }
        }
        let sortedCompletions = expectedCompletions.sorted { ($0.0, $0.1) < ($1.0, $1.1) }.map { "\($0.0) \($0.1)" }
        let sortedSkips = expectedSkips.sorted { ($0.0, $0.1) < ($1.0, $1.1) }.map { "\($0.0) \($0.1)" }
        #expect(try rows("completions") == sortedCompletions)
        #expect(try rows("skips") == sortedSkips)

        // The numeric habits' days as check-ins of their amounts (none for Coffee's 0); the
        // notes of the imported days.
        let water = Self.id(5, "Water"), coffee = Self.id(9, "Coffee"), run = Self.id(1, "Morning run, 5 km")
        let checkins = try #require(root["checkins"]?.arrayValue).compactMap(\.objectValue)
        #expect(checkins.allSatisfy { $0.keys == ["id", "template_id", "date", "value"] }, "\(checkins)")
        let checkinRows = checkins.map { "\($0["template_id"]!.stringValue!) \($0["date"]!.stringValue!) \($0["value"]!.stringValue!)" }
        #expect(Set(checkinRows) == ["\(water) 2026-11-22 8", "\(coffee) 2026-11-20 1.5", "\(coffee) 2026-11-22 3"], "\(checkins)")
        let notes = try #require(root["notes"]?.arrayValue).compactMap(\.objectValue).map {
            "\($0["template_id"]!.stringValue!) \($0["date"]!.stringValue!) \($0["note"]!.stringValue!)"
        }
        #expect(notes == ["\(run) 2026-11-18 felt good, \"fast\"\nand long", "\(run) 2026-11-21 rain"], "\(notes)")

        #expect(report.habits == 9)
        #expect(report.archivedHabits == 2)
        #expect(report.completions == 13)
        #expect(report.skips == 2)
        #expect(report.measurableHabits == 2 && report.checkins == 3 && report.notes == 2)
        #expect(report.numericHabitsNotImported == [])
        #expect(report.checkmarksWithoutRow == 4)
        #expect(report.futureCheckmarksDropped == 1)
        #expect(report.archivedTodayCheckmarksDropped == 1)
        let warnings = report.warnings.joined(separator: "\n")
        for fragment in ["\"Did you floss?\": no name in Loop; its question is the name",
                         "\"Morning run, 5 km\": 1 checkmark(s) after today (2026-11-23) not imported",
                         "\"Archived today\": archived; 1 checkmark(s) of today not imported",
                         "\"Not selected\": no Checkmarks.csv in the export"] {
            #expect(warnings.contains(fragment), "missing warning: \(fragment)\nin:\n\(warnings)")
        }
        // Loop's frequencies of 2 in 3 and 1 in 14 days are kept as such (times_in_days, sql/0034): no warning.
        #expect(!warnings.contains("frequency"), "\(warnings)")
        #expect(report.warnings.count == 4)
        #expect(report.json.jsonString.hasPrefix(#"{"counts":{"habits":9,"archived_habits":2,"completions":13,"skips":2,"measurable_habits":2,"checkins":3,"notes":2,"numeric_habits_not_imported":0,"#))
    }

    @Test("the zip and the files-by-name form give the same document; the fixture's folders are Loop's")
    func filesForm() throws {
        let names = Self.fixture.files().map(\.name)
        #expect(names == ["Habits.csv", "001 Morning run 5 km/Scores.csv", "001 Morning run 5 km/Checkmarks.csv",
                          "002 Say thank you/Scores.csv", "002 Say thank you/Checkmarks.csv",
                          "003 Mditation/Scores.csv", "003 Mditation/Checkmarks.csv",
                          "004/Scores.csv", "004/Checkmarks.csv", "005 Water/Scores.csv", "005 Water/Checkmarks.csv",
                          "006 Old habit/Scores.csv", "006 Old habit/Checkmarks.csv",
                          "007 Archived today/Scores.csv", "007 Archived today/Checkmarks.csv",
                          "009 Coffee/Scores.csv", "009 Coffee/Checkmarks.csv", "Scores.csv", "Checkmarks.csv"])
        let fromZip = try LoopExport.read(zip: Self.fixture.zip())
        let fromFiles = try LoopExport(files: Dictionary(uniqueKeysWithValues: Self.fixture.files().map { ($0.name, $0.text) }))
        #expect(fromZip == fromFiles)
        // Re-zipped on macOS: one top folder and __MACOSX/ resource forks beside it.
        let rezipped = Self.fixture.files().map { ("Loop Habits CSV 2026-11-23/\($0.name)", Array($0.text.utf8), true) }
            + [("__MACOSX/Loop Habits CSV 2026-11-23/._Habits.csv", [0, 5, 22, 7], false)]
        #expect(try LoopExport.read(zip: LoopExportFixture.zip(rezipped)) == fromZip)
    }

    @Test("determinism: the same input gives byte-identical documents; another user gets other ids")
    func determinism() throws {
        let first = try LoopExport.read(zip: Self.fixture.zip()).accountDocument(user: Self.user, timeZone: "Europe/Paris", today: Self.today)
        let second = try LoopExport.read(zip: Self.fixture.zip()).accountDocument(user: Self.user, timeZone: "Europe/Paris", today: Self.today)
        #expect(first.document.jsonString == second.document.jsonString)
        #expect(first.report == second.report)
        // Habits in another order in the files dictionary (hash order varies per process anyway).
        let reversed = try LoopExport(files: Dictionary(uniqueKeysWithValues: Self.fixture.files().reversed().map { ($0.name, $0.text) }))
        #expect(try reversed.accountDocument(user: Self.user, timeZone: "Europe/Paris", today: Self.today).document.jsonString == first.document.jsonString)
        let other = UUID(uuidString: "00000000-0000-4000-8000-000000000001")!
        let theirs = try LoopExport.read(zip: Self.fixture.zip()).accountDocument(user: other, timeZone: "Europe/Paris", today: Self.today)
        let ourIds = Set(first.document.objectValue!["habits"]!.arrayValue!.map { $0.objectValue!["id"]!.stringValue! })
        let theirIds = Set(theirs.document.objectValue!["habits"]!.arrayValue!.map { $0.objectValue!["id"]!.stringValue! })
        #expect(ourIds.isDisjoint(with: theirIds))
        #expect(theirIds.contains(Self.id(1, "Morning run, 5 km", user: other)))
    }

    @Test("an older Loop export: no header in Checkmarks.csv, numeric values, the 7-column Habits.csv")
    func legacyFormat() throws {
        let files = [
            "Habits.csv": "Position,Name,Question,Description,NumRepetitions,Interval,Color\n001,Read,,,1,1,#1976D2\n002,Gym,Did you go?,,2,7,#D32F2F\n",
            "001 Read/Checkmarks.csv": "2026-11-22,2\n2026-11-21,-3\n2026-11-20,3\n2026-11-19,0\n2026-11-18,1\n2026-11-17,-1\n",
            "002 Gym/Checkmarks.csv": "2026-11-20,2\r\n",
        ]
        let (document, report) = try LoopExport(files: files).accountDocument(user: Self.user, timeZone: "UTC", today: Self.today)
        #expect(report.habits == 2 && report.completions == 2 && report.skips == 2 && report.checkmarksWithoutRow == 3)
        let skips = document.objectValue!["skips"]!.arrayValue!.map { $0.objectValue!["date"]!.stringValue! }
        #expect(skips == ["2026-11-20", "2026-11-21"])
        let gym = document.objectValue!["habits"]!.arrayValue!.first { $0.objectValue!["name"] == .string("Gym") }
        #expect(gym?.objectValue?["periods"]?.arrayValue?.first?.objectValue?["started_at"] == .string("2026-11-20T00:00:00Z"))
    }

    @Test("frequencies: exact shapes, and the nearest with a warning", arguments: [
        (1, 1, #"{"type":"daily"}"#, false), (7, 7, #"{"type":"daily"}"#, false),
        (3, 7, #"{"type":"times_per_week","times":3}"#, false), (1, 7, #"{"type":"times_per_week","times":1}"#, false),
        (6, 7, #"{"type":"times_per_week","times":6}"#, false),
        (2, 3, #"{"type":"times_in_days","times":2,"days":3}"#, false), (1, 2, #"{"type":"times_in_days","times":1,"days":2}"#, false),
        (10, 30, #"{"type":"times_in_days","times":10,"days":30}"#, false), (13, 14, #"{"type":"times_in_days","times":13,"days":14}"#, false),
        (1, 365, #"{"type":"times_in_days","times":1,"days":365}"#, false),
        (1, 400, #"{"type":"times_in_days","times":1,"days":365}"#, true), (300, 400, #"{"type":"times_in_days","times":274,"days":365}"#, true),
        (3, 2, #"{"type":"daily"}"#, true),
    ])
    func frequencies(numerator: Int, denominator: Int, schedule: String, warns: Bool) {
        let (value, warning) = LoopExport.schedule(numerator: numerator, denominator: denominator)
        #expect(value.jsonString == schedule)
        #expect((warning != nil) == warns)
    }

    @Test("names: question when empty, control characters, at most 100 characters, neither name nor question")
    func names() throws {
        var habit = LoopExport.Habit(position: 9, name: "  Tab\there \n", question: "", type: .yesNo, numerator: 1, denominator: 1,
                                     color: "#123456", unit: "", archived: false, checkmarks: nil, line: 2)
        #expect(LoopExport.ourName(habit).0 == "Tab here")
        habit.name = String(repeating: "é", count: 120)
        let (long, warning) = LoopExport.ourName(habit)
        #expect(long.unicodeScalars.count == 100 && warning != nil)
        habit.name = " "
        habit.question = ""
        #expect(LoopExport.ourName(habit).0 == "Loop habit 9")
    }

    @Test("dates: local midnight in the user's zone, also where the zone skips midnight")
    func localMidnight() throws {
        #expect(LoopDay(iso: "2026-11-23")!.startRFC3339(in: TimeZone(identifier: "Europe/Paris")!) == "2026-11-22T23:00:00Z")
        #expect(LoopDay(iso: "2026-07-01")!.startRFC3339(in: TimeZone(identifier: "America/Los_Angeles")!) == "2026-07-01T07:00:00Z")
        #expect(LoopDay(iso: "2026-11-23")!.startRFC3339(in: TimeZone(identifier: "Pacific/Kiritimati")!) == "2026-11-22T10:00:00Z")
        // Brazil began summer time at 00:00 on 2018-11-04: the day started at 01:00 (−02:00).
        #expect(LoopDay(iso: "2018-11-04")!.startRFC3339(in: TimeZone(identifier: "America/Sao_Paulo")!) == "2018-11-04T03:00:00Z")
        #expect(throws: LoopImportError.self) {
            try LoopExport(habits: []).accountDocument(user: Self.user, timeZone: "Mars/Olympus", today: Self.today)
        }
        for text in ["2026-02-29", "2026-13-01", "26-11-23", "2026-11-23 ", "２０２６-11-23"] { #expect(LoopDay(iso: text) == nil, "\(text)") }
        #expect(LoopDay(iso: "2024-02-29")?.description == "2024-02-29")
        #expect(LoopDay(iso: "1970-01-01")?.daysSinceUnixEpoch == 0)
    }

    @Test("name-based UUIDs: SHA-1 and version 5 match the published vectors")
    func uuidV5() {
        #expect(SHA1.digest(Array("abc".utf8)).map { String(format: "%02x", $0) }.joined() == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(SHA1.digest([]).map { String(format: "%02x", $0) }.joined() == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        let dns = UUID(uuidString: "6ba7b810-9dad-11d1-80b4-00c04fd430c8")!
        #expect(NameBasedUUID.v5(namespace: dns, name: "python.org").uuidString.lowercased() == "886313e1-3b8a-5372-9b90-0c9aee199e5d")
    }
}
