import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// The worker on a database built by Supabase's own init scripts, whose auth.uid() reads only
/// the request.jwt.claim.sub setting (created before migrating; 0001 leaves it alone).
@Suite("habit serve: Supabase's init-script auth.uid()")
struct SupabaseAuthTests {
    @Test("writes and reads succeed, as the request's user only")
    func initScriptAuthUID() throws {
        try TestDatabase.withSupabaseInitScriptAuth { database in
            let admin = try database.connect()
            defer { admin.close() }
            try WorkerProcess.withServe(databaseURL: try database.workerURL(), arguments: ["--pool-size", "2"]) { worker in
                let a = UUID(), b = UUID()
                try worker.call("profile.set", params(a, ["timezone": "Europe/Berlin"]))
                let habit = try worker.createHabit(user: a, name: "Run")
                let id = try #require(habit["id"])
                let today = try admin.queryOne("SELECT habit.local_date(now(), 'Europe/Berlin')").decode(CalendarDate.self, at: 0).description
                #expect(try worker.call("completions.set", params(a, ["template_id": id, "date": .string(today), "completed": true]))
                    == ["completed": true, "state": "done", "changed": true])
                let list = try worker.call("lists.create", params(a, ["name": "Home"]))
                try worker.call("tasks.create", params(a, ["title": "Water plants", "list_id": try #require(list["id"])]))
                #expect(try worker.call("habits.list", params(a))["habits"]?.arrayValue?.count == 1)
                #expect(try worker.call("habits.list", params(b))["habits"]?.arrayValue?.isEmpty == true)
                let other = try worker.request("habits.update", params: params(b, ["id": id, "name": "Hijacked"]))
                expectError(other, code: Code.notFound, id: other.id)
                #expect(try admin.queryOne("SELECT count(*) FROM public.tasks WHERE user_id = \(a)").decode(Int.self, at: 0) == 1)
                #expect(try admin.queryOne("SELECT name FROM public.habit_templates").decode(String.self, at: 0) == "Run")
            }
        }
    }
}
