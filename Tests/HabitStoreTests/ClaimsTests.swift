import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// The two auth.uid() definitions Supabase has shipped. A user transaction sets
/// request.jwt.claims, request.jwt.claim.sub and request.jwt.claim.role together,
/// transaction-locally, so both see the request's user and nothing set for the session or the
/// role can stand in for it.
enum AuthUIDDefinition: String, CaseIterable, CustomTestStringConvertible {
    /// Supabase's database init scripts: only the older per-claim setting.
    case initScripts
    /// GoTrue's later one (also what the baseline creates when auth.uid() is missing): either.
    case gotrue

    var testDescription: String { rawValue }

    /// Runs `body` with a migrated database whose auth.uid() is this definition, created
    /// before migrating as on Supabase (0001 then leaves it alone).
    func withDatabase(_ body: (TestDatabase) throws -> Void) throws {
        switch self {
        case .gotrue:
            try TestDatabase.with { database in try body(database) }
        case .initScripts:
            try TestDatabase.withSupabaseInitScriptAuth { database in
                let connection = try database.connect()
                defer { connection.close() }
                #expect(try connection.queryOne("SELECT prosrc FROM pg_proc WHERE oid = 'auth.uid()'::regprocedure")
                    .decode(String.self, at: 0).contains("jwt.claims") == false)
                try body(database)
            }
        }
    }
}

@Suite struct ClaimsTests {
    /// Writes and reads of both repositories through the worker's role succeed, and another
    /// user sees none of it.
    @Test(arguments: AuthUIDDefinition.allCases)
    func repositoriesWorkWithEitherAuthUID(definition: AuthUIDDefinition) throws {
        try definition.withDatabase { database in
            try Self.expectOwnRowsOnly(database)
        }
    }

    /// A request.jwt.claim.sub set for the worker's role (in this database) never replaces the
    /// request's user: the request acts as itself and never as the other user.
    @Test(arguments: AuthUIDDefinition.allCases)
    func roleLevelClaimNeverOverridesTheRequestsUser(definition: AuthUIDDefinition) throws {
        try definition.withDatabase { database in
            let admin = try database.connect()
            let other = UUID()
            try admin.execute("INSERT INTO public.habit_templates (user_id, name) VALUES (\(other), 'Other''s habit')")
            try admin.execute(Query(unsafeSQL: "ALTER ROLE habit_worker IN DATABASE \(database.name) SET request.jwt.claim.sub = '\(other.lowercaseString)'"))
            // The setting reaches the worker's new sessions.
            let worker = try database.connect(user: "habit_worker")
            #expect(try worker.queryOne("SELECT current_setting('request.jwt.claim.sub', true)").decode(String.self, at: 0) == other.lowercaseString)
            let user = UUID()
            try UserScope(connection: worker).transaction(as: user) { connection throws in
                #expect(try connection.queryOne("SELECT auth.uid()").decode(UUID.self, at: 0) == user)
                #expect(try connection.queryOne("SELECT count(*) FROM public.habit_templates").decode(Int.self, at: 0) == 0)
            }
            try Self.expectOwnRowsOnly(database, user: user)
            // The other user's rows were neither seen nor changed.
            #expect(try admin.queryOne("SELECT count(*) FROM public.habit_templates WHERE user_id = \(other)").decode(Int.self, at: 0) == 1)
            #expect(try admin.queryOne("SELECT count(*) FROM public.tasks WHERE user_id = \(other)").decode(Int.self, at: 0) == 0)
        }
    }

    static func expectOwnRowsOnly(_ database: TestDatabase, user: UUID = UUID(), sourceLocation: SourceLocation = #_sourceLocation) throws {
        let habits = HabitRepository(connection: try database.connect(user: "habit_worker"))
        let tasks = TaskRepository(connection: try database.connect(user: "habit_worker"))
        let stranger = UUID()
        let day = date("2026-02-02")

        _ = try habits.setTimeZone(user: user, timeZone: "Europe/Paris")
        let habit = try habits.createHabit(user: user, HabitDraft(name: "Run", activatedAt: instant("2026-01-01T00:00:00Z")))
        _ = try habits.setCompletion(user: user, template: habit.id, date: day, completed: true)
        let list = try tasks.createList(user: user, name: "Home")
        let task = try tasks.createTask(user: user, TaskDraft(title: "Water plants", listID: list.id, scheduledDate: day))
        _ = try tasks.completeTask(user: user, id: task.id)

        #expect(try habits.profile(user: user).timeZone == "Europe/Paris", sourceLocation: sourceLocation)
        #expect(try habits.listHabits(user: user).map(\.id) == [habit.id], sourceLocation: sourceLocation)
        #expect(try habits.day(user: user, date: day).completed == [habit.id], sourceLocation: sourceLocation)
        #expect(try tasks.lists(user: user).map(\.id) == [list.id], sourceLocation: sourceLocation)
        #expect(try tasks.task(user: user, id: task.id).state == .completed, sourceLocation: sourceLocation)

        #expect(try habits.listHabits(user: stranger, includeInactive: true).isEmpty, sourceLocation: sourceLocation)
        #expect(try habits.day(user: stranger, date: day).completed.isEmpty, sourceLocation: sourceLocation)
        #expect(try tasks.lists(user: stranger).isEmpty, sourceLocation: sourceLocation)
        #expect(throws: StoreError.notFound, sourceLocation: sourceLocation) { try tasks.task(user: stranger, id: task.id) }
        #expect(throws: StoreError.notFound, sourceLocation: sourceLocation) {
            try habits.updateHabit(user: stranger, id: habit.id, HabitChanges(name: "Hacked"))
        }
    }
}
