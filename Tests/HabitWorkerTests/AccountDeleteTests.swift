import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// `account.delete` over the pipes (issue 19): the confirmation, isolation by `user_id`, what
/// a second device's pull sees afterwards, and the refusal inside a sync.push.
@Suite("habit serve: account.delete")
struct AccountDeleteTests {
    /// The user's rows in the synced tables, as psql sees them.
    static func rows(_ admin: Connection, user: UUID) throws -> Int {
        try admin.queryOne("""
            SELECT (SELECT count(*) FROM profiles WHERE user_id = \(user)) + (SELECT count(*) FROM habit_templates WHERE user_id = \(user))
                 + (SELECT count(*) FROM habit_completions WHERE user_id = \(user)) + (SELECT count(*) FROM habit_skips WHERE user_id = \(user))
                 + (SELECT count(*) FROM task_lists WHERE user_id = \(user)) + (SELECT count(*) FROM tasks WHERE user_id = \(user))
                 + (SELECT count(*) FROM habit_areas WHERE user_id = \(user))
            """).decode(Int.self, at: 0)
    }

    /// A user with a profile, an area, a habit in it done yesterday and skipped the day before, a list and a task.
    static func fill(_ session: WorkerSession, user: UUID) throws -> UUID {
        let worker = session.worker, today = try session.today()
        _ = try worker.call("profile.set", params(user, ["timezone": "Europe/Berlin"]))
        let area = try #require(try worker.call("areas.create", params(user, ["name": "Health"]))["id"])
        let habit = try #require(try worker.call("habits.create", params(user, ["name": "Walk", "activated_at": "2020-01-01T00:00:00Z",
                                                                                "area_id": area])).habitID)
        _ = try worker.call("completions.set", params(user, ["template_id": .uuid(habit), "date": .string(today.adding(days: -1).description), "completed": true]))
        _ = try worker.call("skips.set_range", params(user, ["template_id": .uuid(habit), "from": .string(today.adding(days: -2).description),
                                                              "to": .string(today.adding(days: -2).description), "skipped": true]))
        let list = try worker.call("lists.create", params(user, ["name": "Home"]))
        _ = try worker.call("tasks.create", params(user, ["title": "Milk", "list_id": try #require(list["id"])]))
        return habit
    }

    @Test("confirm must equal user_id: a mismatch, a non-UUID or no confirm is -32602 and deletes nothing; the user's own deletion leaves another user's rows; a repeat answers zeros")
    func confirmationAndIsolation() throws {
        try WorkerSession.with { session in
            let worker = session.worker, user = UUID(), other = UUID()
            _ = try Self.fill(session, user: user)
            _ = try Self.fill(session, user: other)
            let rows = try Self.rows(session.admin, user: user), otherRows = try Self.rows(session.admin, user: other)
            #expect(rows == 7 && otherRows == 7)

            let refused: [([String: WireJSON], String, String)] = [
                (["confirm": .uuid(other)], "confirm", "confirmation_mismatch"),
                (["confirm": "yes"], "confirm", "confirmation_mismatch"),
                (["confirm": ""], "confirm", "confirmation_mismatch"),
                ([:], "confirm", "required"),
                (["confirm": 1], "confirm", "wrong_type"),
            ]
            for (members, field, reason) in refused {
                expectError(try worker.request("account.delete", params: params(user, members)), code: -32602, id: nil, reason: reason, field: field)
            }
            #expect(try Self.rows(session.admin, user: user) == rows)

            // The same id in upper case confirms it too. user_id is the claims: the deletion can
            // only ever be the user's own, and the other user keeps every row.
            let answer = try worker.call("account.delete", params(user, ["confirm": .string(user.uuidString.uppercased())]))
            let tables = try #require(answer["tables"]?.arrayValue)
            #expect(tables.map { $0["table"]?.stringValue ?? "" }.first == "public.profiles" && tables.count == 18, "\(answer)")
            let deleted = Dictionary(uniqueKeysWithValues: tables.map { ($0["table"]?.stringValue ?? "", $0["deleted"]?.intValue ?? -1) })
            #expect(deleted["public.habit_templates"] == 1 && deleted["public.habit_completions"] == 1 && deleted["public.habit_skips"] == 1
                    && deleted["public.tasks"] == 1 && deleted["public.task_lists"] == 1 && deleted["public.profiles"] == 1
                    && deleted["public.habit_areas"] == 1, "\(deleted)")
            #expect(answer["total"]?.intValue == deleted.values.reduce(0, +))
            #expect(try Self.rows(session.admin, user: user) == 0)
            #expect(try Self.rows(session.admin, user: other) == otherRows)

            let again = try worker.call("account.delete", params(user, ["confirm": .uuid(user)]))
            #expect(again["total"] == 0 && again["tables"]?.arrayValue?.allSatisfy { $0["deleted"] == 0 } == true, "\(again)")
            // The other user's account is still whole, and still its own to delete.
            #expect(try worker.call("habits.list", params(other))["habits"]?.arrayValue?.count == 1)
        }
    }

    @Test("a second device's sync.pull after the deletion gets every key as deleted; a sync.push carrying account.delete is refused (method_not_allowed) and deletes nothing")
    func otherDevicesAndPushes() throws {
        try WorkerSession.with { session in
            let worker = session.worker, user = UUID()
            let habit = try Self.fill(session, user: user)
            // The tablet is caught up before the phone deletes the account.
            var cursor: WireJSON?, state: WireJSON?
            repeat {
                state = try worker.call("sync.pull", params(user, cursor.map { ["cursor": $0] } ?? [:]))
                cursor = state?["cursor"]
            } while state?["has_more"] == true
            let task = try session.admin.queryOne("SELECT id FROM tasks WHERE user_id = \(user)").decode(UUID.self, at: 0)

            // A push may not carry it: the mutation is refused and recorded, nothing is deleted.
            let push = try worker.call("sync.push", params(user, ["client_id": "phone", "mutations": [
                .object([.init("mutation_id", "bye"), .init("method", "account.delete"),
                         .init("params", .object([.init("confirm", .uuid(user))]))]),
            ]]))
            #expect(push["results"]?[0]?["error"]?["code"]?.intValue == -32019, "\(push)")
            #expect(push["results"]?[0]?["error"]?["data"]?["reason"] == "method_not_allowed")
            #expect(try Self.rows(session.admin, user: user) == 7)

            _ = try worker.call("account.delete", params(user, ["confirm": .uuid(user)]))

            let pull = try worker.call("sync.pull", params(user, ["cursor": try #require(cursor)]))
            #expect(pull["has_more"] == false)
            let deleted = try #require(pull["deleted"])
            #expect(deleted["profile"] == true)
            #expect(deleted["habits"]?.arrayValue == [.uuid(habit)])
            #expect(deleted["completions"]?.arrayValue?.count == 1 && deleted["skips"]?.arrayValue?.count == 1)
            #expect(deleted["periods"]?.arrayValue?.count == 1 && deleted["lists"]?.arrayValue?.count == 1)
            #expect(deleted["tasks"]?.arrayValue == [.uuid(task)])
            #expect(deleted["areas"]?.arrayValue?.count == 1, "\(deleted)")
            let changes = try #require(pull["changes"])
            #expect(changes["profile"] == .null)
            for kind in ["areas", "habits", "periods", "completions", "skips", "lists", "tasks"] {
                #expect(changes[kind]?.arrayValue?.isEmpty == true, "\(kind): \(changes)")
            }
            // A fresh device's whole-state pull: an empty account.
            let fresh = try worker.call("sync.pull", params(user))
            #expect(fresh["changes"]?["habits"]?.arrayValue?.isEmpty == true && fresh["changes"]?["profile"] == .null)
        }
    }
}
