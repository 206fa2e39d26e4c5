import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// `sync.pull` over the pipes: pages, nothing new, and the cursors it refuses (issue 18).
@Suite("habit serve: sync.pull")
struct SyncPullTests {
    /// The cursor with its issue time moved (its text is `v4.` + base64url of
    /// `<seq>.<rank>.<key>.<fresh_upto>.<issued_unix_seconds>`, Sources/HabitStore/SyncModels.swift).
    static func reissued(_ cursor: String, secondsAgo: Int) throws -> String {
        var fields = try decoded(cursor).split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        fields[4] = String(Int(Date().timeIntervalSince1970) - secondsAgo)
        return "v4." + Data(fields.joined(separator: ".").utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// The cursor's position: all but its issue time (a pull re-issues the cursor it answers).
    static func position(_ cursor: WireJSON?) throws -> String {
        let text = try #require(cursor?.stringValue)
        return try decoded(text).split(separator: ".", omittingEmptySubsequences: false).dropLast().joined(separator: ".")
    }

    static func decoded(_ cursor: String) throws -> String {
        var base64 = String(cursor.dropFirst(3)).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return try #require(Data(base64Encoded: base64).flatMap { String(data: $0, encoding: .utf8) })
    }

    @Test("a whole walk in pages, then nothing new: an empty answer with the same cursor; a repeated pull answers the same")
    func pagesThenNothingNew() throws {
        try WorkerSession.with { session in
            let worker = session.worker, user = UUID()
            for name in ["Walk", "Read", "Stretch"] { try worker.createHabit(user: user, name: name) }
            _ = try worker.call("tasks.create", params(user, ["title": "Milk"]))
            var cursor: WireJSON?, habits = 0, tasks = 0, pages = 0
            repeat {
                let page = try worker.call("sync.pull", params(user, ["limit": 2].merging(cursor.map { ["cursor": $0] } ?? [:]) { $1 }))
                // Retry-safe: the same page again, at the same position (re-issued now).
                let again = try worker.call("sync.pull", params(user, ["limit": 2].merging(cursor.map { ["cursor": $0] } ?? [:]) { $1 }))
                #expect(again["changes"] == page["changes"] && again["deleted"] == page["deleted"] && again["has_more"] == page["has_more"])
                #expect(try Self.position(again["cursor"]) == Self.position(page["cursor"]))
                let changes = try #require(page["changes"])
                let count = ["habits", "periods", "completions", "skips", "lists", "tasks"].reduce(0) { $0 + (changes[$1]?.arrayValue?.count ?? 0) }
                #expect(count <= 2, "\(page)")
                habits += changes["habits"]?.arrayValue?.count ?? 0
                tasks += changes["tasks"]?.arrayValue?.count ?? 0
                pages += 1
                cursor = page["cursor"]
                if page["has_more"] != true { break }
            } while pages < 20
            #expect(habits == 3 && tasks == 1 && pages >= 4)
            let nothing = try worker.call("sync.pull", params(user, ["cursor": try #require(cursor)]))
            #expect(try Self.position(nothing["cursor"]) == Self.position(cursor) && nothing["has_more"] == false)
            #expect(nothing["changes"]?["habits"]?.arrayValue?.isEmpty == true && nothing["deleted"]?["habits"]?.arrayValue?.isEmpty == true)
        }
    }

    /// Check-ins and notes are synced like every other row (issue 32): written on one device,
    /// pulled by another with its cursor; a removed check-in and a cleared note come back as
    /// deleted keys; the day's completion that the check-ins made travels with them.
    @Test("check-ins and notes: pulled as rows, removed ones as deleted keys")
    func checkinsAndNotesArePulled() throws {
        try WorkerSession.with { session in
            let worker = session.worker, user = UUID()
            let habit = try #require(try worker.createHabit(user: user, name: "Run", extra: [
                .init("kind", "measurable"), .init("unit", "km"), .init("target", "5"), .init("activated_at", "2025-01-06T07:00:00Z"),
            ])["id"])
            let start = try #require(try worker.call("sync.pull", params(user))["cursor"])
            let added = try worker.call("checkins.add", params(user, ["template_id": habit, "date": "2025-01-07", "value": "5", "time": "07:30", "client_id": "watch-1"]))
            _ = try worker.call("notes.set", params(user, ["template_id": habit, "date": "2025-01-07", "note": "knee hurt, walked instead"]))
            let pulled = try worker.call("sync.pull", params(user, ["cursor": start]))
            let checkins = try #require(pulled["changes"]?["checkins"]?.arrayValue)
            #expect(checkins.count == 1 && checkins.first?["id"] == added["id"] && checkins.first?["template_id"] == habit
                    && checkins.first?["date"] == "2025-01-07" && checkins.first?["value"] == "5" && checkins.first?["time"] == "07:30"
                    && checkins.first?["client_id"] == "watch-1", "\(pulled)")
            let notes = try #require(pulled["changes"]?["notes"]?.arrayValue)
            #expect(notes.count == 1 && notes.first?["note"] == "knee hurt, walked instead" && notes.first?["date"] == "2025-01-07", "\(pulled)")
            #expect(pulled["changes"]?["completions"]?.arrayValue?.count == 1, "the day the check-in made done: \(pulled)")
            let caughtUp = try #require(pulled["cursor"])
            _ = try worker.call("checkins.remove", params(user, ["checkin_id": try #require(added["id"])]))
            _ = try worker.call("notes.set", params(user, ["template_id": habit, "date": "2025-01-07", "note": .null]))
            let after = try worker.call("sync.pull", params(user, ["cursor": caughtUp]))
            #expect(after["deleted"]?["checkins"] == .array([try #require(added["id"])]), "\(after)")
            #expect(after["deleted"]?["notes"] == .array([["template_id": habit, "date": "2025-01-07"]]), "\(after)")
            #expect(after["deleted"]?["completions"]?.arrayValue?.count == 1, "\(after)")
            #expect(after["changes"]?["checkins"]?.arrayValue?.isEmpty == true && after["changes"]?["notes"]?.arrayValue?.isEmpty == true)
        }
    }

    @Test("cursor_expired: older than --sync-retention-days, or below a prune; invalid cursors and limits are -32602")
    func refusedCursors() throws {
        try WorkerSession.with(arguments: ["--sync-retention-days", "1"]) { session in
            let worker = session.worker, user = UUID()
            let habit = try #require(try worker.createHabit(user: user, name: "Walk").habitID)
            let cursor = try #require(try worker.call("sync.pull", params(user))["cursor"]?.stringValue)
            let recent = try Self.reissued(cursor, secondsAgo: 3_600), old = try Self.reissued(cursor, secondsAgo: 2 * 86_400)
            #expect(try worker.call("sync.pull", params(user, ["cursor": .string(recent)]))["has_more"] == false)
            expectError(try worker.request("sync.pull", params: params(user, ["cursor": .string(old)])), code: -32017, id: nil, reason: "cursor_expired")
            // The deletion's tombstone pruned: a cursor from before it can no longer learn of it.
            _ = try worker.call("habits.delete", params(user, ["id": .uuid(habit)]))
            _ = try session.admin.query("SELECT * FROM habit.prune_sync(interval '0 seconds')")
            expectError(try worker.request("sync.pull", params: params(user, ["cursor": .string(cursor)])), code: -32017, id: nil, reason: "cursor_expired")
            // From scratch again: the current state, and a cursor that works.
            let fresh = try worker.call("sync.pull", params(user))
            #expect(fresh["changes"]?["habits"]?.arrayValue?.isEmpty == true)
            #expect(try worker.call("sync.pull", params(user, ["cursor": try #require(fresh["cursor"])]))["has_more"] == false)
            // A cursor of the version before check-ins and notes were pulled, before reminders were, or before areas were: expired.
            expectError(try worker.request("sync.pull", params: params(user, ["cursor": .string("v3." + Data("4.10..4.\(Int(Date().timeIntervalSince1970))".utf8).base64EncodedString().replacingOccurrences(of: "=", with: ""))])),
                        code: -32017, id: nil, reason: "cursor_expired")
            expectError(try worker.request("sync.pull", params: params(user, ["cursor": .string("v2." + Data("4.9..4.\(Int(Date().timeIntervalSince1970))".utf8).base64EncodedString().replacingOccurrences(of: "=", with: ""))])),
                        code: -32017, id: nil, reason: "cursor_expired")
            expectError(try worker.request("sync.pull", params: params(user, ["cursor": .string("v1." + Data("4.7..4.\(Int(Date().timeIntervalSince1970))".utf8).base64EncodedString().replacingOccurrences(of: "=", with: ""))])),
                        code: -32017, id: nil, reason: "cursor_expired")
            for (members, field, reason) in [(["cursor": "v4.bm9wZQ"], "cursor", "invalid_cursor"), (["cursor": "12"], "cursor", "invalid_cursor"),
                                             (["limit": 0], "limit", "out_of_range"), (["limit": 10_001], "limit", "out_of_range")] as [([String: WireJSON], String, String)] {
                expectError(try worker.request("sync.pull", params: params(user, members)), code: -32602, id: nil, reason: reason, field: field)
            }
        }
    }
}
