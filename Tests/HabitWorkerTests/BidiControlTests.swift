import Foundation
import PostgresClient
import TestSupport
import Testing

/// Issue 30, item 9: names, titles and notes refuse the bidirectional control characters
/// (embeddings, overrides, isolates and marks: U+202A–U+202E, U+2066–U+2069, U+200E, U+200F,
/// U+061C), which can make a name read as something else ("Run‮gnp.exe"). The rule is the
/// database's (habit.has_no_bidi_controls, the CHECK constraints of sql/migrations/0019); the
/// worker answers its violation as -32602 `invalid_characters` naming the field, and an
/// account document's as the JSON path of the member.
@Suite("habit serve: bidirectional control characters in names, titles and notes")
struct BidiControlTests {
    static let controls: [Unicode.Scalar] = ["\u{061C}", "\u{200E}", "\u{200F}", "\u{202A}", "\u{202B}", "\u{202C}", "\u{202D}",
                                             "\u{202E}", "\u{2066}", "\u{2067}", "\u{2068}", "\u{2069}"]

    static func text(_ control: Unicode.Scalar) -> WireJSON { .string("Run\(Character(control))gnp") }

    @Test("each method's text field: -32602 invalid_characters with the field; nothing written; right-to-left letters and joiners pass")
    func methodsRefuseBidiControls() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            func refused(_ method: String, _ members: [String: WireJSON], field: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
                let response = try worker.request(method, params: params(user, members))
                expectError(response, code: Code.invalidParams, id: nil, reason: "invalid_characters", field: field, sourceLocation: sourceLocation)
                #expect(response.dataMessage == "must not contain bidirectional control characters", "\(response.raw)", sourceLocation: sourceLocation)
            }
            for control in Self.controls {
                try refused("habits.create", ["name": Self.text(control)], field: "name")
                try refused("lists.create", ["name": Self.text(control)], field: "name")
                try refused("tasks.create", ["title": Self.text(control)], field: "title")
                try refused("tasks.create", ["title": "Fine", "notes": Self.text(control)], field: "notes")
            }
            #expect(try session.habitCount(user: user) == 0)
            #expect(try session.admin.queryOne("SELECT count(*) FROM public.tasks WHERE user_id = \(user)").decode(Int.self, at: 0) == 0)
            #expect(try session.admin.queryOne("SELECT count(*) FROM public.task_lists WHERE user_id = \(user)").decode(Int.self, at: 0) == 0)

            // Updates meet the same wall; the rows keep their text.
            let habit = try worker.call("habits.create", params(user, ["name": "Run"]))["id"]!
            let list = try worker.call("lists.create", params(user, ["name": "Errands"]))["id"]!
            let task = try worker.call("tasks.create", params(user, ["title": "Buy milk", "notes": "2 l"]))["id"]!
            let override = Self.text("\u{202E}")
            try refused("habits.update", ["id": habit, "name": override], field: "name")
            try refused("lists.update", ["id": list, "name": override], field: "name")
            try refused("tasks.update", ["id": task, "title": override], field: "title")
            try refused("tasks.update", ["id": task, "notes": override], field: "notes")
            #expect(try session.admin.queryOne("""
                SELECT (SELECT name FROM public.habit_templates WHERE user_id = \(user)) || '|' ||
                       (SELECT name FROM public.task_lists WHERE user_id = \(user)) || '|' ||
                       (SELECT title || ' ' || notes FROM public.tasks WHERE user_id = \(user))
                """).decode(String.self, at: 0) == "Run|Errands|Buy milk 2 l")

            // Right-to-left text itself, and the joiners emoji and Indic scripts need, are fine.
            for name in ["שלום עולם", "مرحبا", "👨‍👩‍👧", "क्‍ष", "a\u{200B}b"] {
                #expect(try worker.call("habits.create", params(user, ["name": .string(name)]))["name"] == .string(name))
            }
            #expect(try worker.call("tasks.create", params(user, ["title": "RTL", "notes": "שורה אחת\nשורה שתיים"]))["notes"] == "שורה אחת\nשורה שתיים")
        }
    }

    @Test("account.import: the JSON path of the name, title or notes, and nothing written")
    func importRefusesBidiControls() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let user = UUID()
            let override = Self.text("\u{202E}")
            func document(habitName: WireJSON = "Walk", listName: WireJSON = "Errands", title: WireJSON = "Buy milk", notes: WireJSON = .null) -> WireJSON {
                .object([
                    .init("format", "habit-account"), .init("version", 1), .init("profile", .null),
                    .init("habits", [.object([.init("id", "aaaaaaaa-0000-4000-8000-000000000001"), .init("name", habitName), .init("periods", [])])]),
                    .init("completions", []), .init("skips", []),
                    .init("lists", [.object([.init("id", "bbbbbbbb-0000-4000-8000-000000000002"), .init("name", listName)])]),
                    .init("tasks", [.object([.init("id", "cccccccc-0000-4000-8000-000000000003"), .init("title", title), .init("notes", notes),
                                             .init("state", "not_started"), .init("position", 1)])]),
                ])
            }
            let cases: [(WireJSON, String)] = [
                (document(habitName: override), "document.habits[0].name"),
                (document(listName: override), "document.lists[0].name"),
                (document(title: override), "document.tasks[0].title"),
                (document(notes: override), "document.tasks[0].notes"),
            ]
            for (refusedDocument, field) in cases {
                for mode in ["merge", "replace"] as [WireJSON] {
                    let response = try worker.request("account.import", params: params(user, ["document": refusedDocument, "mode": mode]))
                    expectError(response, code: Code.invalidParams, id: nil, reason: "invalid_characters", field: field)
                }
            }
            #expect(try session.habitCount(user: user) == 0)
            _ = try worker.call("account.import", params(user, ["document": document(), "mode": "merge"]))
            #expect(try session.habitCount(user: user) == 1)
        }
    }
}
