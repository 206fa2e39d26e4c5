import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Issue 30 #5: the numbers docs/protocol.md states about the protocol's limits are the
/// worker's — row limits, field lengths, timestamp precision and the default page sizes —
/// each checked on both sides of the edge through a spawned `habit serve`.
@Suite("docs: the documented limits are the worker's")
struct DocumentedLimitsTests {
    @Test("habit.row_limits of a fresh database: 1,000 habits, 100,000 tasks, 1,000 lists, 100 areas")
    func rowLimitDefaults() throws {
        try WorkerSession.with { session in
            let rows = try session.admin.query("SELECT table_name, max_rows FROM habit.row_limits ORDER BY table_name")
            let limits = Dictionary(uniqueKeysWithValues: try rows.map { (try $0.decode(String.self, at: 0), try $0.decode(Int.self, at: 1)) })
            #expect(limits == ["habit_templates": 1_000, "tasks": 100_000, "task_lists": 1_000, "habit_areas": 100],
                    "protocol.md (-32013) and schema.md (Row limits): 1,000 habits, 100,000 tasks, 1,000 lists, 100 areas by default")
        }
    }

    @Test("habits.create: an icon of 100 characters is accepted, 101 is -32602 invalid_icon on field icon")
    func iconLength() throws {
        try WorkerSession.with { session in
            let worker = session.worker, user = UUID()
            let longest = String(repeating: "a", count: 100)
            let created = try worker.request("habits.create", params: params(user, ["name": "Icon", "icon": .string(longest)]))
            #expect(created.result?["icon"] == .string(longest), "protocol.md Habit.icon: an SF Symbol name ≤ 100 is accepted; got \(created.raw)")
            // Dot-separated words count their dots too.
            let dotted = Array(repeating: "a", count: 50).joined(separator: ".") + "a" // 100 characters
            #expect(dotted.count == 100)
            #expect(try worker.request("habits.create", params: params(user, ["name": "Dotted", "icon": .string(dotted)])).isSuccess,
                    "protocol.md Habit.icon: a dotted name of 100 characters is accepted")
            for icon in [longest + "a", dotted + "a"] {
                expectError(try worker.request("habits.create", params: params(user, ["name": "Too long", "icon": .string(icon)])),
                            code: -32602, id: nil, reason: "invalid_icon", field: "icon")
            }
            #expect(try session.habitCount(user: user) == 2, "protocol.md Habit.icon ≤ 100: the 101-character icons wrote nothing")
        }
    }

    @Test("sync.push: a mutation_id of 200 characters (code points) is accepted, 201 is -32602 too_long on mutations[0].mutation_id")
    func mutationIDLength() throws {
        try WorkerSession.with { session in
            let worker = session.worker, user = UUID()
            // "é" is 2 UTF-8 bytes: characters are counted, not bytes.
            for (index, character) in ["m", "é"].enumerated() {
                let id = String(repeating: character, count: 200)
                let push = SyncPushTests.push(user, client: "c\(index)", [SyncPushTests.mutation(id, "habits.create", ["name": .string("H\(index)")])])
                let results = try worker.call("sync.push", push)["results"]?.arrayValue ?? []
                #expect(results.count == 1 && results.first?["mutation_id"] == .string(id) && results.first?["result"]?["name"] != nil,
                        "protocol.md sync.push: mutation_id 1–200 characters; 200 × \(character) must apply, got \(results)")

                let tooLong = SyncPushTests.push(user, client: "c\(index)", [SyncPushTests.mutation(id + character, "habits.create", ["name": "No"])])
                expectError(try worker.request("sync.push", params: tooLong), code: -32602, id: nil, reason: "too_long",
                            field: "mutations[0].mutation_id")
            }
            #expect(try session.habitCount(user: user) == 2, "protocol.md sync.push: a 201-character mutation_id runs nothing")
            #expect(try session.admin.queryOne("SELECT count(*) FROM habit.sync_mutations WHERE user_id = \(user)").decode(Int.self, at: 0) == 2,
                    "protocol.md sync.push: a 201-character mutation_id records nothing")
        }
    }

    @Test("timestamps: fraction digits past the 6th are truncated (not rounded)")
    func timestampFractionTruncated() throws {
        try WorkerSession.with { session in
            let worker = session.worker, user = UUID()
            for (given, expected) in [
                ("2026-01-01T00:00:00.1234569Z", "2026-01-01T00:00:00.123456Z"),
                ("2026-01-01T00:00:00.99999999999Z", "2026-01-01T00:00:00.999999Z"),
                ("2026-01-01T01:00:00.0000009+01:00", "2026-01-01T00:00:00Z"),
                ("2026-01-01T00:00:00.123456Z", "2026-01-01T00:00:00.123456Z"),
            ] {
                let habit = try worker.createHabit(user: user, name: "H", extra: [.init("activated_at", .string(given))])
                #expect(habit["activated_at"] == .string(expected),
                        "protocol.md Scalar formats, timestamp: \"digits past the 6th are truncated\": \(given) → \(expected), got \(habit["activated_at"] ?? .null)")
            }
        }
    }

    @Test("habits.list: limit defaults to 100 rows per page")
    func pageLimitDefault() throws {
        try WorkerSession.with { session in
            let worker = session.worker, user = UUID()
            try session.admin.execute("""
                INSERT INTO public.habit_templates (user_id, name, sort_order) SELECT \(user), 'Habit ' || n, n FROM generate_series(1, 101) n
                """)
            let first = try worker.call("habits.list", params(user))
            #expect(first["habits"]?.arrayValue?.count == 100, "protocol.md Pagination: limit default 100")
            let cursor = try #require(first["next_cursor"]?.stringValue, "protocol.md Pagination: a string next_cursor when more rows follow")
            let second = try worker.call("habits.list", params(user, ["cursor": .string(cursor)]))
            #expect(second["habits"]?.arrayValue?.count == 1 && second["next_cursor"] == .null,
                    "protocol.md Pagination: the 101st habit on the next page of the default 100, next_cursor null")
        }
    }

    /// sync.pull's page size as the doc defines it: "rows plus deletions" (the profile counts one).
    static func pulledItems(_ answer: WireJSON) -> Int {
        var count = 0
        for part in ["changes", "deleted"] {
            for member in answer[part]?.members ?? [] {
                if let array = member.value.arrayValue { count += array.count } else if member.value != .null && member.value != false { count += 1 }
            }
        }
        return count
    }

    /// account.export's page size as the doc defines it: the profile, a habit with its periods,
    /// a completion, a skip, a list, a task each count one.
    static func exportedItems(_ document: WireJSON) -> Int {
        var count = (document["profile"] ?? .null) == .null ? 0 : 1
        for key in ["habits", "completions", "skips", "lists", "tasks"] { count += document[key]?.arrayValue?.count ?? 0 }
        return count
    }

    @Test("sync.pull and account.export: limit defaults to 1,000 items per answer")
    func syncAndExportLimitDefault() throws {
        try WorkerSession.with { session in
            let worker = session.worker, user = UUID()
            // 1,001 items either way: the profile and 1,000 tasks. (Without a profile, export's
            // first page still spends the profile's slot and holds 999 items: within "most items".)
            try worker.call("profile.set", params(user, ["timezone": "Europe/Paris"]))
            try session.admin.execute("""
                INSERT INTO public.tasks (user_id, title, position) SELECT \(user), 'Task ' || n, n FROM generate_series(1, 1000) n
                """)

            let pull = try worker.call("sync.pull", params(user))
            #expect(Self.pulledItems(pull) == 1_000,
                    "protocol.md sync.pull: limit default 1,000 rows plus deletions; got \(Self.pulledItems(pull))")
            #expect(pull["has_more"] == true, "protocol.md sync.pull: has_more true while more is waiting")
            let cursor = try #require(pull["cursor"]?.stringValue)
            let rest = try worker.call("sync.pull", params(user, ["cursor": .string(cursor)]))
            #expect(Self.pulledItems(rest) == 1 && rest["has_more"] == false,
                    "protocol.md sync.pull: the 1,001st item in the next answer of the default 1,000; got \(Self.pulledItems(rest))")

            let export = try worker.call("account.export", params(user))
            let document = try #require(export["document"])
            #expect(Self.exportedItems(document) == 1_000, "protocol.md account.export: limit default 1,000 items; got \(Self.exportedItems(document))")
            #expect(export["has_more"] == true, "protocol.md account.export: has_more true before the last page")
            let next = try #require(export["cursor"]?.stringValue, "protocol.md account.export: cursor non-null before the last page")
            let last = try worker.call("account.export", params(user, ["cursor": .string(next)]))
            #expect(Self.exportedItems(last["document"] ?? .null) == 1 && last["has_more"] == false && last["cursor"] == .null,
                    "protocol.md account.export: the 1,001st item on the last page, cursor null, has_more false")
        }
    }
}
