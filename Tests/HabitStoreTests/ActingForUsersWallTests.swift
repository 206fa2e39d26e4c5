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

/// The BEFORE row triggers of the user tables step aside when a user's request writes another
/// user's row, so that row-level security refuses it (42501) before any rule runs: the rules
/// (habit.check_day: the habit's lock, HB003–HB005; the change number: the clock's lock) would
/// otherwise tell the writer whether the other user's habit exists and which of its days are
/// active, done or in its future, and make it wait for that user's writes (and them for it). A
/// role that only inherits `authenticated` is such a request too (the rule of
/// `habit.check_acting_for`): the triggers used to step aside only for a role named
/// `authenticated`, so such a role got HB003/HB004/HB005 for the other user's habit where a
/// missing habit gave 42501, and waited for that user's locks. The roles acting for users (RLS
/// lets them write the row) still get the rules.
@Suite struct OtherUsersRowsWallTests {
    static func prelude(_ role: String, _ user: UUID) -> [Query] {
        // A hang guard only: a write that waits for the victim's held locks is the failure.
        [ActingForUsersWallTests.role(role), ActingForUsersWallTests.claims(user), "SET LOCAL lock_timeout = '2s'"]
    }

    @Test("a role inheriting authenticated writing another user's rows gets row-level security's 42501 before any rule or lock, as authenticated does; the roles acting for users get the rules")
    func anotherUsersRowsAreRefusedBeforeTheirRules() throws {
        try TestDatabase.with { database throws in
            let admin = try database.connect(), writer = try database.connect(), holder = try database.connect()
            defer { admin.close(); writer.close(); holder.close() }
            let suffix = UUID().uuidString.lowercased().prefix(8)
            let member = "habit_test_member_\(suffix)", bypass = "habit_test_bypass_\(suffix)"
            try admin.executeScript(unsafeSQL: """
                CREATE ROLE \(member) NOLOGIN;
                GRANT authenticated TO \(member);
                CREATE ROLE \(bypass) NOLOGIN BYPASSRLS;
                GRANT authenticated TO \(bypass);
                """)
            defer {
                for name in [member, bypass] {
                    _ = try? admin.executeScript(unsafeSQL: "DROP OWNED BY \(name); DROP ROLE \(name);")
                }
            }
            let intruder = UUID(), victim = UUID(), missing = UUID()
            let own = UUID(), ownList = UUID(), habit = UUID()
            // The victim's habit, active from ten days ago (daily), done two days ago; the
            // intruder's own rows, to move to the victim.
            try admin.execute("""
                INSERT INTO public.habit_templates (id, user_id, name, activated_at)
                VALUES (\(habit), \(victim), 'Run', current_date - 10), (\(own), \(intruder), 'Mine', current_date - 100)
                """)
            try admin.execute("INSERT INTO public.habit_completions (user_id, template_id, completed_date) VALUES (\(victim), \(habit), current_date - 2), (\(intruder), \(own), current_date - 3)")
            try admin.execute("INSERT INTO public.habit_skips (user_id, template_id, skipped_date) VALUES (\(intruder), \(own), current_date - 4)")
            try admin.execute("INSERT INTO public.task_lists (id, user_id, name) VALUES (\(ownList), \(intruder), 'Mine')")
            try admin.execute("INSERT INTO public.tasks (user_id, title, position) VALUES (\(intruder), 'Mine', 1)")
            try admin.execute("INSERT INTO public.profiles (user_id) VALUES (\(intruder))")
            let before = try admin.queryOne("SELECT seq FROM habit.sync_clocks WHERE user_id = \(victim)").decode(Int64.self, at: 0)

            // Each names the victim's habit on a day a rule refuses, or a habit that does not
            // exist, or a day the rules allow; or writes a row of the victim's that only its
            // change number (the clock's lock) would touch.
            let h = "'\(habit.uuidString.lowercased())'", m = "'\(missing.uuidString.lowercased())'"
            let v = "'\(victim.uuidString.lowercased())'", o = "'\(own.uuidString.lowercased())'"
            let writes: [String] = [
                "INSERT INTO public.habit_completions (user_id, template_id, completed_date) VALUES (\(v), \(h), current_date - 20)", // before activation: HB004
                "INSERT INTO public.habit_completions (user_id, template_id, completed_date) VALUES (\(v), \(h), current_date + 5)",  // future: HB003
                "INSERT INTO public.habit_completions (user_id, template_id, completed_date) VALUES (\(v), \(h), current_date - 5)",  // allowed
                "INSERT INTO public.habit_completions (user_id, template_id, completed_date) VALUES (\(v), \(m), current_date - 5)",  // no such habit
                "INSERT INTO public.habit_skips (user_id, template_id, skipped_date) VALUES (\(v), \(h), current_date - 2)",          // done: HB005
                "INSERT INTO public.habit_skips (user_id, template_id, skipped_date) VALUES (\(v), \(h), current_date + 400)",        // future: HB003
                "INSERT INTO public.habit_skips (user_id, template_id, skipped_date) VALUES (\(v), \(m), current_date - 5)",
                "UPDATE public.habit_completions SET user_id = \(v), template_id = \(h), completed_date = current_date - 20 WHERE template_id = \(o)",
                "UPDATE public.habit_completions SET user_id = \(v), template_id = \(h), completed_date = current_date + 5 WHERE template_id = \(o)",
                "UPDATE public.habit_skips SET user_id = \(v), template_id = \(h), skipped_date = current_date - 2 WHERE template_id = \(o)",
                "INSERT INTO public.habit_templates (user_id, name, activated_at) VALUES (\(v), 'x', '1960-01-01')",                   // range: 23514
                "INSERT INTO public.habit_templates (user_id, name) VALUES (\(v), 'x')",
                "UPDATE public.habit_templates SET user_id = \(v) WHERE id = \(o)",
                "INSERT INTO public.task_lists (user_id, name) VALUES (\(v), 'x')",
                "UPDATE public.task_lists SET user_id = \(v) WHERE id = '\(ownList.uuidString.lowercased())'",
                "INSERT INTO public.tasks (user_id, title, position) VALUES (\(v), 'x', 1)",
                "UPDATE public.tasks SET user_id = \(v) WHERE user_id <> \(v)",
                "INSERT INTO public.profiles (user_id) VALUES (\(v))",
                "UPDATE public.profiles SET user_id = \(v) WHERE user_id <> \(v)",
            ]
            // Twice: as they are, then while the victim's own write holds its habit and clock.
            for holding in [false, true] {
                if holding {
                    try holder.execute("BEGIN")
                    _ = try holder.query("SELECT 1 FROM public.habit_templates WHERE id = \(habit) FOR NO KEY UPDATE")
                    _ = try holder.query("SELECT 1 FROM habit.sync_clocks WHERE user_id = \(victim) FOR UPDATE")
                }
                defer { if holding { _ = try? holder.execute("ROLLBACK") } }
                for role in ["authenticated", member] {
                    for write in writes {
                        let refusal = ActingForUsersWallTests.refusal(of: Query(unsafeSQL: write), prelude: Self.prelude(role, intruder), on: writer)
                        #expect(refusal?.sqlState == .insufficientPrivilege, "\(role)\(holding ? ", the victim's locks held" : ""): \(write): \(String(describing: refusal))")
                    }
                    // Deleting the victim's rows: row-level security shows none, so none is deleted.
                    for table in ["habit_completions", "habit_skips", "habit_templates"] {
                        let deleted = try writer.withTransaction(prelude: Self.prelude(role, intruder)) {
                            try $0.execute(Query(unsafeSQL: "DELETE FROM public.\(table) WHERE user_id = \(v)"))
                        }
                        #expect(deleted == 0, "\(role): \(table)")
                    }
                }
            }
            #expect(try admin.queryOne("SELECT seq FROM habit.sync_clocks WHERE user_id = \(victim)").decode(Int64.self, at: 0) == before)

            // The roles acting for users, whoever's claims they carry, write the victim's rows
            // with their rules (skipping them would write rows without their bookkeeping).
            for role in ["service_role", bypass] {
                for (write, expected): (String, SQLState) in [
                    ("INSERT INTO public.habit_completions (user_id, template_id, completed_date) VALUES (\(v), \(h), current_date + 5)", "HB003"),
                    ("INSERT INTO public.habit_skips (user_id, template_id, skipped_date) VALUES (\(v), \(h), current_date - 2)", "HB005"),
                ] {
                    let refusal = ActingForUsersWallTests.refusal(of: Query(unsafeSQL: write), prelude: Self.prelude(role, intruder), on: writer)
                    #expect(refusal?.sqlState == expected, "\(role): \(write): \(String(describing: refusal))")
                }
            }
            try writer.withTransaction(prelude: Self.prelude("service_role", intruder)) {
                try $0.execute("INSERT INTO public.habit_completions (user_id, template_id, completed_date) VALUES (\(victim), \(habit), current_date - 5)")
            }
            #expect(try admin.queryOne("""
                SELECT change_seq FROM public.habit_completions WHERE user_id = \(victim) AND completed_date = current_date - 5
                """).decode(Int64.self, at: 0) == before + 1)
        }
    }
}
