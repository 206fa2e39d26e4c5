import Foundation
import PostgresClient
import TestSupport
import Testing

@Suite struct ConnectionTests {
    let connection: Connection

    init() throws {
        connection = try TestDatabase.adminConnection()
        // Temporary tables: this test's own data, gone with its session.
        try connection.executeScript(unsafeSQL: """
            CREATE TEMPORARY TABLE items (
                id serial PRIMARY KEY,
                name text NOT NULL CONSTRAINT items_name_key UNIQUE,
                quantity int NOT NULL DEFAULT 0 CONSTRAINT items_quantity_check CHECK (quantity >= 0)
            );
            """)
    }

    /// A wait strategy decides how the thread waits while a pipeline waits for the server (and
    /// may notice input elsewhere meanwhile); before a wait inside libpq it is told, and outside
    /// `waiting(with:)` libpq waits alone.
    @Test func waitStrategyWaitsForPipelinesAndHearsOfLibpqWaits() throws {
        var pipeEnds: [Int32] = [0, 0]
        #expect(pipe(&pipeEnds) == 0)
        defer { close(pipeEnds[0]); close(pipeEnds[1]) }
        let strategy = PipeWatchingWait(watching: pipeEnds[0])
        // A one-round-trip transaction waits the strategy's way, and nothing blocks in libpq.
        let one = try connection.waiting(with: strategy) {
            try connection.transaction(statement: "SELECT pg_sleep(0.05), 1").rows[0].decode(Int.self, at: 1)
        }
        #expect(one == 1 && strategy.socketWaits >= 1 && strategy.inputSeen == 0 && strategy.libpqBlocks == 0)
        // Input elsewhere is noticed during the wait, and the statements still complete.
        #expect(write(pipeEnds[1], "x", 1) == 1)
        let five = try connection.waiting(with: strategy) {
            let first = try connection.transaction(statement: "SELECT pg_sleep(0.05), 2").rows[0].decode(Int.self, at: 1)
            let second = try connection.transactions([(prelude: [], statement: "SELECT 3")])[0].get().rows[0].decode(Int.self, at: 0)
            return first + second
        }
        #expect(five == 5 && strategy.inputSeen == 1 && strategy.libpqBlocks == 0)
        // A synchronous call (a prepared statement outside a pipeline, a script) blocks in libpq:
        // the strategy hears of it first.
        _ = try connection.queryOne("SELECT 4") // prepared now; the next run is PQexecPrepared
        let waitsBefore = strategy.socketWaits
        let four = try connection.waiting(with: strategy) {
            let four = try connection.queryOne("SELECT 4").decode(Int.self, at: 0)
            try connection.executeScript(unsafeSQL: "SELECT 1")
            return four
        }
        #expect(four == 4 && strategy.libpqBlocks == 2 && strategy.socketWaits == waitsBefore)
        // Outside `waiting(with:)` the strategy takes no part.
        _ = try connection.transaction(statement: "SELECT pg_sleep(0.05), 5")
        _ = try connection.queryOne("SELECT 4")
        #expect(strategy.socketWaits == waitsBefore && strategy.libpqBlocks == 2)
    }

    /// Several transactions in one round trip: each sees only its own transaction-local
    /// settings, a failing one is reported alone and rolled back at its own Sync, and the ones
    /// after it run in the same round trip as if it had not been there. Nothing stays set.
    @Test func transactionsShareARoundTripButNothingElse() throws {
        func claims(_ value: String) -> [Query] { ["SELECT set_config('test.owner', \(value), true)"] }
        let results = try connection.transactions([
            (prelude: claims("a"), statement: "SELECT current_setting('test.owner'), 1"),
            (prelude: claims("b"), statement: "INSERT INTO items (name) VALUES (\("first")) RETURNING current_setting('test.owner')"),
            (prelude: claims("c"), statement: "SELECT current_setting('test.owner'), 1 / \(0)"),
            (prelude: claims("d"), statement: "INSERT INTO items (name) VALUES (\("second")) RETURNING current_setting('test.owner')"),
            (prelude: claims("e"), statement: "SELECT current_setting('test.owner')"),
        ])
        #expect(results.count == 5)
        #expect(try results[0].get().rows[0].decode(String.self, at: 0) == "a")
        #expect(try results[1].get().rows[0].decode(String.self, at: 0) == "b")
        guard case .failure(let error) = results[2] else { Issue.record("division by zero succeeded"); return }
        #expect(error.sqlState == .divisionByZero)
        #expect(try results[3].get().rows[0].decode(String.self, at: 0) == "d")
        #expect(try results[3].get().affectedRows == 1)
        #expect(try results[4].get().rows[0].decode(String.self, at: 0) == "e")
        // Both inserts committed exactly once; the session is idle with nothing left set.
        #expect(try connection.query("SELECT name FROM items ORDER BY name").map { try $0.decode(String.self, at: 0) } == ["first", "second"])
        #expect(connection.transactionStatus == .idle && connection.isHealthy)
        #expect(try connection.queryOne("SELECT coalesce(current_setting('test.owner', true), '')").decode(String.self, at: 0) == "")
        // A conflict inside one (unique key) is its own failure too.
        let again = try connection.transactions([
            (prelude: claims("f"), statement: "INSERT INTO items (name) VALUES (\("first")) RETURNING id"),
            (prelude: claims("g"), statement: "INSERT INTO items (name) VALUES (\("third")) RETURNING id"),
        ])
        guard case .failure(let duplicate) = again[0] else { Issue.record("duplicate insert succeeded"); return }
        #expect(duplicate.constraint == "items_name_key")
        #expect(try again[1].get().affectedRows == 1)
    }

    @Test func executeReturnsAffectedRows() throws {
        #expect(try connection.execute("INSERT INTO items (name) VALUES (\("a")), (\("b")), (\("c"))") == 3)
        #expect(try connection.execute("UPDATE items SET quantity = quantity + 1 WHERE name <> \("a")") == 2)
        #expect(try connection.execute("DELETE FROM items WHERE name = \("zzz")") == 0)
        #expect(try connection.query("SELECT name FROM items ORDER BY name").map { try $0.decode(String.self, at: 0) } == ["a", "b", "c"])
    }

    @Test func queryOneAndOptionalCountRows() throws {
        try connection.execute("INSERT INTO items (name) VALUES ('a'), ('b')")
        #expect(try connection.queryOptional("SELECT 1 FROM items WHERE name = 'none'") == nil)
        #expect(try connection.queryOptional("SELECT quantity FROM items WHERE name = 'a'")?.decode(Int.self, at: 0) == 0)
        let none = try #require(throws: PostgresError.self) { try connection.queryOne("SELECT 1 FROM items WHERE false") }
        #expect(none.kind == .unexpectedRowCount)
        let many = try #require(throws: PostgresError.self) { try connection.queryOne("SELECT 1 FROM items") }
        #expect(many.kind == .unexpectedRowCount)
        #expect(throws: PostgresError.self) { try connection.queryOptional("SELECT 1 FROM items") }
    }

    @Test func uniqueViolationKeepsSQLStateAndConstraint() throws {
        let secret = "value-that-must-not-be-logged"
        try connection.execute("INSERT INTO items (name) VALUES (\(secret))")
        let error = try #require(throws: PostgresError.self) {
            try connection.execute("INSERT INTO items (name) VALUES (\(secret))")
        }
        #expect(error.kind == .server)
        #expect(error.sqlState == .uniqueViolation)
        #expect(error.sqlState?.isInClass("23") == true)
        #expect(error.constraint == "items_name_key")
        #expect(error.table == "items")
        #expect(error.detail?.contains(secret) == true) // the server's detail quotes the value…
        #expect(!error.description.contains(secret))    // …which description never prints
        #expect(!error.isConnectionLost)
        // The connection stays usable after a statement error.
        #expect(try connection.queryOne("SELECT count(*) FROM items").decode(Int.self, at: 0) == 1)
    }

    @Test func dataExceptionDescriptionWithholdsInput() throws {
        let secret = "not-a-number-secret"
        let error = try #require(throws: PostgresError.self) { try connection.query("SELECT \(secret)::int") }
        #expect(error.sqlState == .invalidTextRepresentation)
        #expect(error.message.contains(secret))
        #expect(!error.description.contains(secret))
    }

    @Test func checkViolationAndSyntaxError() throws {
        let check = try #require(throws: PostgresError.self) {
            try connection.execute("INSERT INTO items (name, quantity) VALUES ('x', \(-1))")
        }
        #expect(check.sqlState == .checkViolation)
        #expect(check.constraint == "items_quantity_check")
        let syntax = try #require(throws: PostgresError.self) { try connection.query("SELEC 1") }
        #expect(syntax.sqlState == "42601")
        #expect(syntax.sql == "SELEC 1")
    }

    @Test func injectionThroughParametersStaysData() throws {
        let attacks = [
            "'; DROP TABLE items; --",
            "a' OR '1'='1",
            "$1",
            "\\'; SELECT pg_sleep(10); --",
            "Robert'); DELETE FROM items WHERE ('1'='1",
        ]
        for attack in attacks {
            try connection.execute("INSERT INTO items (name) VALUES (\(attack))")
        }
        let stored = try connection.query("SELECT name FROM items ORDER BY id").map { try $0.decode(String.self, at: 0) }
        #expect(stored == attacks)
        #expect(try connection.queryOne("SELECT count(*) FROM items WHERE name = \("a' OR '1'='1")").decode(Int.self, at: 0) == 1)
        #expect(try connection.queryOne("SELECT count(*) FROM items WHERE name = \("nothing' OR '1'='1")").decode(Int.self, at: 0) == 0)
    }

    @Test func interpolationProducesPlaceholders() {
        let name = "x"
        let query: Query = "SELECT * FROM t WHERE a = \(name) AND b = \(42) AND c IS \(Int?.none) ORDER BY \(unsafeSQL: "a")"
        #expect(query.sql == "SELECT * FROM t WHERE a = $1 AND b = $2 AND c IS $3 ORDER BY a")
        #expect(query.bindings.count == 3)
        #expect(query.description == query.sql)
    }

    @Test func transactionCommitsOnReturn() throws {
        let count: Int = try connection.withTransaction { transaction throws in
            try transaction.execute("INSERT INTO items (name) VALUES ('kept')")
            return try transaction.queryOne("SELECT count(*) FROM items").decode(Int.self, at: 0)
        }
        #expect(count == 1)
        #expect(connection.transactionStatus == .idle)
        #expect(try connection.queryOne("SELECT count(*) FROM items WHERE name = 'kept'").decode(Int.self, at: 0) == 1)
    }

    struct Abort: Error {}

    @Test func transactionRollsBackOnThrow() throws {
        #expect(throws: Abort.self) {
            try connection.withTransaction { transaction throws in
                try transaction.execute("INSERT INTO items (name) VALUES ('gone1'), ('gone2')")
                throw Abort()
            }
        }
        #expect(connection.transactionStatus == .idle)
        #expect(try connection.queryOne("SELECT count(*) FROM items").decode(Int.self, at: 0) == 0)
        // A failing statement rolls back the earlier ones too.
        try connection.execute("INSERT INTO items (name) VALUES ('dup')")
        #expect(throws: PostgresError.self) {
            try connection.withTransaction { transaction throws in
                try transaction.execute("INSERT INTO items (name) VALUES ('first')")
                try transaction.execute("INSERT INTO items (name) VALUES ('dup')")
            }
        }
        #expect(try connection.queryOne("SELECT count(*) FROM items").decode(Int.self, at: 0) == 1)
    }

    @Test func swallowedErrorStillRollsBack() throws {
        #expect(throws: PostgresError.self) {
            try connection.withTransaction { transaction throws in
                try transaction.execute("INSERT INTO items (name) VALUES ('half')")
                _ = try? transaction.execute("INSERT INTO items (name, quantity) VALUES ('bad', -5)")
            }
        }
        #expect(try connection.queryOne("SELECT count(*) FROM items").decode(Int.self, at: 0) == 0)
        #expect(connection.transactionStatus == .idle)
    }

    @Test func preludeIsLocalToTheTransaction() throws {
        let inside: String = try connection.withTransaction(prelude: [
            "SET LOCAL statement_timeout = '1234ms'",
            "SELECT set_config('request.jwt.claims', \("{\"sub\":\"x\"}"), true)",
        ]) { transaction throws in
            let row = try transaction.queryOne("SELECT current_setting('statement_timeout'), current_setting('request.jwt.claims')")
            #expect(try row.decode(String.self, at: 1) == "{\"sub\":\"x\"}")
            return try row.decode(String.self, at: 0)
        }
        #expect(inside == "1234ms")
        let after = try connection.queryOne("SELECT current_setting('statement_timeout'), coalesce(current_setting('request.jwt.claims', true), '')")
        #expect(try after.decode(String.self, at: 0) == "0")
        #expect(try after.decode(String.self, at: 1) == "")
        // A failing prelude statement fails the transaction and leaves the connection idle.
        #expect(throws: PostgresError.self) {
            try connection.withTransaction(prelude: ["SET LOCAL ROLE no_such_role_here"]) { transaction throws in
                try transaction.execute("INSERT INTO items (name) VALUES ('never')")
            }
        }
        #expect(connection.transactionStatus == .idle)
        #expect(try connection.queryOne("SELECT count(*) FROM items").decode(Int.self, at: 0) == 0)
    }

    @Test func singleStatementTransactionCommitsOrRollsBack() throws {
        let inserted = try connection.transaction(
            prelude: ["SELECT set_config('request.jwt.claims', \("{}"), true)"],
            statement: "INSERT INTO items (name) VALUES ('one'), ('two') RETURNING name, current_setting('request.jwt.claims')"
        )
        #expect(inserted.affectedRows == 2)
        #expect(try inserted.rows.map { try $0.decode(String.self, at: 1) } == ["{}", "{}"])
        #expect(connection.transactionStatus == .idle)
        #expect(try connection.queryOne("SELECT coalesce(current_setting('request.jwt.claims', true), '')").decode(String.self, at: 0) == "")
        let failure = try #require(throws: PostgresError.self) {
            try connection.transaction(statement: "INSERT INTO items (name) VALUES ('three'), ('one')")
        }
        #expect(failure.sqlState == .uniqueViolation)
        #expect(connection.transactionStatus == .idle)
        #expect(try connection.queryOne("SELECT count(*) FROM items").decode(Int.self, at: 0) == 2)
        // A failing prelude statement: nothing runs, the connection is idle again.
        #expect(throws: PostgresError.self) {
            try connection.transaction(prelude: ["SET LOCAL ROLE no_such_role_here"], statement: "INSERT INTO items (name) VALUES ('four')")
        }
        #expect(try connection.queryOne("SELECT count(*) FROM items").decode(Int.self, at: 0) == 2)
    }

    @Test func streamDeliversEveryRowAndCanStopEarly() throws {
        var seen = 0
        var sum = 0
        try connection.stream("SELECT g FROM generate_series(1, \(10_000)) AS g") { row in
            seen += 1
            sum += try row.decode(Int.self, at: 0)
        }
        #expect(seen == 10_000)
        #expect(sum == 50_005_000)
        struct Stop: Error {}
        var partial = 0
        #expect(throws: Stop.self) {
            try connection.stream("SELECT generate_series(1, 10000000)") { _ in
                partial += 1
                if partial == 5 { throw Stop() }
            }
        }
        #expect(partial == 5)
        #expect(try connection.queryOne("SELECT 42").decode(Int.self, at: 0) == 42)
        let failure = try #require(throws: PostgresError.self) {
            try connection.stream("SELECT 1 / (g - 3) FROM generate_series(1, 5) AS g") { _ in }
        }
        #expect(failure.sqlState == "22012")
    }

    @Test func copyOutStreamsServerFormattedRows() throws {
        var output: [UInt8] = []
        let bytes = try connection.copyOut("COPY (SELECT g, 'r' || g FROM generate_series(1, 3) AS g) TO STDOUT WITH (FORMAT csv)") {
            output.append(contentsOf: $0)
        }
        #expect(String(decoding: output, as: UTF8.self) == "1,r1\n2,r2\n3,r3\n")
        #expect(bytes == output.count)
        #expect(throws: PostgresError.self) { try connection.copyOut("SELECT 1") { _ in } }
        #expect(throws: PostgresError.self) { try connection.query("COPY (SELECT 1) TO STDOUT") }
        #expect(try connection.queryOne("SELECT 7").decode(Int.self, at: 0) == 7)
    }

    @Test func closedConnectionThrows() throws {
        let other = try TestDatabase.adminConnection()
        other.close()
        other.close() // idempotent
        #expect(other.isClosed)
        let error = try #require(throws: PostgresError.self) { try other.query("SELECT 1") }
        #expect(error.kind == .connectionClosed)
        #expect(throws: PostgresError.self) { try other.reset() }
    }

    @Test func connectFailureIsClear() throws {
        let error = try #require(throws: PostgresError.self) {
            try Connection("host=/nonexistent/socket/dir dbname=x connect_timeout=2")
        }
        #expect(error.kind == .connectionFailed)
        #expect(error.message.contains("could not connect"))
        let bad = try #require(throws: PostgresError.self) { try Connection("this is = = not a conninfo") }
        #expect(bad.kind == .connectionFailed)
    }

    @Test func terminatedBackendIsDetectedAndResetRecovers() throws {
        let victim = try TestDatabase.adminConnection()
        let pid = victim.backendPID
        #expect(try connection.queryOne("SELECT pg_terminate_backend(\(pid))").decode(Bool.self, at: 0))
        let error = try #require(throws: PostgresError.self) { try victim.query("SELECT 1") }
        #expect(error.isConnectionLost)
        #expect(!victim.isHealthy)
        try victim.reset()
        #expect(victim.isHealthy)
        #expect(victim.backendPID != pid)
        #expect(try victim.queryOne("SELECT 1").decode(Int.self, at: 0) == 1)
        // Inside a pipelined transaction the loss surfaces the same way.
        let second = victim.backendPID
        _ = try connection.queryOne("SELECT pg_terminate_backend(\(second))")
        let inTransaction = try #require(throws: PostgresError.self) {
            try victim.withTransaction(prelude: ["SET LOCAL statement_timeout = '5s'"]) { transaction throws in
                try transaction.query("SELECT 1")
            }
        }
        #expect(inTransaction.isConnectionLost)
        try victim.reset()
        #expect(try victim.queryOne("SELECT 2").decode(Int.self, at: 0) == 2)
    }

    @Test("a session ended by idle_in_transaction_session_timeout (FATAL 25P03) is a lost connection")
    func idleInTransactionTimeoutIsConnectionLost() throws {
        let victim = try TestDatabase.adminConnection()
        defer { victim.close() }
        try victim.execute("SET idle_in_transaction_session_timeout = '100ms'")
        let error = try #require(throws: PostgresError.self) {
            try victim.withTransaction { transaction throws in
                try transaction.query("SELECT 1")
                usleep(400_000) // idle in the transaction: the server ends the session
                try transaction.query("SELECT 2")
            }
        }
        #expect(error.isConnectionLost, "\(error) severity \(error.severity ?? "-")")
        #expect(!victim.isHealthy)
        try victim.reset()
        #expect(try victim.queryOne("SELECT 3").decode(Int.self, at: 0) == 3)
    }

    @Test func connectionStringOverrides() throws {
        let rewritten = try ConnectionString.applying(["dbname": "other db", "application_name": "it's"], to: "postgresql://u@/postgres?host=/tmp/s")
        let parsed = try ConnectionString.parse(rewritten)
        #expect(parsed["dbname"] == "other db")
        #expect(parsed["user"] == "u")
        #expect(parsed["host"] == "/tmp/s")
        #expect(parsed["application_name"] == "it's")
    }
}

@Suite struct PreparedStatementTests {
    func preparedCount(_ connection: Connection) throws -> Int {
        try connection.queryOne("SELECT count(*) FROM pg_prepared_statements").decode(Int.self, at: 0)
    }

    @Test func statementsArePreparedOncePerConnection() throws {
        let connection = try TestDatabase.adminConnection()
        let before = try preparedCount(connection) // the count query itself is prepared now
        for value in 1...5 {
            #expect(try connection.queryOne("SELECT \(value) + 1").decode(Int.self, at: 0) == value + 1)
        }
        #expect(try preparedCount(connection) == before + 1)
        // Inside a transaction the prelude statements are prepared too, and reused.
        for _ in 1...3 {
            try connection.withTransaction(prelude: ["SET LOCAL statement_timeout = '3s'"]) { transaction throws in
                #expect(try transaction.queryOne("SELECT current_setting('statement_timeout')").decode(String.self, at: 0) == "3s")
            }
        }
        let afterTransactions = try preparedCount(connection)
        // SET LOCAL, the SELECT, + the first SELECT; BEGIN and COMMIT always go unnamed.
        #expect(afterTransactions == before + 3)
        // A statement that fails to prepare is not cached, and the connection stays usable.
        #expect(throws: PostgresError.self) { try connection.query("SELECT no_such_column FROM pg_class") }
        #expect(throws: PostgresError.self) { try connection.query("SELECT no_such_column FROM pg_class") }
        #expect(try preparedCount(connection) == afterTransactions)
        // After a reset the session has none; they are prepared again on use.
        try connection.reset()
        #expect(try connection.queryOne("SELECT \(1) + 1").decode(Int.self, at: 0) == 2)
    }

    /// What a transaction pooler does to a client's statements, made on one server connection:
    /// `DEALLOCATE ALL` (simple protocol, so it names no statement itself) drops them while the
    /// client's cache still has them, and the next execution by name fails with 26000.
    @Test("auto: a statement whose name the server lost runs again unnamed, once; on: the error surfaces",
          arguments: [PreparedStatementMode.auto, .on])
    func lostStatementNames(mode: PreparedStatementMode) throws {
        let connection = try Connection(TestDatabase.serverURL, preparedStatements: mode)
        defer { connection.close() }
        var fallbacks: [PostgresError] = []
        connection.onPreparedStatementsDisabled = { fallbacks.append($0) }
        try connection.execute("CREATE TEMPORARY TABLE pooled (n integer)")
        #expect(try connection.queryOne("SELECT \(1) + 1").decode(Int.self, at: 0) == 2)
        #expect(try preparedCount(connection) == 3) // CREATE, the SELECT, the count query
        try connection.executeScript(unsafeSQL: "DEALLOCATE ALL")

        // A transaction whose insert (a new statement) runs before a lost one: the attempt is
        // rolled back, and the insert is applied exactly once.
        let insertAndSelect = {
            try connection.withTransaction { transaction in
                try transaction.execute("INSERT INTO pooled VALUES (\(7))")
                return try transaction.queryOne("SELECT \(1) + 1").decode(Int.self, at: 0)
            }
        }
        if mode == .auto {
            #expect(try insertAndSelect() == 2)
            #expect(fallbacks.count == 1 && fallbacks.first?.sqlState == .invalidSQLStatementName, "\(fallbacks)")
            #expect(!connection.usesPreparedStatements)
            #expect(try connection.queryOne("SELECT count(*) FROM pooled").decode(Int.self, at: 0) == 1)
            // For good: nothing is prepared any more, on any path (what the failed attempt
            // prepared before the lost name stays on the server, unused).
            let left = try preparedCount(connection)
            #expect(try connection.queryOne("SELECT \(2) + 1").decode(Int.self, at: 0) == 3)
            _ = try connection.transaction(statement: "INSERT INTO pooled VALUES (\(8))")
            try connection.withTransaction { try $0.execute("INSERT INTO pooled VALUES (\(9))") }
            #expect(try preparedCount(connection) == left)
            #expect(fallbacks.count == 1)
        } else {
            let error = try #require(throws: PostgresError.self) { try insertAndSelect() }
            #expect(error.sqlState == .invalidSQLStatementName, "\(error)")
            #expect(fallbacks.isEmpty && connection.usesPreparedStatements)
            #expect(try connection.queryOne("SELECT count(*) FROM pooled").decode(Int.self, at: 0) == 0)
        }
    }

    @Test("auto: an autocommit statement and a one-round-trip transaction whose names were lost run again unnamed")
    func lostNamesOutsideTransactions() throws {
        let connection = try Connection(TestDatabase.serverURL, preparedStatements: .auto)
        defer { connection.close() }
        try connection.execute("CREATE TEMPORARY TABLE pooled (n integer)")
        _ = try connection.transaction(statement: "INSERT INTO pooled VALUES (\(1))")
        try connection.executeScript(unsafeSQL: "DEALLOCATE ALL")
        // The INSERT's name is lost: the whole one-round-trip transaction (rolled back at its
        // Sync) runs again, once.
        _ = try connection.transaction(statement: "INSERT INTO pooled VALUES (\(1))")
        #expect(try connection.queryOne("SELECT count(*) FROM pooled").decode(Int.self, at: 0) == 2)

        let other = try Connection(TestDatabase.serverURL, preparedStatements: .auto)
        defer { other.close() }
        #expect(try other.queryOne("SELECT \(5)").decode(Int.self, at: 0) == 5)
        try other.executeScript(unsafeSQL: "DEALLOCATE ALL")
        #expect(try other.queryOne("SELECT \(6)").decode(Int.self, at: 0) == 6)
        #expect(!other.usesPreparedStatements)
    }

    /// The same codes raised by a statement itself (here PREPARE of a name that exists) are
    /// the statement's error: no fallback, no second run.
    @Test("auto: a statement's own 42P05 is not a lost name")
    func ownStatementNameErrorsAreNotFallbacks() throws {
        let connection = try Connection(TestDatabase.serverURL, preparedStatements: .auto)
        defer { connection.close() }
        try connection.executeScript(unsafeSQL: "PREPARE mine AS SELECT 1")
        let error = try #require(throws: PostgresError.self) {
            try connection.execute("DO $$ BEGIN EXECUTE 'PREPARE mine AS SELECT 2'; END $$")
        }
        #expect(error.sqlState == .duplicatePreparedStatement, "\(error)")
        #expect(connection.usesPreparedStatements)
    }

    @Test("statement names are random per session, so two clients never share one")
    func statementNamesDifferPerSession() throws {
        func names(_ connection: Connection) throws -> Set<String> {
            _ = try connection.queryOne("SELECT \(1)")
            return Set(try connection.query("SELECT name FROM pg_prepared_statements").map { try $0.decode(String.self, at: 0) })
        }
        let first = try TestDatabase.adminConnection()
        defer { first.close() }
        let second = try TestDatabase.adminConnection()
        defer { second.close() }
        let firstNames = try names(first)
        let secondNames = try names(second)
        #expect(firstNames.count == 2 && secondNames.count == 2)
        #expect(firstNames.isDisjoint(with: secondNames), "\(firstNames) \(secondNames)")
        try first.reset()
        #expect(try names(first).isDisjoint(with: firstNames), "a new session never reuses the old session's names")
    }

    @Test func unnamedModePreparesNothing() throws {
        let connection = try Connection(TestDatabase.serverURL, preparedStatements: .off)
        for value in 1...3 { _ = try connection.queryOne("SELECT \(value)") }
        try connection.withTransaction(prelude: ["SET LOCAL statement_timeout = '3s'"]) { transaction throws in
            _ = try transaction.query("SELECT 1")
        }
        #expect(try preparedCount(connection) == 0)
    }
}

@Suite struct IdleConnectionTests {
    /// A backend terminated while its connection sits idle: the FATAL arrives as a notice
    /// and the idle probe reports the session dead before any request is sent on it.
    @Test func idleProbeNoticesATerminatedBackend() throws {
        let admin = try TestDatabase.adminConnection()
        let idle = try TestDatabase.adminConnection()
        #expect(idle.isAliveAfterIdle())
        let pid = idle.backendPID
        _ = try admin.queryOne("SELECT pg_terminate_backend(\(pid), 5000)") // waits for the backend to exit
        #expect(!idle.isAliveAfterIdle())
        #expect(!idle.isHealthy)
        try idle.reset()
        #expect(idle.isAliveAfterIdle())
        #expect(try idle.queryOne("SELECT 1").decode(Int.self, at: 0) == 1)
    }
}

/// A strategy like the worker's: polls the socket and one more descriptor, and counts what it
/// was asked to do.
final class PipeWatchingWait: WaitStrategy {
    let watched: Int32
    var socketWaits = 0
    var inputSeen = 0
    var libpqBlocks = 0
    private var watching = true

    init(watching descriptor: Int32) { watched = descriptor }

    func waitUntilReadable(_ socket: Int32) {
        socketWaits += 1
        while true {
            var descriptors = [pollfd(fd: socket, events: Int16(POLLIN), revents: 0)]
            if watching { descriptors.append(pollfd(fd: watched, events: Int16(POLLIN), revents: 0)) }
            guard poll(&descriptors, nfds_t(descriptors.count), -1) >= 0 else {
                if errno == EINTR { continue }
                Issue.record("poll failed: errno \(errno)")
                return
            }
            if descriptors.count > 1, descriptors[1].revents != 0 {
                inputSeen += 1
                watching = false
            }
            if descriptors[0].revents != 0 { return }
        }
    }

    func willBlockInLibpq() { libpqBlocks += 1 }
}
