import Foundation
import PostgresClient
import TestSupport
import Testing

/// Nested transactions are savepoints: what fails inside one is undone alone, and the
/// transaction around it goes on and commits.
@Suite struct SavepointTests {
    let connection: Connection

    init() throws {
        connection = try TestDatabase.adminConnection()
        try connection.executeScript(unsafeSQL: """
            CREATE TEMPORARY TABLE items (
                name text PRIMARY KEY,
                quantity int NOT NULL DEFAULT 0 CONSTRAINT items_quantity_check CHECK (quantity >= 0)
            );
            """)
    }

    struct Abort: Error {}

    private func names() throws -> [String] {
        try connection.query("SELECT name FROM items ORDER BY name").map { try $0.decode(String.self, at: 0) }
    }

    @Test func errorInsideNestedRollsBackOnlyTheNestedPart() throws {
        try connection.withTransaction { outer throws in
            try outer.execute("INSERT INTO items (name) VALUES ('before')")
            // A statement that fails on the server…
            let failure = try #require(throws: PostgresError.self) {
                try outer.withTransaction { inner throws in
                    try inner.execute("INSERT INTO items (name) VALUES ('undone')")
                    try inner.execute("INSERT INTO items (name, quantity) VALUES ('bad', -1)")
                }
            }
            #expect(failure.constraint == "items_quantity_check")
            // …and a Swift error thrown after the nested part wrote something.
            #expect(throws: Abort.self) {
                try outer.withTransaction { inner throws in
                    try inner.execute("INSERT INTO items (name) VALUES ('undone too')")
                    throw Abort()
                }
            }
            let kept: Int = try outer.withTransaction { inner throws in
                try inner.execute("INSERT INTO items (name) VALUES ('nested kept')")
            }
            #expect(kept == 1)
            try outer.execute("INSERT INTO items (name) VALUES ('after')")
        }
        #expect(connection.transactionStatus == .idle)
        #expect(try names() == ["after", "before", "nested kept"])
    }

    @Test func nestedInNested() throws {
        try connection.withTransaction { outer throws in
            try outer.withTransaction { middle throws in
                try middle.execute("INSERT INTO items (name) VALUES ('middle')")
                #expect(throws: PostgresError.self) {
                    try middle.withTransaction { inner throws in
                        try inner.execute("INSERT INTO items (name) VALUES ('inner')")
                        try inner.execute("INSERT INTO items (name) VALUES ('middle')") // duplicate key
                    }
                }
                // The same depth again reuses the released name.
                try middle.withTransaction { inner throws in try inner.execute("INSERT INTO items (name) VALUES ('inner 2')") }
            }
            // The middle one rolled back as a whole takes its released inner one with it.
            #expect(throws: Abort.self) {
                try outer.withTransaction { middle throws in
                    try middle.withTransaction { inner throws in try inner.execute("INSERT INTO items (name) VALUES ('gone')") }
                    throw Abort()
                }
            }
        }
        #expect(try names() == ["inner 2", "middle"])
    }

    /// The prelude runs inside the savepoint: its transaction-local settings are undone with it
    /// and outlive a released one (PostgreSQL's SET LOCAL inside a savepoint).
    @Test func preludeRunsInsideTheSavepoint() throws {
        let seen: [String] = try connection.withTransaction(prelude: ["SET LOCAL application_name = 'outer'"]) { outer throws in
            var seen: [String] = []
            _ = try? outer.withTransaction(prelude: ["SET LOCAL application_name = 'rolled back'"]) { inner throws in
                seen.append(try inner.queryOne("SELECT current_setting('application_name')").decode(String.self, at: 0))
                throw Abort()
            }
            seen.append(try outer.queryOne("SELECT current_setting('application_name')").decode(String.self, at: 0))
            try outer.withTransaction(prelude: ["SET LOCAL application_name = 'released'"]) { inner throws in
                try inner.execute("INSERT INTO items (name) VALUES ('x')")
            }
            seen.append(try outer.queryOne("SELECT current_setting('application_name')").decode(String.self, at: 0))
            // A failing prelude fails only the savepoint.
            #expect(throws: PostgresError.self) {
                try outer.withTransaction(prelude: ["SET LOCAL ROLE no_such_role_here"]) { inner throws in
                    try inner.execute("INSERT INTO items (name) VALUES ('never')")
                }
            }
            return seen
        }
        #expect(seen == ["rolled back", "outer", "released"])
        #expect(try names() == ["x"])
    }

    /// `transaction(prelude:statement:)` inside a body is a savepoint of one statement.
    @Test func oneStatementTransactionInsideABodyIsASavepoint() throws {
        try connection.withTransaction { outer throws in
            let inserted = try outer.transaction(prelude: ["SET LOCAL statement_timeout = '2s'"],
                                                 statement: "INSERT INTO items (name) VALUES ('one') RETURNING name")
            #expect(try inserted.rows[0].decode(String.self, at: 0) == "one" && inserted.affectedRows == 1)
            #expect(throws: PostgresError.self) {
                try outer.transaction(statement: "INSERT INTO items (name) VALUES ('one')")
            }
            try outer.execute("INSERT INTO items (name) VALUES ('two')")
        }
        #expect(try names() == ["one", "two"])
    }

    /// An error the nested body swallowed still undoes the nested part (and says so); the
    /// outer goes on. A nested body that sends nothing sends no savepoint either, even as the
    /// first thing of the outer transaction.
    @Test func swallowedErrorAndEmptyBodies() throws {
        try connection.withTransaction { outer throws in
            try outer.withTransaction { _ in }
            let error = try #require(throws: PostgresError.self) {
                try outer.withTransaction { inner throws in
                    try inner.execute("INSERT INTO items (name) VALUES ('half')")
                    _ = try? inner.execute("INSERT INTO items (name, quantity) VALUES ('bad', -5)")
                }
            }
            #expect(error.kind == .misuse)
            try outer.execute("INSERT INTO items (name) VALUES ('outer')")
            try outer.withTransaction { _ in }
        }
        #expect(try names() == ["outer"])
        // An outer transaction that throws undoes its released savepoints too.
        #expect(throws: Abort.self) {
            try connection.withTransaction { outer throws in
                try outer.withTransaction { inner throws in try inner.execute("INSERT INTO items (name) VALUES ('released')") }
                throw Abort()
            }
        }
        #expect(try names() == ["outer"])
        #expect(connection.transactionStatus == .idle)
    }
}
