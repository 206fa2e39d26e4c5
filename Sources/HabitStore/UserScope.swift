import Foundation
import PostgresClient

/// Settings every user transaction runs with.
public struct StoreSettings: Sendable {
    /// `statement_timeout` for each statement of a request (0 = none).
    public var statementTimeoutMilliseconds: Int
    public init(statementTimeoutMilliseconds: Int = 5_000) {
        self.statementTimeoutMilliseconds = statementTimeoutMilliseconds
    }
}

/// Runs work as one user, the way PostgREST does: per transaction, the role `authenticated`
/// and the user's JWT claims (`request.jwt.claims`, `request.jwt.claim.sub`,
/// `request.jwt.claim.role`), all with `set_config(…, true)` in one statement, so row-level
/// security sees that user and nothing survives the transaction (safe on pooled and
/// pgbouncer-shared connections). Session-level settings are never used.
public struct UserScope {
    public let connection: Connection
    public let settings: StoreSettings

    public init(connection: Connection, settings: StoreSettings = StoreSettings()) {
        self.connection = connection
        self.settings = settings
    }

    /// How a `transaction` sees concurrent commits.
    public enum Isolation: Sendable {
        /// PostgreSQL's default: each statement sees what was committed before it began.
        case readCommitted
        /// One snapshot for the whole transaction, which may not write (a sync pull: its
        /// statements read one consistent state).
        case repeatableReadOnly
    }

    /// Runs `body` in one transaction as `user`: BEGIN and the user's settings statement are
    /// pipelined with the body's first statement.
    public func transaction<Value>(as user: UUID, isolation: Isolation = .readCommitted,
                                   _ body: (Connection) throws -> Value) throws -> Value {
        // SET TRANSACTION must come before the first query (the settings statement is one).
        let isolationStatements: [Query] = switch isolation {
        case .readCommitted: []
        case .repeatableReadOnly: ["SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"]
        }
        do {
            return try connection.withTransaction(prelude: isolationStatements + prelude(for: user) + distributedPrelude(for: user), body)
        } catch {
            throw StoreError.mapping(error)
        }
    }

    /// One statement as `user`, in a transaction that costs a single round trip: the settings
    /// statement and `statement`, committed together at one Sync (`Connection.transaction`).
    public func query(as user: UUID, _ statement: Query) throws -> [Row] {
        try run(as: user, statement).rows
    }

    /// `statement` alone, as its user, in a transaction that costs a single round trip.
    public func run<Value>(_ statement: UserStatement<Value>) throws -> Value {
        try statement.decode(run(as: statement.user, statement.statement, genericPlan: statement.genericPlan).rows)
    }

    /// Several one-statement transactions, each as its own user with its own claims and
    /// role exactly as `query(as:_:)` runs it, sent in one round trip
    /// (`Connection.transactions`). One result per statement, in order. `statementTimeouts`,
    /// when given, has one entry per statement: that transaction's `statement_timeout` (ms)
    /// instead of the settings' (a request's time left before its deadline). `genericPlans`,
    /// when given, has one entry per statement: `UserStatement.genericPlan`.
    public func queries(_ list: [(user: UUID, statement: Query)], statementTimeouts: [Int]? = nil,
                        genericPlans: [Bool]? = nil) throws -> [Result<[Row], Error>] {
        if try isCitusCoordinator() {
            // Each needs its own transaction block (distributedPrelude): one after the other.
            return list.indices.map { index in
                Result {
                    try connection.withTransaction(prelude: prelude(for: list[index].user, timeout: statementTimeouts?[index])
                                                   + distributedPrelude(for: list[index].user)) { connection in
                        try connection.query(list[index].statement)
                    }
                }.mapError { StoreError.mapping($0) }
            }
        }
        let results: [Result<Connection.StatementResult, PostgresError>]
        do {
            results = try connection.transactions(list.indices.map { index in
                (prelude: prelude(for: list[index].user, timeout: statementTimeouts?[index], genericPlan: genericPlans?[index] ?? false),
                 statement: list[index].statement)
            })
        } catch {
            throw StoreError.mapping(error)
        }
        return results.map { result in
            switch result {
            case .success(let statement): .success(statement.rows)
            case .failure(let error): .failure(StoreError.mapping(error))
            }
        }
    }

    /// One statement as `user`; returns the number of rows it affected.
    public func execute(as user: UUID, _ statement: Query) throws -> Int {
        try run(as: user, statement).affectedRows
    }

    private func run(as user: UUID, _ statement: Query, genericPlan: Bool = false) throws -> Connection.StatementResult {
        do {
            if try isCitusCoordinator() {
                return try connection.withTransaction(prelude: prelude(for: user) + distributedPrelude(for: user)) { connection in
                    try connection.statementResult(statement)
                }
            }
            return try connection.transaction(prelude: prelude(for: user, genericPlan: genericPlan), statement: statement)
        } catch {
            throw StoreError.mapping(error)
        }
    }

    /// Whether the database is a Citus coordinator: asked once per connection (one round trip
    /// on its first request), then remembered (`Connection.serverFacts`).
    public func isCitusCoordinator() throws -> Bool {
        if let known = connection.serverFacts[Self.citusFact] { return known }
        let known = try Distribution.isCoordinator(connection)
        connection.serverFacts[Self.citusFact] = known
        return known
    }

    private static let citusFact = "citus coordinator"

    /// On a Citus coordinator, the user's identity must reach the worker nodes, where the
    /// shards' row-level security runs. The role does (Citus connects to them as the current
    /// role); settings made by set_config() do not, while SET LOCAL commands do with
    /// citus.propagate_set_commands = 'local', and only inside an explicit transaction block.
    /// So those requests run in BEGIN … COMMIT (one round trip more than on PostgreSQL) with
    /// the claim's sub as a SET LOCAL literal (SET takes no parameters; a UUID's text is hex
    /// and dashes). auth.uid() reads it (request.jwt.claim.sub is the spelling it reads
    /// first). Without it the shards see no user: reads come back empty and writes are
    /// refused, closed rather than open. docs/scaling.md, "Running on Citus".
    /// The database's other Citus settings are `habit db distribute`'s (Distribution.applyDatabaseSettings).
    private func distributedPrelude(for user: UUID) throws -> [Query] {
        guard try isCitusCoordinator() else { return [] }
        return [
            "SELECT set_config('citus.propagate_set_commands', 'local', true)",
            Query(unsafeSQL: "SET LOCAL request.jwt.claim.sub = '\(user.lowercaseString)'"),
        ]
    }

    private func prelude(for user: UUID, timeout: Int? = nil, genericPlan: Bool = false) -> [Query] {
        // The claims are built from a UUID (hex and dashes only) and still travel as a parameter.
        let sub = user.lowercaseString
        let claims = #"{"sub":"\#(sub)","role":"authenticated"}"#
        // One statement, every setting transaction-local (`true`): the role (what SET LOCAL
        // ROLE does, checked the same way: the login role must be a member of `authenticated`),
        // both spellings of the claims, so every auth.uid() Supabase has shipped sees this
        // request's user (its init scripts' reads only request.jwt.claim.sub; GoTrue's reads
        // either) and a session- or role-level request.jwt.claim.sub can never stand in for it,
        // the statement timeout, and no JIT: the worker's statements read a few index entries
        // per habit, and a plan for many habits can cost past jit_above_cost, whose compilation
        // (tens to hundreds of ms) would dwarf them. A statement marked `genericPlan` (the
        // day's reads) also gets plan_cache_mode = force_generic_plan, transaction-local: left
        // to auto, PostgreSQL re-planned day.get's statement on every request once statistics
        // made its custom plan look cheaper (1.6 ms of planning for 0.2 ms of work). Not for
        // every statement: it reaches the PL/pgSQL the writes run (docs/performance.md,
        // "Generic plans"), and never on Citus, which cannot plan most of them generically.
        let planMode = genericPlan ? ", set_config('plan_cache_mode', 'force_generic_plan', true)" : ""
        return [
            """
            SELECT set_config('role', 'authenticated', true), set_config('request.jwt.claims', \(claims), true),
                   set_config('request.jwt.claim.sub', \(sub), true), set_config('request.jwt.claim.role', 'authenticated', true),
                   set_config('statement_timeout', \(String(timeout ?? settings.statementTimeoutMilliseconds)), true),
                   set_config('jit', 'off', true)\(unsafeSQL: planMode)
            """,
        ]
    }
}

/// One user's work as a single statement and how its rows become the result: what a
/// `UserScope` runs alone (`run`) or together with other users' statements in one round trip
/// (`queries`).
public struct UserStatement<Value> {
    public let user: UUID
    public let statement: Query
    public let decode: ([Row]) throws -> Value
    /// Run with a generic plan from its first execution (plan_cache_mode = force_generic_plan
    /// in the transaction's settings; PostgreSQL only): for a hot read whose plan must not flip
    /// to planning anew on every request. Reaches the functions it calls.
    public let genericPlan: Bool

    public init(user: UUID, statement: Query, genericPlan: Bool = false, decode: @escaping ([Row]) throws -> Value) {
        self.user = user
        self.statement = statement
        self.genericPlan = genericPlan
        self.decode = decode
    }

    public func map<Other>(_ transform: @escaping (Value) throws -> Other) -> UserStatement<Other> {
        let decode = self.decode
        return UserStatement<Other>(user: user, statement: statement, genericPlan: genericPlan) { try transform(decode($0)) }
    }
}
