/// The named prepared statements of one session: which statement has which name, the names
/// themselves (`habit_<random>_N`), and the `.auto` fallback to unnamed statements.
///
/// Parsing and planning a statement often costs more than running it (measured: 1.7 ms unnamed
/// vs 0.47 ms prepared for the daily view), so statements are prepared once per session,
/// unless the mode is `.off` or `.auto` fell back to unnamed statements. Owned by one
/// `Connection` and used on its thread only.
final class PreparedStatementCache {
    let mode: PreparedStatementMode
    /// False in `.off` mode and after `.auto` fell back.
    private(set) var usesNames: Bool
    /// Called once, when `.auto` switches to unnamed statements (with the server's error).
    var onDisabled: ((PostgresError) -> Void)?
    /// Counts statements that failed only because their name was missing or taken on the
    /// server (26000/42P05): a retry decision compares it before and after an attempt.
    private(set) var nameFailures = 0

    /// Statements the server confirmed it prepared in this session.
    private var names: [Key: String] = [:]
    /// Prefix of this session's names, random per session: a name that exists on a server
    /// connection is then always one this session prepared there, for the same SQL, even when
    /// a transaction pooler mixes clients on that server connection.
    private var prefix = PreparedStatementCache.randomPrefix()
    /// The number of this session's last name. Never reused within a session, even when a
    /// Parse was skipped: a number the server may already hold would collide (42P05) or,
    /// behind a pooler, name another SQL text.
    private var number = 0
    private static let limit = 512

    /// A prepared statement is found by its text and parameter types (the same text with other
    /// types is another statement). A struct, not a concatenated string: built per statement.
    struct Key: Hashable {
        let sql: String
        let types: [UInt32]

        init(_ query: Query) {
            sql = query.sql
            types = query.bindings.types
        }
    }

    init(mode: PreparedStatementMode) {
        self.mode = mode
        usesNames = mode != .off
    }

    /// The session was replaced (PQreset): it has no statements. A pooler may still hold the
    /// old session's names on some server connection, so they are never reused.
    func sessionReplaced() {
        names.removeAll()
        prefix = Self.randomPrefix()
        number = 0
    }

    /// Whether `query` goes by name at all. BEGIN, COMMIT and ROLLBACK are always sent
    /// unnamed: parsing them costs nothing, and a transaction must never start or end on a
    /// name the server may have lost (a lost BEGIN would leave the body to run outside any
    /// transaction).
    func isNamed(_ query: Query) -> Bool {
        usesNames && !(query.bindings.count == 0 && (query.sql == "BEGIN" || query.sql == "COMMIT" || query.sql == "ROLLBACK"))
    }

    /// The name under which the server holds `query`, if it does.
    func preparedName(_ query: Query) -> String? {
        names[Key(query)]
    }

    /// The server prepared `name` (its Parse succeeded). Not recorded after a fallback to
    /// unnamed statements earlier in the same pipeline.
    func confirm(_ name: String, for key: Key) {
        if usesNames { names[key] = name }
    }

    /// The pipeline steps of each segment (a segment ends in a Sync). A statement not yet
    /// prepared is prepared in the segment that first uses it; later segments of the same
    /// pipeline send it unnamed, because each segment succeeds or fails on its own: an error
    /// before that Parse skips it, and a later segment naming it would fail on a missing name
    /// that the server never lost. Costs one extra parse per statement, once per session.
    func steps(for segments: [[Query]]) -> [[Pipeline.Step]] {
        var preparedEarlier: Set<Key> = []
        var preparingCount = 0
        return segments.map { queries in
            var steps: [Pipeline.Step] = []
            var preparing: [Key: String] = [:]
            for query in queries {
                guard isNamed(query) else {
                    steps.append(.execute(query, name: nil))
                    continue
                }
                let key = Key(query)
                if let name = names[key] ?? preparing[key] {
                    steps.append(.execute(query, name: name))
                } else if !preparedEarlier.contains(key), names.count + preparingCount < Self.limit {
                    number += 1
                    let name = prefix + String(number)
                    preparing[key] = name
                    preparingCount += 1
                    steps.append(.prepare(query, name: name))
                    steps.append(.execute(query, name: name))
                } else {
                    steps.append(.execute(query, name: nil))
                }
            }
            preparedEarlier.formUnion(preparing.keys)
            return steps
        }
    }

    /// True for an error that says one of this session's names is missing (26000) or already
    /// taken (42P05) on the server connection. The same codes raised while a statement executes
    /// (a function calling PREPARE or DEALLOCATE) are the statement's own: they never name one
    /// of our statements.
    func isLostName(_ error: PostgresError) -> Bool {
        Self.isNameError(error) && error.message.contains(prefix)
    }

    /// A named statement failed on its name. In `.auto` mode the session switches to unnamed
    /// statements for good.
    func noteNameFailure(_ error: PostgresError) {
        guard isLostName(error) else { return }
        nameFailures += 1
        guard mode == .auto, usesNames else { return }
        usesNames = false
        names.removeAll()
        onDisabled?(error)
    }

    static func isNameError(_ error: PostgresError) -> Bool {
        error.sqlState == .invalidSQLStatementName || error.sqlState == .duplicatePreparedStatement
    }

    private static func randomPrefix() -> String {
        "habit_" + String(UInt64.random(in: 0...UInt64.max), radix: 36) + "_"
    }
}

/// How a connection sends its statements.
public enum PreparedStatementMode: String, Sendable, CaseIterable {
    /// Named statements, each prepared once per connection: the fastest, for direct connections
    /// and poolers that keep prepared statements (pgbouncer ≥ 1.21 with max_prepared_statements).
    case on
    /// Unnamed statements only, parsed and planned on every execution.
    case off
    /// `on` until the server reports a statement name missing (26000) or taken (42P05), as a
    /// transaction pooler that does not track prepared statements does; then unnamed for good,
    /// and the failed work runs again (it had run nothing).
    case auto
}

extension PreparedStatementMode {
    /// What to log when `.auto` falls back: why, and how to silence it.
    public static func fallbackWarning(_ error: PostgresError) -> String {
        "the server lost or mixed up this connection's prepared statements (\(error.sqlState?.rawValue ?? "?"): a transaction pooler such as pgbouncer < 1.21); this connection now sends unnamed statements. Set --prepared-statements off (HABIT_PREPARED_STATEMENTS=off) behind such a pooler to silence this, or on with a pooler that keeps prepared statements."
    }
}
