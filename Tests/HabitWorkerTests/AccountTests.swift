import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// account.export and account.import over the pipes, and `habit account` (issue 19): the round
/// trip and idempotence on random accounts, hostile documents (a clear error and nothing
/// written), export paging and its consistency check, and the CLI's streamed export.
@Suite("habit serve: account.export / account.import")
struct AccountTests {
    // MARK: - Random accounts

    /// A seeded generator (SplitMix64): a failing case replays from its seed.
    struct Generator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func int(_ range: ClosedRange<Int>) -> Int { range.lowerBound + Int(next() % UInt64(range.count)) }
        mutating func chance(_ percent: Int) -> Bool { int(0...99) < percent }
        mutating func uuid() -> UUID {
            var bytes = (next(), next())
            return withUnsafeBytes(of: &bytes) { raw in
                var b = Array(raw.prefix(16))
                b[6] = (b[6] & 0x0F) | 0x40
                b[8] = (b[8] & 0x3F) | 0x80
                return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
            }
        }
    }

    static let zones = ["UTC", "Europe/Paris", "America/Los_Angeles", "Asia/Tokyo", "Pacific/Auckland"]
    static let postgresEpochMicros: Int64 = 946_684_800_000_000

    static func timestamp(unixMicros: Int64) -> WireJSON {
        .string(PostgresTimestamp(microsecondsSincePostgresEpoch: unixMicros - postgresEpochMicros).rfc3339)
    }

    static func date(unixDay: Int) -> String { CalendarDate(daysSinceUnixEpoch: unixDay).description }

    static func schedule(_ g: inout Generator) -> WireJSON {
        switch g.int(0...4) {
        case 0: return .object([.init("type", "daily")])
        case 4:
            let days = g.int(2...30)
            return .object([.init("type", "times_in_days"), .init("times", .number(String(g.int(1...(days - 1))))), .init("days", .number(String(days)))])
        case 1:
            let days = (1...7).filter { _ in g.chance(50) }
            return .object([.init("type", "weekdays"), .init("days", .array((days.isEmpty ? [3] : days).map { .number(String($0)) }))])
        case 2: return .object([.init("type", "every_n_days"), .init("n", .number(String(g.int(1...9))))])
        default: return .object([.init("type", "times_per_week"), .init("times", .number(String(g.int(1...7))))])
        }
    }

    /// A random valid document (server-set members omitted), sorted as an export is. Its
    /// completions and skips lie two days inside a period (UTC), so any zone makes them on;
    /// `habitIDs` and `areaIDs` reuse ids (another state of the same account).
    static func document(_ g: inout Generator, nowMicros: Int64, habitIDs: [UUID] = [], areaIDs: [UUID] = []) -> WireJSON {
        let day: Int64 = 86_400_000_000
        let nowDay = Int(nowMicros / day)
        // Areas (sql/0037): some kept from another state (renamed, reordered), some new.
        var areas = areaIDs.filter { _ in g.chance(70) }
        for _ in 0..<g.int(0...2) { areas.append(g.uuid()) }
        areas.sort { $0.lowercaseString < $1.lowercaseString }
        let areaRows: [WireJSON] = areas.map { id in
            .object([.init("id", .uuid(id)), .init("name", .string(g.chance(30) ? "Santé — 健康 \"\(g.int(1...9))\"" : "Area \(g.int(1...99))")),
                     .init("sort_order", g.chance(70) ? .number(String(g.int(-5...5000))) : .null)])
        }
        var ids = habitIDs.filter { _ in g.chance(70) }
        for _ in 0..<g.int(0...3) { ids.append(g.uuid()) }
        ids.sort { $0.lowercaseString < $1.lowercaseString }
        var habits: [WireJSON] = [], completions: [(String, String)] = [], skips: [(String, String)] = []
        var checkins: [(id: UUID, template: String, date: String, value: String, time: String?)] = []
        var notes: [(String, String, String)] = []
        var reminders: [WireJSON] = []
        for (index, id) in ids.enumerated() {
            // The kind follows from the id (a habit's kind is fixed: another state of the account
            // keeps it); the target changes between states (sql/0029).
            let measurable = "01234".contains(id.lowercaseString.first!)
            let target = measurable ? (g.chance(50) ? "5" : "2.5") : (g.chance(20) ? "3" : "1")
            // At most (sql/0031): done when entered within the target; may change between states.
            let atMost = g.chance(30)
            let counted = measurable || target != "1" || atMost
            // Check-ins meeting the target: one of it, or two halves (whole times for a boolean habit).
            let halves: [String] = switch target { case "5": ["2.5", "2.5"]; case "2.5": ["1.25", "1.25"]; case "3": ["1", "2"]; default: ["1"] }
            var periods: [WireJSON] = []
            var start = nowMicros - Int64(g.int(40...400)) * day - Int64(g.int(0...86_399_999_999))
            let count = g.int(0...3)
            var onDays: [Int] = []
            for number in 0..<count {
                let open = number == count - 1 && g.chance(50)
                let end = min(start + Int64(g.int(5...60)) * day + Int64(g.int(0...3_600_000_000)), nowMicros - 3_600_000_000)
                guard end > start + 5 * day || open else { break }
                periods.append(.object([.init("started_at", timestamp(unixMicros: start)),
                                        .init("ended_at", open ? .null : timestamp(unixMicros: end)),
                                        .init("schedule", schedule(&g))]))
                let first = Int(start / day) + 2, last = open ? nowDay - 2 : Int(end / day) - 2
                if first <= last { onDays += Array(first...last) }
                if open { break }
                start = end + (g.chance(50) ? 0 : Int64(g.int(1...20)) * day)
                if start >= nowMicros - 6 * day { break }
            }
            let chosen = Set(onDays.filter { _ in g.chance(15) })
            for unixDay in chosen.sorted() {
                let day = date(unixDay: unixDay), template = id.lowercaseString
                func checkin(_ value: String) {
                    checkins.append((g.uuid(), template, day, value, g.chance(50) ? String(format: "%02d:%02d", g.int(0...23), g.int(0...59)) : nil))
                }
                if g.chance(80) {
                    completions.append((template, day))
                    if counted {
                        if atMost && g.chance(30) {
                            // Kept without check-ins: an at-most day entered at 0.
                        } else if g.chance(50) { checkin(target) } else { halves.forEach(checkin) }
                    } else if g.chance(10) {
                        checkin("1")
                    }
                } else if counted && g.chance(50) {
                    if atMost {
                        checkin(target); checkin(halves[0])  // over the target: not done
                    } else {
                        checkin(halves[0])  // below the target: not done
                    }
                } else {
                    skips.append((template, day))
                }
                if g.chance(20) { notes.append((template, day, g.chance(50) ? "note \(g.int(1...99))" : "knee hurt,\nwalked instead ✓")) }
            }
            // Reminders (sql/0036): distinct times of the habit, on due days or chosen weekdays.
            var times = Set<Int>()
            for _ in 0..<g.int(0...3) {
                let minute = g.int(0...1439)
                guard times.insert(minute).inserted else { continue }
                let days: WireJSON = g.chance(60) ? "due" : .array(Array(Set((0..<g.int(1...4)).map { _ in g.int(1...7) })).sorted().map { .number(String($0)) })
                reminders.append(.object([.init("id", .uuid(g.uuid())), .init("template_id", .uuid(id)),
                                          .init("time", .string(String(format: "%02d:%02d", minute / 60, minute % 60))), .init("days", days)]))
            }
            habits.append(.object([
                .init("id", .uuid(id)),
                .init("name", .string(g.chance(30) ? "Lire, \"vite\" — 読書 \(index)" : "Habit \(g.int(1...999))")),
                .init("icon", g.chance(50) ? "figure.run" : .null),
                .init("color", g.chance(50) ? "#3366FF" : .null),
                .init("sort_order", g.chance(50) ? .number(String(g.int(-5...50))) : .null),
                .init("kind", measurable ? "measurable" : "boolean"), .init("unit", measurable ? "km" : .null),
                .init("target", .string(target)), .init("target_type", atMost ? "at_most" : "at_least"), .init("target_period", "day"),
                .init("archived_at", g.chance(20) ? .string("2026-0\(g.int(1...9))-1\(g.int(0...9))T0\(g.int(0...9)):30:00Z") : .null),
                .init("area_id", areas.isEmpty || g.chance(30) ? .null : .uuid(areas[g.int(0...areas.count - 1)])),
                .init("periods", .array(periods)),
            ]))
        }
        var lists: [UUID] = (0..<g.int(0...2)).map { _ in g.uuid() }
        lists.sort { $0.lowercaseString < $1.lowercaseString }
        var tasks: [UUID] = (0..<g.int(0...3)).map { _ in g.uuid() }
        tasks.sort { $0.lowercaseString < $1.lowercaseString }
        let profile: WireJSON = g.chance(80)
            ? .object([.init("time_zone", .string(zones[g.int(0...zones.count - 1)])), .init("week_start", g.chance(50) ? "monday" : "sunday"),
                       // Day starts within 6 hours of midnight: the on-days above keep two days'
                       // margin from the periods' UTC dates (sql/0030).
                       .init("day_starts_at", g.chance(60) ? "00:00" : (g.chance(50) ? "03:00" : "05:30"))])
            : .null
        let dayKey: ((String, String)) -> WireJSON = { pair in .object([.init("template_id", .string(pair.0)), .init("date", .string(pair.1))]) }
        return .object([
            .init("format", "habit-account"), .init("version", 1), .init("profile", profile),
            .init("areas", .array(areaRows)),
            .init("habits", .array(habits)),
            .init("completions", .array(completions.map(dayKey))),
            .init("skips", .array(skips.map(dayKey))),
            .init("lists", .array(lists.map { .object([.init("id", .uuid($0)), .init("name", .string("List \(g.int(1...99))"))]) })),
            .init("tasks", .array(tasks.map { id in
                let state = ["not_started", "active", "completed"][g.int(0...2)]
                return .object([
                    .init("id", .uuid(id)),
                    .init("list_id", lists.isEmpty || g.chance(40) ? .null : .uuid(lists[g.int(0...lists.count - 1)])),
                    .init("title", .string("Task \(g.int(1...99))")),
                    .init("notes", g.chance(50) ? .string("line one\nline two ✓") : .null),
                    .init("state", .string(state)),
                    .init("scheduled_date", g.chance(50) ? .string(date(unixDay: nowDay + g.int(-30...30))) : .null),
                    .init("position", .number(String(g.int(-1000...1000)))),
                    .init("completed_at", state == "completed" ? timestamp(unixMicros: nowMicros - Int64(g.int(1...1_000_000_000))) : .null),
                ])
            })),
            .init("checkins", .array(checkins.sorted { $0.id.lowercaseString < $1.id.lowercaseString }.map { c in
                .object([.init("id", .uuid(c.id)), .init("template_id", .string(c.template)), .init("date", .string(c.date)),
                         .init("value", .string(c.value)), .init("time", c.time.map { .string($0) } ?? .null)])
            })),
            .init("notes", .array(notes.map { .object([.init("template_id", .string($0.0)), .init("date", .string($0.1)), .init("note", .string($0.2))]) })),
            .init("reminders", .array(reminders.sorted { ($0["id"]?.stringValue ?? "") < ($1["id"]?.stringValue ?? "") })),
        ])
    }

    /// `document` without its server-set members (exported_at; created_at/updated_at of habits,
    /// lists and tasks).
    static func withoutServerSet(_ document: WireJSON) -> WireJSON {
        guard case .object(let members) = document else { return document }
        return .object(members.filter { $0.key != "exported_at" }.map { member in
            guard ["habits", "lists", "tasks"].contains(member.key), case .array(let rows) = member.value else { return member }
            return .init(member.key, .array(rows.map { row in
                guard case .object(let fields) = row else { return row }
                return .object(fields.filter { $0.key != "created_at" && $0.key != "updated_at" })
            }))
        })
    }

    /// The document's arrays, in its order.
    static let arrays = ["areas", "habits", "completions", "skips", "lists", "tasks", "checkins", "notes", "reminders"]

    /// The whole document from account.export's pages of at most `limit` items.
    static func export(_ worker: WorkerProcess, user: UUID, limit: Int, sourceLocation: SourceLocation = #_sourceLocation) throws -> WireJSON {
        var header: [WireJSON.Member] = [], arrays: [String: [WireJSON]] = [:], cursor: WireJSON?
        for _ in 0..<10_000 {
            var members: [String: WireJSON] = ["limit": .number(String(limit))]
            if let cursor { members["cursor"] = cursor }
            let page = try worker.call("account.export", params(user, members))
            guard let document = page["document"], case .object(let fields) = document else {
                Issue.record("no document in \(page)", sourceLocation: sourceLocation)
                return .null
            }
            for field in fields {
                if case .array(let rows) = field.value {
                    arrays[field.key, default: []] += rows
                } else if cursor == nil {
                    header.append(field)
                }
            }
            if cursor == nil { #expect(fields.contains { $0.key == "profile" }, sourceLocation: sourceLocation) }
            if page["has_more"] != true { break }
            cursor = page["cursor"]
        }
        return .object(header + Self.arrays.map { .init($0, .array(arrays[$0] ?? [])) })
    }

    /// Validates each document against docs/account-format.schema.json with python3's
    /// jsonschema (as scripts/check-openrpc does); answers "ok <count>" or the first error.
    static func validateAgainstSchema(_ documents: [String]) throws -> String {
        let file = NSTemporaryDirectory() + "habit-account-exports-\(UUID().uuidString).json"
        try Data(("[" + documents.joined(separator: ",") + "]").utf8).write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let schema = TestDatabase.repositoryRoot.appendingPathComponent("docs/account-format.schema.json").path
        let script = """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[1])); documents = json.load(open(sys.argv[2]))
            jsonschema.Draft202012Validator.check_schema(schema)
            validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
            for d in documents: validator.validate(d)
            print("ok", len(documents))
            """
        let result = try WorkerProcess.run(OpenRPCTests.python[0], Array(OpenRPCTests.python.dropFirst()) + ["-c", script, schema, file], timeout: 120)
        return result.status == 0 ? result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) : result.stderr
    }

    static func deleteRows(_ admin: Connection, user: UUID) throws {
        for table in ["tasks", "task_lists", "habit_templates", "profiles"] {
            try admin.execute("DELETE FROM public.\(unsafeSQL: table) WHERE user_id = \(user)")
        }
    }

    /// A checksum of every row of the user tables and the sync bookkeeping: "nothing written".
    static func checksum(_ admin: Connection) throws -> String {
        var parts: [String] = []
        for table in ["public.profiles", "public.habit_areas", "public.habit_templates", "public.habit_periods", "public.habit_completions", "public.habit_skips", "public.habit_checkins", "public.habit_day_notes",
                      "public.habit_reminders", "public.task_lists", "public.tasks", "habit.sync_clocks", "habit.sync_tombstones", "habit.user_row_counts"] {
            parts.append(try admin.queryOne("SELECT coalesce(md5(string_agg(t::text, '|' ORDER BY t::text)), '-') FROM \(unsafeSQL: table) t")
                .decode(String.self, at: 0))
        }
        return parts.joined(separator: ",")
    }

    static func nowMicros(_ admin: Connection) throws -> Int64 {
        try admin.queryOne("SELECT (extract(epoch FROM now()) * 1000000)::bigint").decode(Int64.self, at: 0)
    }

    @Test("random accounts: import → export gives the document; export → delete → import → export is identical apart from server-set members; a second import changes nothing; replace by another state gives that state")
    func roundTrips() throws {
        try WorkerSession.with { session in
            let worker = session.worker, admin = session.admin
            var periods = 0, multiPeriod = 0, days = 0, tasks = 0, checkins = 0, notes = 0, reminders = 0, areas = 0, inAreas = 0, exports: [String] = []
            defer { #expect(periods > 60 && multiPeriod > 10 && days > 300 && tasks > 30 && checkins > 100 && notes > 40 && reminders > 40
                            && areas > 30 && inAreas > 25,
                            "generator too tame: \(periods) \(multiPeriod) \(days) \(tasks) \(checkins) \(notes) \(reminders) \(areas) \(inAreas)") }
            defer {
                // Every export is valid against docs/account-format.schema.json.
                #expect((try? Self.validateAgainstSchema(exports)) == "ok 60", "the exports do not match docs/account-format.schema.json")
            }
            for seed in 1...60 as ClosedRange<UInt64> {
                var g = Generator(state: seed)
                let user = UUID(), now = try Self.nowMicros(admin)
                let original = Self.document(&g, nowMicros: now)
                for habit in original["habits"]?.arrayValue ?? [] {
                    let count = habit["periods"]?.arrayValue?.count ?? 0
                    periods += count
                    multiPeriod += count > 1 ? 1 : 0
                }
                days += (original["completions"]?.arrayValue?.count ?? 0) + (original["skips"]?.arrayValue?.count ?? 0)
                tasks += original["tasks"]?.arrayValue?.count ?? 0
                checkins += original["checkins"]?.arrayValue?.count ?? 0
                notes += original["notes"]?.arrayValue?.count ?? 0
                reminders += original["reminders"]?.arrayValue?.count ?? 0
                areas += original["areas"]?.arrayValue?.count ?? 0
                inAreas += original["habits"]?.arrayValue?.filter { $0["area_id"] != .null }.count ?? 0
                let first = try worker.call("account.import", params(user, ["document": original, "mode": "merge"]))
                #expect(first["counts"]?["habits"]?["inserted"]?.intValue == original["habits"]?.arrayValue?.count, "seed \(seed): \(first)")
                let limit = g.int(1...7)
                let exported = try Self.export(worker, user: user, limit: limit)
                #expect(Self.withoutServerSet(exported) == Self.withoutServerSet(original.with("exported_at", .null)), "seed \(seed)")

                try Self.deleteRows(admin, user: user)
                let mode: WireJSON = g.chance(50) ? "merge" : "replace"
                _ = try worker.call("account.import", params(user, ["document": exported, "mode": mode]))
                let again = try Self.export(worker, user: user, limit: 1_000)
                #expect(Self.withoutServerSet(again) == Self.withoutServerSet(exported), "seed \(seed)")

                // Idempotent: nothing written, not even a sync change number or updated_at.
                let before = try Self.checksum(admin)
                let second = try worker.call("account.import", params(user, ["document": again, "mode": mode]))
                #expect(try Self.checksum(admin) == before, "seed \(seed): \(second)")
                for kind in ["profile"] + Self.arrays {
                    #expect(second["counts"]?[kind]?["inserted"] == 0 && second["counts"]?[kind]?["updated"] == 0
                            && second["counts"]?[kind]?["deleted"] == 0, "seed \(seed): \(second)")
                }
                let third = try Self.export(worker, user: user, limit: 1_000)
                exports.append(third.encoded)
                #expect(third.with("exported_at", .null) == again.with("exported_at", .null), "seed \(seed)")

                // Another state of the same account (same ids, new periods, days, names): replace.
                let ids = (original["habits"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue.flatMap(UUID.init(uuidString:)) }
                let areaIDs = (original["areas"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue.flatMap(UUID.init(uuidString:)) }
                let next = Self.document(&g, nowMicros: now, habitIDs: ids, areaIDs: areaIDs)
                _ = try worker.call("account.import", params(user, ["document": next, "mode": "replace"]))
                let replaced = try Self.export(worker, user: user, limit: 1_000)
                #expect(Self.withoutServerSet(replaced) == Self.withoutServerSet(next.with("exported_at", .null)), "seed \(seed)")
            }
        }
    }

    // MARK: - Another account's export (issue 30)

    /// `document` with its ids as `ids: "new"` gives them in `user`'s account (asked of the
    /// database's habit.account_new_id, the one definition).
    static func renamed(_ admin: Connection, _ document: WireJSON, for user: UUID) throws -> WireJSON {
        func newID(_ kind: String, _ id: WireJSON?) throws -> WireJSON {
            guard let id = id?.stringValue else { return id ?? .null }
            return .string(try admin.queryOne("SELECT habit.account_new_id(\(user), \(kind), \(id))").decode(String.self, at: 0))
        }
        func rows(_ key: String, _ map: (WireJSON) throws -> WireJSON) throws -> WireJSON {
            .array(try (document[key]?.arrayValue ?? []).map(map))
        }
        guard case .object = document else { return document }
        return document
            .with("areas", try rows("areas") { try $0.with("id", newID("area", $0["id"])) })
            .with("habits", try rows("habits") { habit in
                let renamed = try habit.with("id", newID("habit", habit["id"]))
                return habit["area_id"] == .null ? renamed : try renamed.with("area_id", newID("area", habit["area_id"]))
            })
            .with("completions", try rows("completions") { try $0.with("template_id", newID("habit", $0["template_id"])) })
            .with("skips", try rows("skips") { try $0.with("template_id", newID("habit", $0["template_id"])) })
            .with("checkins", try rows("checkins") { try $0.with("id", newID("checkin", $0["id"])).with("template_id", newID("habit", $0["template_id"])) })
            .with("notes", try rows("notes") { try $0.with("template_id", newID("habit", $0["template_id"])) })
            .with("reminders", try rows("reminders") { try $0.with("id", newID("reminder", $0["id"])).with("template_id", newID("habit", $0["template_id"])) })
            .with("lists", try rows("lists") { try $0.with("id", newID("list", $0["id"])) })
            .with("tasks", try rows("tasks") { task in
                let renamed = try task.with("id", newID("task", task["id"]))
                return task["list_id"] == .null ? renamed : try renamed.with("list_id", newID("list", task["list_id"]))
            })
    }

    /// The document without server-set members, every object's members in key order and the
    /// five arrays sorted: equal for the same rows whatever the ids did to the export's order.
    static func canonical(_ document: WireJSON) -> WireJSON {
        func keyed(_ value: WireJSON) -> WireJSON {
            switch value {
            case .object(let members): .object(members.map { .init($0.key, keyed($0.value)) }.sorted { $0.key < $1.key })
            case .array(let elements): .array(elements.map(keyed))
            default: value
            }
        }
        var result = keyed(withoutServerSet(document).with("exported_at", .null))
        for key in Self.arrays {
            result = result.with(key, .array((result[key]?.arrayValue ?? []).sorted { $0.encoded < $1.encoded }))
        }
        return keyed(result)
    }

    @Test("another account's export imports with its own ids (unique per user) and with new ids, every reference following; importing it again changes nothing; the source is untouched")
    func exportIntoAnotherAccount() throws {
        try WorkerSession.with { session in
            let worker = session.worker, admin = session.admin
            var tasks = 0, references = 0
            for seed in 101...112 as ClosedRange<UInt64> {
                var g = Generator(state: seed)
                let source = UUID(), target = UUID(), now = try Self.nowMicros(admin)
                _ = try worker.call("account.import", params(source, ["document": Self.document(&g, nowMicros: now), "mode": "merge"]))
                let exported = try Self.export(worker, user: source, limit: 1_000)
                tasks += exported["tasks"]?.arrayValue?.count ?? 0
                references += (exported["completions"]?.arrayValue?.count ?? 0)
                    + (exported["tasks"]?.arrayValue?.filter { $0["list_id"] != .null }.count ?? 0)

                // Kept ids: ids are unique per user (sql/0027), so the export imports as it is into
                // another account (a third one, so the target's copy below stays the only one there).
                let third = UUID()
                let kept = try worker.call("account.import", params(third, ["document": exported, "mode": "merge"]))
                #expect(kept["counts"]?["habits"]?["inserted"]?.intValue == exported["habits"]?.arrayValue?.count, "seed \(seed): \(kept)")
                let keptCopy = try Self.export(worker, user: third, limit: 1_000)
                for key in ["areas", "habits", "lists", "tasks"] {
                    #expect(Set((keptCopy[key]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue })
                            == Set((exported[key]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }), "seed \(seed): \(key)")
                }
                #expect(keptCopy["completions"]?.arrayValue?.count == exported["completions"]?.arrayValue?.count, "seed \(seed)")

                let first = try worker.call("account.import", params(target, ["document": exported, "mode": "merge", "ids": "new"]))
                #expect(first["counts"]?["habits"]?["inserted"]?.intValue == exported["habits"]?.arrayValue?.count, "seed \(seed): \(first)")
                #expect(first["counts"]?["tasks"]?["inserted"]?.intValue == exported["tasks"]?.arrayValue?.count, "seed \(seed): \(first)")
                let copied = try Self.export(worker, user: target, limit: 1_000)
                #expect(Self.canonical(copied) == Self.canonical(try Self.renamed(admin, exported, for: target)), "seed \(seed)")
                let sourceIDs = Set((exported["habits"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue })
                #expect(sourceIDs.isDisjoint(with: (copied["habits"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }), "seed \(seed)")
                // The source's rows are the same after the copy (its export too).
                #expect(Self.withoutServerSet(try Self.export(worker, user: source, limit: 1_000)).with("exported_at", .null)
                        == Self.withoutServerSet(exported).with("exported_at", .null), "seed \(seed)")

                // Again: the same new ids, nothing written (retry-safe).
                let before = try Self.checksum(admin)
                let second = try worker.call("account.import", params(target, ["document": exported, "mode": "merge", "ids": "new"]))
                #expect(try Self.checksum(admin) == before, "seed \(seed): \(second)")
            }
            #expect(tasks > 5 && references > 50, "generator too tame: \(tasks) tasks, \(references) references")
            // A value other than keep or new is -32602 naming the field.
            let bad = try worker.request("account.import", params: params(UUID(), ["document": Self.minimal(), "mode": "merge", "ids": "fresh"]))
            #expect(bad.json["error"]?["code"]?.intValue == -32602 && bad.json["error"]?["data"]?["field"] == "ids", "\(bad)")
        }
    }

    // MARK: - Hostile documents

    static let habitID = "aaaaaaaa-0000-4000-8000-000000000001"

    static func minimal(habits: WireJSON = [], completions: WireJSON = [], skips: WireJSON = []) -> WireJSON {
        .object([.init("format", "habit-account"), .init("version", 1), .init("profile", .null), .init("habits", habits),
                 .init("completions", completions), .init("skips", skips), .init("lists", []), .init("tasks", [])])
    }

    static func habit(_ id: String = habitID, periods: WireJSON) -> WireJSON {
        .object([.init("id", .string(id)), .init("name", "Walk"), .init("periods", periods)])
    }

    static func period(_ start: String, _ end: String?) -> WireJSON {
        .object([.init("started_at", .string(start)), .init("ended_at", end.map { .string($0) } ?? .null),
                 .init("schedule", .object([.init("type", "daily")]))])
    }

    static func day(_ date: String, _ template: String = habitID) -> WireJSON {
        .object([.init("template_id", .string(template)), .init("date", .string(date))])
    }

    static let areaID = "a0a0a0a0-0000-4000-8000-000000000001"

    static func area(_ id: String = areaID, name: String = "Health", sortOrder: Int? = nil) -> WireJSON {
        .object([.init("id", .string(id)), .init("name", .string(name)), .init("sort_order", sortOrder.map { .number(String($0)) } ?? .null)])
    }

    @Test("hostile documents: a precise error naming the JSON path, and nothing written")
    func hostileDocuments() throws {
        try WorkerSession.with { session in
            let worker = session.worker, admin = session.admin, user = UUID(), other = UUID()
            // The other user owns a habit (its id, in the user's documents, is the user's own row since
            // sql/0027, exportIntoAnotherAccount); the user has an account already.
            let theirs = Self.habit("bbbbbbbb-0000-4000-8000-000000000002", periods: [Self.period("2026-01-01T00:00:00Z", nil)])
            _ = try worker.call("account.import", params(other, ["document": Self.minimal(habits: [theirs]), "mode": "merge"]))
            let mine = Self.habit(periods: [Self.period("2025-01-01T08:00:00Z", "2025-03-01T08:00:00Z")])
            _ = try worker.call("account.import", params(user, ["document": Self.minimal(habits: [mine], completions: [Self.day("2025-02-01")]), "mode": "merge"]))
            let today = try session.today()
            let tomorrow = CalendarDate(daysSinceUnixEpoch: today.daysSinceUnixEpoch + 1).description
            let open = Self.habit(periods: [Self.period("2025-01-01T08:00:00Z", nil)])

            let cases: [(String, WireJSON, Int, String, String?)] = [
                ("habits not an array", Self.minimal().with("habits", "x"), -32602, "wrong_type", "document.habits"),
                ("a name that is a number", Self.minimal(habits: [.object([.init("id", .string(Self.habitID)), .init("name", 5), .init("periods", [])])]),
                 -32602, "wrong_type", "document.habits[0].name"),
                ("unknown member", Self.minimal().with("extra", 1), -32602, "unknown_key", "document.extra"),
                ("unknown format", Self.minimal().with("format", "loop"), -32602, "unsupported_format", "document.format"),
                ("unknown version", Self.minimal().with("version", 2), -32602, "unsupported_format", "document.version"),
                ("duplicate habit ids", Self.minimal(habits: [open, open]), -32602, "duplicate_value", "document.habits[1].id"),
                ("duplicate completion", Self.minimal(habits: [open], completions: [Self.day("2025-02-01"), Self.day("2025-02-01")]),
                 -32602, "duplicate_value", "document.completions[1]"),
                ("a completion of an unknown habit", Self.minimal(habits: [open], completions: [Self.day("2025-02-01", "cccccccc-0000-4000-8000-000000000003")]),
                 -32602, "unknown_reference", "document.completions[0].template_id"),
                ("a date that does not exist", Self.minimal(habits: [open], completions: [Self.day("2025-02-30")]), -32602, "invalid_date", "document.completions[0].date"),
                ("a date out of range", Self.minimal(habits: [open], skips: [Self.day("10000-01-01")]), -32602, "invalid_date", "document.skips[0].date"),
                ("a bad timestamp", Self.minimal(habits: [Self.habit(periods: [Self.period("yesterday", nil)])]), -32602, "invalid_timestamp",
                 "document.habits[0].periods[0].started_at"),
                ("overlapping periods", Self.minimal(habits: [Self.habit(periods: [Self.period("2025-01-01T00:00:00Z", "2025-02-01T00:00:00Z"),
                                                                                  Self.period("2025-01-15T00:00:00Z", nil)])]),
                 -32602, "invalid_order", "document.habits[0].periods[1].started_at"),
                ("a bad schedule", Self.minimal(habits: [Self.habit(periods: [.object([.init("started_at", "2025-01-01T00:00:00Z"),
                                                                                     .init("schedule", .object([.init("type", "weekdays"), .init("days", [9])]))])])]),
                 -32602, "out_of_range", "document.habits[0].periods[0].schedule.days[0]"),
                ("a future completion", Self.minimal(habits: [open], completions: [Self.day(tomorrow)]), -32002, "future_date", "document.completions[0].date"),
                ("a completion on a day the habit was not on", Self.minimal(habits: [Self.habit(periods: [Self.period("2025-01-01T08:00:00Z", "2025-03-01T08:00:00Z")])],
                                                                              completions: [Self.day("2025-06-01")]),
                 -32003, "habit_not_active", "document.completions[0].date"),
                ("done and skipped", Self.minimal(habits: [open], completions: [Self.day("2025-02-01")], skips: [Self.day("2025-02-01")]),
                 -32004, "invalid_state", "document.skips[0]"),
                ("an unknown zone", Self.minimal().with("profile", .object([.init("time_zone", "Mars/Olympus"), .init("week_start", "monday")])),
                 -32602, "invalid_timezone", "document.profile.time_zone"),
                ("a day start that is not HH:MM", Self.minimal().with("profile", .object([.init("time_zone", "UTC"), .init("week_start", "monday"),
                                                                                        .init("day_starts_at", "3:00")])),
                 -32602, "invalid_time", "document.profile.day_starts_at"),
                // Areas (sql/0037).
                ("duplicate area ids", Self.minimal().with("areas", [Self.area(), Self.area(name: "Work")]), -32602, "duplicate_value", "document.areas[1].id"),
                ("a habit in an area the document lacks", Self.minimal(habits: [open.with("area_id", .string(Self.areaID))]).with("areas", []),
                 -32602, "unknown_reference", "document.habits[0].area_id"),
                ("a habit in an area, no areas member", Self.minimal(habits: [open.with("area_id", .string(Self.areaID))]),
                 -32602, "unknown_reference", "document.habits[0].area_id"),
                ("an area_id that is not a UUID", Self.minimal(habits: [open.with("area_id", "health")]), -32602, "invalid_uuid", "document.habits[0].area_id"),
                ("an area name with a bidirectional control", Self.minimal().with("areas", [Self.area(name: "Work\u{202E}")]),
                 -32602, "invalid_characters", "document.areas[0].name"),
                ("an area name not trimmed", Self.minimal().with("areas", [Self.area(name: " Work")]), -32602, "invalid_text", "document.areas[0].name"),
                ("an empty area name", Self.minimal().with("areas", [Self.area(name: "")]), -32602, "empty", "document.areas[0].name"),
                ("an area of an unknown member", Self.minimal().with("areas", [Self.area().with("color", "#FF0000")]), -32602, "unknown_key",
                 "document.areas[0].color"),
                ("101 areas", Self.minimal().with("areas", .array((1...101).map { Self.area(String(format: "a0a0a0a0-0000-4000-8000-%012d", $0)) })),
                 -32602, "too_many", "document.areas"),
            ]
            for (name, document, code, reason, field) in cases {
                let before = try Self.checksum(admin)
                for mode in ["merge", "replace"] as [WireJSON] {
                    let response = try worker.request("account.import", params: params(user, ["document": document, "mode": mode]))
                    expectError(response, code: code, id: nil, reason: reason, field: field)
                    if response.code != code { Issue.record("case \(name)") }
                }
                #expect(try Self.checksum(admin) == before, "case \(name) wrote something")
            }

            // Deep nesting: the parser's depth limit, before any method runs.
            let before = try Self.checksum(admin)
            let deep = String(repeating: "[", count: 300) + String(repeating: "]", count: 300)
            try worker.send(#"{"jsonrpc":"2.0","id":7,"method":"account.import","params":{"user_id":"\#(user.lowercaseString)","mode":"merge","document":\#(deep)}}"#)
            let nested = try worker.readResponse()
            #expect(nested.code == -32700 && nested.reason == "too_deep", "\(nested.raw)")

            // A row limit: refused cleanly, nothing written.
            try admin.execute("UPDATE habit.row_limits SET max_rows = 2 WHERE table_name = 'habit_templates'")
            let three = (1...3).map { Self.habit("dddddddd-0000-4000-8000-00000000000\($0)", periods: []) }
            expectError(try worker.request("account.import", params: params(UUID(), ["document": Self.minimal(habits: .array(three)), "mode": "merge"])),
                        code: -32013, id: nil, reason: "limit_exceeded")
            try admin.execute("UPDATE habit.row_limits SET max_rows = 1000 WHERE table_name = 'habit_templates'")

            // 1,000,000 completions: more than one request line may carry (line_too_long), and
            // more than one import takes (too_many, through the CLI). Nothing written.
            let completions = String(repeating: #"{"template_id":"aaaaaaaa-0000-4000-8000-000000000001","date":"2025-02-01"},"#, count: 999_999)
                + #"{"template_id":"aaaaaaaa-0000-4000-8000-000000000001","date":"2025-02-01"}"#
            let huge = #"{"format":"habit-account","version":1,"profile":null,"habits":[],"completions":[\#(completions)],"skips":[],"lists":[],"tasks":[]}"#
            try worker.send(#"{"jsonrpc":"2.0","id":8,"method":"account.import","params":{"user_id":"\#(user.lowercaseString)","mode":"merge","document":\#(huge)}}"#)
            let tooLong = try worker.readResponse()
            #expect(tooLong.code == -32600 && tooLong.reason == "line_too_long", "\(tooLong.raw.prefix(300))")
            let file = NSTemporaryDirectory() + "habit-account-\(UUID().uuidString).json"
            try Data(huge.utf8).write(to: URL(fileURLWithPath: file))
            defer { try? FileManager.default.removeItem(atPath: file) }
            let cli = try WorkerProcess.run(try WorkerProcess.binaryPath(),
                                            ["account", "import", "--database-url", try session.database.url(overriding: [:]), "--user", user.lowercaseString, file],
                                            environment: WorkerProcess.childEnvironment())
            #expect(cli.status == 1 && cli.stderr.contains("document.completions: too_many"), "\(cli.status) \(cli.stderr)")
            #expect(try Self.checksum(admin) == before, "the nesting, limit or size cases wrote something")
        }
    }

    // MARK: - Paging, consistency, the CLI

    @Test("a write between two pages: export_changed; bad cursors and limits are -32602")
    func exportChanged() throws {
        try WorkerSession.with { session in
            let worker = session.worker, user = UUID()
            for name in ["Walk", "Read", "Stretch"] { try worker.createHabit(user: user, name: name) }
            let first = try worker.call("account.export", params(user, ["limit": 2]))
            #expect(first["has_more"] == true && first["document"]?["habits"]?.arrayValue?.count == 1)
            let cursor = try #require(first["cursor"])
            #expect(try worker.call("account.export", params(user, ["limit": 2, "cursor": cursor]))["document"]?["habits"]?.arrayValue?.count == 2)
            try worker.createHabit(user: user, name: "Swim")
            expectError(try worker.request("account.export", params: params(user, ["limit": 2, "cursor": cursor])), code: -32020, id: nil, reason: "export_changed")
            for (members, field, reason) in [(["cursor": "e1.10.0.0."], "cursor", "invalid_cursor"), (["cursor": "nope"], "cursor", "invalid_cursor"),
                                             (["limit": 0], "limit", "out_of_range"), (["limit": 10_001], "limit", "out_of_range")] as [([String: WireJSON], String, String)] {
                expectError(try worker.request("account.export", params: params(user, members)), code: -32602, id: nil, reason: reason, field: field)
            }
        }
    }

    @Test("habit account export streams the document the paged account.export makes; --backfill is only for habit_admin")
    func cliExport() throws {
        try WorkerSession.with { session in
            let worker = session.worker, admin = session.admin, user = UUID()
            // A few thousand rows: 6 habits with 500 completions each, backfilled by an admin.
            let habits = (1...6).map { Self.habit("eeeeeeee-0000-4000-8000-00000000000\($0)", periods: [Self.period("2020-01-01T00:00:00Z", nil)]) }
            var days: [WireJSON] = []
            for number in 1...6 {
                for offset in 0..<500 { days.append(Self.day(CalendarDate(daysSinceUnixEpoch: 15_000 + offset * 2).description, "eeeeeeee-0000-4000-8000-00000000000\(number)")) }
            }
            let document = Self.minimal(habits: .array(habits), completions: .array(days))
            let file = NSTemporaryDirectory() + "habit-account-\(UUID().uuidString).json"
            try Data(document.encoded.utf8).write(to: URL(fileURLWithPath: file))
            defer { try? FileManager.default.removeItem(atPath: file) }
            let url = try session.database.url(overriding: [:])
            let binary = try WorkerProcess.binaryPath()
            // The worker's login role may not backfill: the database refuses it (HB006).
            let refused = try WorkerProcess.run(binary, ["account", "import", "--database-url", try session.database.workerURL(), "--backfill",
                                                         "--user", user.lowercaseString, file], environment: WorkerProcess.childEnvironment())
            #expect(refused.status == 1 && refused.stderr.contains("habit.backfill is only for habit_admin"), "\(refused.stderr)")
            #expect(try admin.queryOne("SELECT count(*) FROM public.habit_completions WHERE user_id = \(user)").decode(Int.self, at: 0) == 0)
            let imported = try WorkerProcess.run(binary, ["account", "import", "--database-url", url, "--backfill", "--user", user.lowercaseString, file],
                                                 environment: WorkerProcess.childEnvironment())
            try #require(imported.status == 0, "\(imported.stderr)")
            #expect(try admin.queryOne("SELECT count(*) FROM public.habit_completions WHERE user_id = \(user)").decode(Int.self, at: 0) == 3_000)
            // The staged document went with the import (sql/0028), the refused one and this one.
            let staged = try admin.queryOne("""
                SELECT (SELECT count(*) FROM habit.import_habits) + (SELECT count(*) FROM habit.import_periods)
                     + (SELECT count(*) FROM habit.import_days) + (SELECT count(*) FROM habit.import_lists)
                     + (SELECT count(*) FROM habit.import_tasks) + (SELECT count(*) FROM habit.import_checkins)
                     + (SELECT count(*) FROM habit.import_notes) + (SELECT count(*) FROM habit.import_reminders)
                     + (SELECT count(*) FROM habit.import_areas)
                """).decode(Int.self, at: 0)
            #expect(staged == 0)
            if CitusCluster.current == nil {
                // 3,000 staged completions were analyzed, by their key columns only: no name,
                // title or note of a document stays behind in pg_statistic.
                let analyzed = try admin.query("""
                    SELECT tablename || '.' || attname FROM pg_stats WHERE schemaname = 'habit' AND tablename LIKE 'import\\_%'
                    ORDER BY 1
                    """).map { try $0.decode(String.self, at: 0) }
                #expect(analyzed.contains("import_days.day"), "\(analyzed)")
                #expect(analyzed.allSatisfy { !["name", "icon", "color", "periods", "schedule", "title", "notes", "state", "note", "unit"].contains($0.split(separator: ".").last.map(String.init) ?? "") },
                        "\(analyzed)")
            }

            let exported = try WorkerProcess.run(binary, ["account", "export", "--database-url", url, "--user", user.lowercaseString, "--page-size", "250"],
                                                 environment: WorkerProcess.childEnvironment().merging(["HABIT_REPORT_PEAK_RSS": "1"]) { $1 })
            try #require(exported.status == 0, "\(exported.stderr)")
            let streamed = try WireJSON.parse(exported.stdout)
            let paged = try Self.export(worker, user: user, limit: 700)
            #expect(streamed.with("exported_at", .null) == paged.with("exported_at", .null))
            #expect(streamed["completions"]?.arrayValue?.count == 3_000)
            #expect(streamed["completions"] == document["completions"])
        }
    }

    @Test("habit.import_account called directly (as through PostgREST): only for the caller's claims, and a temporary table of the caller's named like its own is never written to")
    func directCalls() throws {
        try WorkerSession.with { session in
            let admin = session.admin, user = UUID(), other = UUID()
            let document = Self.minimal(habits: [Self.habit(periods: [Self.period("2025-01-01T08:00:00Z", nil)])]).encoded
            let asUser: Query = "SELECT set_config('role', 'authenticated', true), set_config('request.jwt.claim.sub', \(user.lowercaseString), true)"
            // On a Citus coordinator claims reach the node that runs the call only by SET LOCAL
            // (docs/scaling.md, "Running on Citus": PostgREST's set_config does not).
            let onCitus = Query(unsafeSQL: CitusCluster.current == nil ? "SELECT 1" : "SET LOCAL request.jwt.claim.sub = '\(user.lowercaseString)'")
            let error = try #require(throws: PostgresError.self) {
                try admin.transaction(prelude: [asUser, onCitus], statement: "SELECT habit.import_account(\(other), \(document)::jsonb, 'merge')")
            }
            #expect(error.sqlState == "42501", "\(error)")
            // A trigger on the caller's own table would run as the function's owner.
            _ = try admin.transaction(prelude: [
                asUser, onCitus,
                "CREATE TEMP TABLE import_habits (i integer, id uuid, name text, icon text, color text, sort_order integer, periods jsonb)",
                Query(unsafeSQL: """
                    CREATE FUNCTION pg_temp.hijack() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN INSERT INTO public.habit_templates (user_id, name) VALUES ('\(other.lowercaseString)', 'stolen'); RETURN NEW; END $$
                    """),
                "CREATE TRIGGER hijack AFTER INSERT ON import_habits FOR EACH ROW EXECUTE FUNCTION pg_temp.hijack()",
            ], statement: "SELECT habit.import_account(\(user), \(document)::jsonb, 'merge')")
            #expect(try admin.queryOne("SELECT count(*) FROM public.habit_templates WHERE user_id = \(other)").decode(Int.self, at: 0) == 0)
            #expect(try admin.queryOne("SELECT count(*) FROM public.habit_templates WHERE user_id = \(user)").decode(Int.self, at: 0) == 1)
        }
    }

    @Test("the same document imported by two workers at once, ten times: both succeed (one writes, the other finds it written), never an internal error")
    func concurrentImports() throws {
        try WorkerSession.with { session in
            try session.withAnotherWorker { other in
                var random = Generator(state: 1_905)
                let now = try Self.nowMicros(session.admin)
                for round in 0..<10 {
                    let user = UUID()
                    let request = params(user, ["document": Self.document(&random, nowMicros: now), "mode": "merge"])
                    let id = WireJSON.string("concurrent-\(round)")
                    try session.worker.sendRequest("account.import", params: request, id: id)
                    try other.sendRequest("account.import", params: request, id: id)
                    let answers = [try session.worker.response(id: id, timeout: 60), try other.response(id: id, timeout: 60)]
                    for answer in answers {
                        #expect(answer.isSuccess, "round \(round): \(answer.raw.prefix(500))")
                    }
                    let inserted = answers.compactMap { $0.result?["counts"]?["habits"]?["inserted"]?.intValue }
                    #expect(inserted.count == 2 && inserted.min() == 0, "round \(round): one import writes, the other finds it written: \(inserted)")
                }
            }
        }
    }

    @Test("merge keeps the user's other rows and updates those that differ; replace deletes what the document does not hold; counts say which")
    func mergeAndReplace() throws {
        try WorkerSession.with { session in
            let worker = session.worker, user = UUID()
            for name in ["Walk", "Read"] { try worker.createHabit(user: user, name: name) }
            _ = try worker.call("lists.create", params(user, ["name": "Home"]))
            let id = "cccccccc-0000-4000-8000-00000000000c"
            let swim = Self.habit(id, periods: [Self.period("2025-01-01T08:00:00Z", "2025-03-01T08:00:00Z")])
            let merged = try worker.call("account.import", params(user, ["document": Self.minimal(habits: [swim], completions: [Self.day("2025-02-01", id)]), "mode": "merge"]))
            #expect(merged["counts"]?["habits"] == ["inserted": 1, "updated": 0, "deleted": 0, "unchanged": 0], "\(merged)")
            #expect(try Self.export(worker, user: user, limit: 1_000)["habits"]?.arrayValue?.count == 3)
            #expect(try Self.export(worker, user: user, limit: 1_000)["lists"]?.arrayValue?.count == 1)
            // Renamed and reopened: an update, with new periods; the completion stays (merge).
            let renamed = Self.habit(id, periods: [Self.period("2025-01-01T08:00:00Z", "2025-03-01T08:00:00Z"), Self.period("2025-04-01T08:00:00Z", nil)])
                .with("name", "Swim")
            let updated = try worker.call("account.import", params(user, ["document": Self.minimal(habits: [renamed]), "mode": "merge"]))
            #expect(updated["counts"]?["habits"] == ["inserted": 0, "updated": 1, "deleted": 0, "unchanged": 0], "\(updated)")
            #expect(updated["counts"]?["completions"] == ["inserted": 0, "updated": 0, "deleted": 0, "unchanged": 0], "\(updated)")
            let history = try worker.call("habits.history", params(user, ["id": .string(id)]))
            #expect(history["periods"]?.arrayValue?.count == 2 && history["periods"]?[1]?["ended_at"] == .null, "\(history)")
            let listed = try worker.call("habits.list", params(user, ["include_inactive": true]))
            let swimRow = listed["habits"]?.arrayValue?.first { $0["id"]?.stringValue == id }
            #expect(swimRow?["name"] == "Swim" && swimRow?["is_active"] == true && swimRow?["activated_at"] == "2025-01-01T08:00:00Z", "\(listed)")
            #expect(try Self.export(worker, user: user, limit: 1_000)["completions"]?.arrayValue?.count == 1)
            // Merge may not contradict the user's other days: a skip where the user has a completion.
            expectError(try worker.request("account.import", params: params(user, ["document": Self.minimal(habits: [renamed], skips: [Self.day("2025-02-01", id)]),
                                                                                  "mode": "merge"])),
                        code: -32004, id: nil, reason: "invalid_state", field: "document.skips[0]")
            // Replace: only the document's rows are left.
            let replaced = try worker.call("account.import", params(user, ["document": Self.minimal(habits: [renamed]), "mode": "replace"]))
            #expect(replaced["counts"]?["habits"] == ["inserted": 0, "updated": 0, "deleted": 2, "unchanged": 1], "\(replaced)")
            #expect(replaced["counts"]?["completions"]?["deleted"] == 1 && replaced["counts"]?["lists"]?["deleted"] == 1, "\(replaced)")
            let left = try Self.export(worker, user: user, limit: 1_000)
            #expect(left["habits"]?.arrayValue?.count == 1 && left["lists"]?.arrayValue?.isEmpty == true && left["completions"]?.arrayValue?.isEmpty == true)
        }
    }
    @Test("areas: written before the habits that name them; merge keeps the user's others; replace deletes those the document lacks, their habits staying without an area; counts say which; a direct call meets the same refusals")
    func areasInMergeAndReplace() throws {
        try WorkerSession.with { session in
            let worker = session.worker, admin = session.admin, user = UUID()
            let health = Self.areaID, work = "a0a0a0a0-0000-4000-8000-000000000002"
            let run = Self.habitID, read = "aaaaaaaa-0000-4000-8000-000000000002"
            func habit(_ id: String, area: String?) -> WireJSON {
                Self.habit(id, periods: [Self.period("2025-01-01T08:00:00Z", nil)]).with("area_id", area.map { .string($0) } ?? .null)
            }
            func exported() throws -> (areas: [WireJSON], areaOf: [String: WireJSON]) {
                let document = try Self.export(worker, user: user, limit: 1_000)
                let habits = document["habits"]?.arrayValue ?? []
                return (document["areas"]?.arrayValue ?? [],
                        Dictionary(uniqueKeysWithValues: habits.map { ($0["id"]?.stringValue ?? "", $0["area_id"] ?? .null) }))
            }
            let first = Self.minimal(habits: [habit(run, area: health), habit(read, area: work)])
                .with("areas", [Self.area(health, name: "Health", sortOrder: 1024), Self.area(work, name: "Work", sortOrder: 2048)])
            let merged = try worker.call("account.import", params(user, ["document": first, "mode": "merge"]))
            #expect(merged["counts"]?["areas"] == ["inserted": 2, "updated": 0, "deleted": 0, "unchanged": 0], "\(merged)")
            #expect(merged["counts"]?["habits"] == ["inserted": 2, "updated": 0, "deleted": 0, "unchanged": 0], "\(merged)")
            var state = try exported()
            #expect(state.areas == [Self.area(health, name: "Health", sortOrder: 1024), Self.area(work, name: "Work", sortOrder: 2048)], "\(state)")
            #expect(state.areaOf == [run: .string(health), read: .string(work)], "\(state)")

            // Merge without an areas member (a document from before them): the user's areas stay;
            // a habit without area_id has none.
            let noAreas = try worker.call("account.import", params(user, ["document": Self.minimal(habits: [Self.habit(run, periods: [Self.period("2025-01-01T08:00:00Z", nil)])]),
                                                                          "mode": "merge"]))
            #expect(noAreas["counts"]?["areas"] == ["inserted": 0, "updated": 0, "deleted": 0, "unchanged": 0], "\(noAreas)")
            #expect(noAreas["counts"]?["habits"] == ["inserted": 0, "updated": 1, "deleted": 0, "unchanged": 0], "\(noAreas)")
            state = try exported()
            #expect(state.areas.count == 2 && state.areaOf == [run: .null, read: .string(work)], "\(state)")

            // Replace: Health renamed, Work gone; Read, which was in Work, stays without an area.
            let second = Self.minimal(habits: [habit(run, area: health), habit(read, area: nil)])
                .with("areas", [Self.area(health, name: "Body", sortOrder: 1024)])
            let replaced = try worker.call("account.import", params(user, ["document": second, "mode": "replace"]))
            #expect(replaced["counts"]?["areas"] == ["inserted": 0, "updated": 1, "deleted": 1, "unchanged": 0], "\(replaced)")
            #expect(replaced["counts"]?["habits"] == ["inserted": 0, "updated": 2, "deleted": 0, "unchanged": 0], "\(replaced)")
            state = try exported()
            #expect(state.areas == [Self.area(health, name: "Body", sortOrder: 1024)], "\(state)")
            #expect(state.areaOf == [run: .string(health), read: .null], "\(state)")
            // The deleted area's tombstone, for the devices.
            #expect(try admin.queryOne("SELECT count(*) FROM habit.sync_tombstones WHERE user_id = \(user) AND kind = 'areas' AND key = \(work)")
                .decode(Int.self, at: 0) == 1)
            // Again: nothing written.
            let before = try Self.checksum(admin)
            let again = try worker.call("account.import", params(user, ["document": second, "mode": "replace"]))
            #expect(again["counts"]?["areas"] == ["inserted": 0, "updated": 0, "deleted": 0, "unchanged": 1], "\(again)")
            #expect(try Self.checksum(admin) == before)

            // Replace by a document without areas: every area goes, every habit stays.
            let none = try worker.call("account.import", params(user, ["document": Self.minimal(habits: [habit(run, area: nil), habit(read, area: nil)]),
                                                                       "mode": "replace"]))
            #expect(none["counts"]?["areas"]?["deleted"] == 1 && none["counts"]?["habits"] == ["inserted": 0, "updated": 1, "deleted": 0, "unchanged": 1],
                    "\(none)")
            state = try exported()
            #expect(state.areas.isEmpty && state.areaOf == [run: .null, read: .null], "\(state)")

            // habit.import_account called directly (as through PostgREST) refuses the same
            // documents with the same paths: the worker's checks are not the only ones.
            let asUser: Query = "SELECT set_config('role', 'authenticated', true), set_config('request.jwt.claim.sub', \(user.lowercaseString), true)"
            let onCitus = Query(unsafeSQL: CitusCluster.current == nil ? "SELECT 1" : "SET LOCAL request.jwt.claim.sub = '\(user.lowercaseString)'")
            let direct: [(WireJSON, String, String)] = [
                (Self.minimal().with("areas", .array((1...101).map { Self.area(String(format: "a0a0a0a0-0000-4000-8000-%012d", $0)) })),
                 "document.areas", "too_many"),
                (Self.minimal().with("areas", [Self.area(), Self.area()]), "document.areas[1].id", "duplicate_value"),
                (Self.minimal(habits: [habit(run, area: work)]).with("areas", [Self.area()]), "document.habits[0].area_id", "unknown_reference"),
                (Self.minimal().with("areas", [Self.area(name: "Work\u{2066}")]), "document.areas[0].name", "invalid_characters"),
            ]
            let untouched = try Self.checksum(admin)
            for (document, path, reason) in direct {
                let error = try #require(throws: PostgresError.self) {
                    try admin.transaction(prelude: [asUser, onCitus], statement: "SELECT habit.import_account(\(user), \(document.encoded)::jsonb, 'merge')")
                }
                #expect(error.sqlState == "HB010" && error.column == path && error.detail == reason, "\(path): \(error)")
            }
            #expect(try Self.checksum(admin) == untouched, "a refused direct call wrote something")
        }
    }

    /// Issue 31, finding 8: a merge keeps the user's completions and skips the document lacks,
    /// so it may not take their habit off their days: such a merge is refused (-32003
    /// `habit_not_active`, `field` the habit's periods, `kept` the row), nothing written.
    /// Before, the merge went in and left a completion on a day re-setting it refuses.
    @Test("merge that would take a habit off a kept completion's or skip's day is refused, naming the row; nothing written")
    func mergeKeepsTheDayRules() throws {
        try WorkerSession.with { session in
            let worker = session.worker, admin = session.admin, user = UUID()
            let open = Self.habit(periods: [Self.period("2025-01-01T08:00:00Z", nil)])
            _ = try worker.call("account.import", params(user, ["document": Self.minimal(habits: [open], completions: [Self.day("2025-02-10")],
                                                                                         skips: [Self.day("2025-02-12")]),
                                                                "mode": "merge"]))
            let before = try Self.checksum(admin)
            // Closed before both days: the completion (habit_completions sorts first) is named.
            let closedEarly = Self.habit(periods: [Self.period("2025-01-01T08:00:00Z", "2025-02-01T08:00:00Z")])
            let early = try worker.request("account.import", params: params(user, ["document": Self.minimal(habits: [closedEarly]), "mode": "merge"]))
            expectError(early, code: -32003, id: nil, reason: "habit_not_active", field: "document.habits[0].periods")
            #expect(early.data?["kept"] == .object([.init("kind", "completions"), .init("date", "2025-02-10")]), "\(early.raw)")
            // Closed between them (on through 2025-02-11 in UTC): the skip is named.
            let closedBetween = Self.habit(periods: [Self.period("2025-01-01T08:00:00Z", "2025-02-11T08:00:00Z")])
            let between = try worker.request("account.import", params: params(user, ["document": Self.minimal(habits: [closedBetween]), "mode": "merge"]))
            expectError(between, code: -32003, id: nil, reason: "habit_not_active", field: "document.habits[0].periods")
            #expect(between.data?["kept"] == .object([.init("kind", "skips"), .init("date", "2025-02-12")]), "\(between.raw)")
            #expect(try Self.checksum(admin) == before, "a refused merge wrote something")
            // Re-setting the kept completion still works: the habit is still on that day.
            _ = try worker.call("completions.set", params(user, ["template_id": .string(Self.habitID), "date": "2025-02-10", "completed": false]))
            _ = try worker.call("completions.set", params(user, ["template_id": .string(Self.habitID), "date": "2025-02-10", "completed": true]))
            // Closed after both days: merged, both rows kept.
            let closedLater = Self.habit(periods: [Self.period("2025-01-01T08:00:00Z", "2025-03-01T08:00:00Z")])
            let later = try worker.call("account.import", params(user, ["document": Self.minimal(habits: [closedLater]), "mode": "merge"]))
            #expect(later["counts"]?["habits"]?["updated"] == 1, "\(later)")
            let kept = try Self.export(worker, user: user, limit: 1_000)
            #expect(kept["completions"]?.arrayValue?.count == 1 && kept["skips"]?.arrayValue?.count == 1, "\(kept)")
            // Replace deletes the rows the document lacks, so it may close the habit early.
            let replaced = try worker.call("account.import", params(user, ["document": Self.minimal(habits: [closedEarly]), "mode": "replace"]))
            #expect(replaced["counts"]?["completions"]?["deleted"] == 1 && replaced["counts"]?["skips"]?["deleted"] == 1, "\(replaced)")
        }
    }
}
