import Foundation
import PostgresClient
import TestSupport
import Testing

/// `transaction(prelude:statement:)` and `transactions(_:)` send no BEGIN or COMMIT: what comes
/// before a Sync is one implicit transaction, committed at the Sync or rolled back as a whole.
/// These tests hold the server to that, rather than the documentation.
@Suite struct ImplicitTransactionTests {
    /// The user's settings exactly as `UserScope` sends them: one statement.
    static func scope(_ user: String, timeoutMilliseconds: Int = 1_234) -> [Query] {
        let claims = #"{"sub":"\#(user)","role":"authenticated"}"#
        return ["""
            SELECT set_config('role', 'authenticated', true), set_config('request.jwt.claims', \(claims), true),
                   set_config('request.jwt.claim.sub', \(user), true), set_config('request.jwt.claim.role', 'authenticated', true),
                   set_config('statement_timeout', \(String(timeoutMilliseconds)), true)
            """]
    }

    static let seen: Query = """
        SELECT current_user::text, coalesce(current_setting('request.jwt.claims', true), ''),
               coalesce(current_setting('request.jwt.claim.sub', true), ''), current_setting('statement_timeout')
        """

    static func values(_ row: Row) throws -> [String] {
        try (0..<4).map { try row.decode(String.self, at: $0) }
    }

    @Test("role and claims set in the prelude are the statement's, and gone after its Sync")
    func scopeLastsUntilTheSync() throws {
        try TestDatabase.with { database in
            // The worker's own login role: a NOINHERIT member of `authenticated`.
            let connection = try Connection(try database.url(overriding: ["user": "habit_worker"]))
            defer { connection.close() }
            let session = try Self.values(try connection.queryOne(Self.seen))
            #expect(session[0] == "habit_worker" && session[1] != #"{"sub":"u-1","role":"authenticated"}"#)

            let inside = try connection.transaction(prelude: Self.scope("u-1"), statement: Self.seen)
            #expect(try Self.values(inside.rows[0]) == ["authenticated", #"{"sub":"u-1","role":"authenticated"}"#, "u-1", "1234ms"])
            #expect(connection.transactionStatus == .idle)
            #expect(try Self.values(try connection.queryOne(Self.seen)) == session)

            // Each transaction of a shared round trip sees its own user, and none survives.
            let several = try connection.transactions([
                (prelude: Self.scope("u-2"), statement: Self.seen),
                (prelude: Self.scope("u-3", timeoutMilliseconds: 2_000), statement: Self.seen),
                (prelude: [], statement: Self.seen),
            ])
            #expect(try several.map { try Self.values($0.get().rows[0]) } == [
                ["authenticated", #"{"sub":"u-2","role":"authenticated"}"#, "u-2", "1234ms"],
                ["authenticated", #"{"sub":"u-3","role":"authenticated"}"#, "u-3", "2s"],
                session,
            ])
            #expect(try Self.values(try connection.queryOne(Self.seen)) == session)

            // A statement that fails leaves nothing of the scope behind either.
            let failure = try #require(throws: PostgresError.self) {
                try connection.transaction(prelude: Self.scope("u-4"), statement: "SELECT 1 / \(0)")
            }
            #expect(failure.sqlState == .divisionByZero)
            #expect(connection.transactionStatus == .idle && connection.isHealthy)
            #expect(try Self.values(try connection.queryOne(Self.seen)) == session)
        }
    }

    @Test("a statement that inserts and then fails leaves nothing, and the connection idle")
    func failureRollsBackEverythingBeforeTheSync() throws {
        let connection = try TestDatabase.adminConnection()
        defer { connection.close() }
        try connection.executeScript(unsafeSQL: "CREATE TEMPORARY TABLE items (name text PRIMARY KEY)")
        func names() throws -> [String] {
            try connection.query("SELECT name FROM items ORDER BY name").map { try $0.decode(String.self, at: 0) }
        }
        // The prelude's insert and the statement's own insert both go.
        let failure = try #require(throws: PostgresError.self) {
            try connection.transaction(
                prelude: ["INSERT INTO items VALUES (\("from the prelude"))"],
                statement: "WITH added AS (INSERT INTO items VALUES (\("from the statement")) RETURNING 1) SELECT 1 / (count(*) - 1) FROM added"
            )
        }
        #expect(failure.sqlState == .divisionByZero)
        #expect(try names().isEmpty)
        #expect(connection.transactionStatus == .idle && connection.isHealthy)

        // A failure at the Sync itself (a deferred constraint is checked at commit) fails the
        // transaction too, and rolls it back.
        try connection.executeScript(unsafeSQL: """
            CREATE TEMPORARY TABLE deferred (n int CONSTRAINT deferred_n_key UNIQUE DEFERRABLE INITIALLY DEFERRED)
            """)
        let atCommit = try #require(throws: PostgresError.self) {
            try connection.transaction(prelude: ["INSERT INTO items VALUES (\("kept?"))"], statement: "INSERT INTO deferred VALUES (1), (1)")
        }
        #expect(atCommit.sqlState == .uniqueViolation && atCommit.constraint == "deferred_n_key", "\(atCommit)")
        #expect(try names().isEmpty)
        #expect(connection.transactionStatus == .idle && connection.isHealthy)
        let mixed = try connection.transactions([
            (prelude: [], statement: "INSERT INTO deferred VALUES (2)"),
            (prelude: [], statement: "INSERT INTO deferred VALUES (3), (3)"),
            (prelude: [], statement: "INSERT INTO deferred VALUES (4)"),
        ])
        #expect(try mixed[0].get().affectedRows == 1)
        #expect(try mixed[2].get().affectedRows == 1)
        guard case .failure(let duplicate) = mixed[1] else { Issue.record("the deferred duplicate committed"); return }
        #expect(duplicate.sqlState == .uniqueViolation)
        #expect(try connection.query("SELECT n FROM deferred ORDER BY n").map { try $0.decode(Int.self, at: 0) } == [2, 4])
        #expect(connection.transactionStatus == .idle && connection.isHealthy)
    }

    @Test("a one-statement transaction may not leave a transaction block open")
    func openedTransactionBlockIsMisuse() throws {
        let connection = try TestDatabase.adminConnection()
        defer { connection.close() }
        let error = try #require(throws: PostgresError.self) { try connection.transaction(statement: "BEGIN") }
        #expect(error.kind == .misuse)
        #expect(connection.transactionStatus == .idle)
        // Also when the statement after it fails, leaving the block aborted.
        let aborted = try #require(throws: PostgresError.self) {
            try connection.transaction(prelude: ["BEGIN"], statement: "SELECT 1 / \(0)")
        }
        #expect(aborted.kind == .misuse)
        #expect(connection.transactionStatus == .idle)
        let again = try connection.transactions([(prelude: [], statement: "SELECT 1"), (prelude: [], statement: "BEGIN")])
        #expect(again.allSatisfy { if case .failure(let error) = $0 { error.kind == .misuse } else { false } })
        #expect(connection.transactionStatus == .idle)
        #expect(try connection.queryOne("SELECT 2").decode(Int.self, at: 0) == 2)
    }

    /// A statement new to the session is prepared in the first transaction of a round trip that
    /// uses it. If that transaction fails before the statement's Parse (here in its prelude),
    /// the Parse is skipped with the rest; the later transactions using the statement must not
    /// depend on it.
    @Test("a transaction whose prepare was skipped does not fail the next ones of its round trip",
          arguments: [PreparedStatementMode.on, .auto])
    func skippedPrepareStaysWithItsTransaction(mode: PreparedStatementMode) throws {
        let connection = try Connection(TestDatabase.serverURL, preparedStatements: mode)
        defer { connection.close() }
        var fallbacks = 0
        connection.onPreparedStatementsDisabled = { _ in fallbacks += 1 }
        let statement: Query = "SELECT \(41) + 1"
        let results = try connection.transactions([
            (prelude: ["SELECT 1 / \(0)"], statement: statement),
            (prelude: [], statement: statement),
            (prelude: [], statement: statement),
        ])
        guard case .failure(let error) = results[0] else { Issue.record("division by zero succeeded"); return }
        #expect(error.sqlState == .divisionByZero)
        #expect(try results.dropFirst().map { try $0.get().rows[0].decode(Int.self, at: 0) } == [42, 42])
        #expect(fallbacks == 0 && connection.usesPreparedStatements)
        // Prepared on its next use, once.
        for _ in 0..<2 { #expect(try connection.transaction(statement: statement).rows[0].decode(Int.self, at: 0) == 42) }
        #expect(try connection.queryOne("SELECT count(*) FROM pg_prepared_statements WHERE statement = \(statement.sql)").decode(Int.self, at: 0) == 1)
    }
}
