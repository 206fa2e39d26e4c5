import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Who may make a SECURITY DEFINER function act for a user it names: one rule,
/// `habit.check_acting_for` (sql/functions/sync.sql), for every such function a user's role can
/// call. The user itself (`auth.uid()`), or a role acting for users — a superuser or BYPASSRLS
/// role, the functions' owner, `service_role`, `habit_admin`, or a member of one of them. Any
/// other role is held to `auth.uid()` (42501), a role that only inherits `authenticated` (or
/// `anon`) included: before, only roles named exactly `authenticated` or `anon` were, so after
/// `GRANT authenticated TO custom_role` that role locked, read the notification token of and
/// wrote replay records for any user; while `habit.delete_account` and
/// `habit.prune_replay_records` had rules of their own, which refused it even for itself.
@Suite struct ActingForUsersWallTests {
    static func claims(_ user: UUID) -> Query {
        "SELECT set_config('request.jwt.claims', \(#"{"sub":"\#(user.uuidString.lowercased())","role":"authenticated"}"#), true)"
    }

    /// What the role switch of the worker (and of PostgREST) does: `SET LOCAL ROLE`.
    static func role(_ name: String) -> Query { "SELECT set_config('role', \(name), true)" }

    /// The functions acting for the user they are given that `authenticated` may call, in an
    /// order one transaction can run them in (the record needs the claim before it).
    static func calls(for user: UUID) -> [Query] {
        [
            "SELECT habit.lock_user_writes(\(user))::text",
            "SELECT habit.change_token(\(user))::text",
            "SELECT habit.sync_mutation_claim(\(user), 'phone', 'm1')::text",
            "SELECT habit.sync_mutation_record(\(user), 'phone', 'm1', \(#"{"result":null}"#)::jsonb)::text",
            "SELECT habit.prune_replay_records(\(user))::text",
            "SELECT count(*)::text FROM habit.delete_account(\(user))",
        ]
    }

    /// Runs `statement` alone in a transaction of its own under `prelude`; the error, if any.
    static func refusal(of statement: Query, prelude: [Query], on connection: Connection) -> PostgresError? {
        do {
            _ = try connection.withTransaction(prelude: prelude) { try $0.query(statement) }
            return nil
        } catch let failure {
            return failure as? PostgresError ?? PostgresError(kind: .misuse, message: "\(failure)")
        }
    }

    @Test("a role inheriting authenticated or anon is held to auth.uid() like authenticated; the roles acting for users act for anyone")
    func oneRuleForEveryFunction() throws {
        try TestDatabase.with { database throws in
            let admin = try database.connect()
            // Roles are cluster-wide: names of this run's own, dropped afterwards.
            let suffix = UUID().uuidString.lowercased().prefix(8)
            let member = "habit_test_member_\(suffix)", anonMember = "habit_test_anon_\(suffix)"
            let adminMember = "habit_test_admin_\(suffix)", bypass = "habit_test_bypass_\(suffix)"
            try admin.executeScript(unsafeSQL: """
                CREATE ROLE \(member) NOLOGIN;
                GRANT authenticated TO \(member);
                CREATE ROLE \(anonMember) NOLOGIN;
                GRANT anon TO \(anonMember);
                GRANT USAGE ON SCHEMA habit TO \(anonMember);
                GRANT EXECUTE ON FUNCTION habit.lock_user_writes(uuid), habit.change_token(uuid) TO \(anonMember);
                CREATE ROLE \(adminMember) NOLOGIN;
                GRANT habit_admin TO \(adminMember);
                CREATE ROLE \(bypass) NOLOGIN BYPASSRLS;
                GRANT authenticated TO \(bypass);
                """)
            defer {
                for name in [member, anonMember, adminMember, bypass] {
                    _ = try? admin.executeScript(unsafeSQL: "DROP OWNED BY \(name); DROP ROLE \(name);")
                }
            }
            let intruder = UUID(), victim = UUID(), blank = UUID()
            try admin.execute("INSERT INTO public.habit_templates (user_id, name) VALUES (\(victim), 'Run')")

            // Another user's: refused with 42501, by every function, for each role held to auth.uid().
            for name in ["authenticated", member] {
                for statement in Self.calls(for: victim) {
                    let refusal = Self.refusal(of: statement, prelude: [Self.role(name), Self.claims(intruder)], on: admin)
                    #expect(refusal?.sqlState == .insufficientPrivilege, "\(name): \(statement.sql): \(String(describing: refusal))")
                }
            }
            for statement: Query in ["SELECT habit.lock_user_writes(\(blank))::text", "SELECT habit.change_token(\(blank))::text"] {
                let refusal = Self.refusal(of: statement, prelude: [Self.role(anonMember), Self.claims(intruder)], on: admin)
                #expect(refusal?.sqlState == .insufficientPrivilege, "\(anonMember): \(statement.sql): \(String(describing: refusal))")
            }
            // Nothing of theirs was written: no replay record, no clock made, the habit kept.
            let left = try admin.queryOne("""
                SELECT (SELECT count(*) FROM habit.sync_mutations WHERE user_id IN (\(victim), \(blank)))::text
                       || ' ' || (SELECT count(*) FROM habit.sync_clocks WHERE user_id = \(blank))
                       || ' ' || (SELECT count(*) FROM public.habit_templates WHERE user_id = \(victim))
                """).decode(String.self, at: 0)
            #expect(left == "0 0 1")

            // Its own: the same rule lets every function act for auth.uid(), whichever role holds the claims.
            try admin.withTransaction(prelude: [Self.role(member), Self.claims(intruder)]) { connection in
                for statement in Self.calls(for: intruder) { _ = try connection.query(statement) }
            }

            // The roles acting for users act for anyone, whoever's claims they carry (a BYPASSRLS
            // role even when it also inherits authenticated: it reads and writes every user's rows anyway).
            for (name, statements) in [("service_role", Self.calls(for: victim)),
                                       (bypass, Array(Self.calls(for: victim).prefix(2))),
                                       (adminMember, Array(Self.calls(for: victim).suffix(2)))] {
                try admin.withTransaction(prelude: [Self.role(name), Self.claims(intruder)]) { connection in
                    for statement in statements { _ = try connection.query(statement) }
                }
            }
            // The owner (the migrator; a superuser here), with no role set.
            try admin.withTransaction { connection in
                for statement in Self.calls(for: blank) { _ = try connection.query(statement) }
            }
            #expect(try admin.queryOne("SELECT count(*) FROM public.habit_templates WHERE user_id = \(victim)").decode(Int.self, at: 0) == 0)
        }
    }
}
