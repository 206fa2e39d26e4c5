import Foundation
import HabitStore
import JSONRPC
import PostgresClient

// MARK: - sync.push

/// `sync.push {user_id, client_id, mutations}`: a device's offline mutations, applied in order and
/// each exactly once. Per mutation one transaction as the user: claim `(client_id, mutation_id)`
/// in `habit.sync_mutations`; when the claim finds a record (an earlier push whose answer was
/// lost, or a concurrent one: the primary key makes the claim wait for it to commit), answer the
/// recorded outcome and apply nothing; otherwise run the method in a savepoint, record its result
/// or error next to its effect, commit. A failing mutation is recorded and the next ones run.
///
/// What is recorded is what the method answered: its result, or a domain error (-32602, -32001…).
/// A failure that says nothing about the mutation (connection lost, statement timeout, a
/// concurrent-transaction conflict) is not recorded: its transaction rolls back, claim included,
/// the push answers that error, and a retry runs the mutation again. The mutations before it are
/// committed with their records, so the retry answers them from the records.
enum SyncPush: DatabaseMethod {
    static let name = "sync.push"
    static let retry = RetrySafety.always
    static let summary = "Applies a device's offline mutations in order, each (client_id, mutation_id) exactly once; a repeated push answers the recorded outcomes."
    static let maxMutations = 1_000
    /// habit.sync_mutations' CHECKs: 1…200 characters.
    static let idLengths = 1...200
    /// The methods a push may carry: those that change the user's data, and only those. A read
    /// in a push would be answered once and its answer kept as a replay record for the
    /// retention (20 `tasks.list` of a large account: 137 MB, issue 31); a device reads with
    /// `sync.pull`. Not here, so refused (-32019 `method_not_allowed`, recorded like any
    /// outcome): every read, `sync.*`, `changes.*`, `rpc.*`, `system.*`, and `account.delete` —
    /// deleting the account is a decision made online, confirmed, and answered at once; replayed
    /// from an offline queue it would delete whatever the user created since on other devices.
    /// A method added later is refused until it is listed here.
    static let mutationMethods: [any MethodDeclaration.Type] = [
        ProfileSet.self,
        HabitsCreate.self, HabitsUpdate.self, HabitsDeactivate.self, HabitsActivate.self, HabitsDelete.self,
        HabitsMove.self, HabitsArchive.self, HabitsUnarchive.self,
        AreasCreate.self, AreasUpdate.self, AreasDelete.self, AreasMove.self,
        CompletionsSet.self, CompletionsToggle.self, SkipsSetRange.self,
        CheckinsAdd.self, CheckinsRemove.self, NotesSet.self, RemindersSet.self,
        ListsCreate.self, ListsUpdate.self, ListsDelete.self,
        TasksCreate.self, TasksUpdate.self, TasksDelete.self, TasksComplete.self, TasksUncomplete.self, TasksCycle.self, TasksSetState.self,
        AccountImport.self,
    ]
    static let mutationNames: [String] = mutationMethods.map { $0.name }
    private static let mutationNameSet = Set(mutationNames)

    /// Largest recorded outcome: its `jsonb` text, what every answer of the mutation repeats.
    /// Every write's result fits (the largest, a task with a 500-character title and 10,000
    /// characters of notes, is under 45 KiB); a larger one is rolled back and recorded as
    /// -32014 `response_too_large` with `data.limit`. habit.sync_mutations' CHECK is the same.
    static let maxOutcomeBytes = 65_536

    struct Mutation: Sendable {
        let id: String
        let method: String
        let params: JSONObject?
    }

    struct Params: Sendable {
        let user: UUID
        let clientID: String
        let mutations: [Mutation]
    }

    static let mutationSchema = JSONSchema.object([
        ("mutation_id", JSONSchema.described(JSONSchema.string(minLength: 1),
                                             "Unique per client_id (1-200 characters): the key of the replay record.")),
        ("method", JSONSchema.described(JSONSchema.string(),
                                        "A method that writes: " + mutationNames.joined(separator: ", ")
                                            + ". Any other is answered -32019 method_not_allowed (recorded).")),
        ("params", JSONSchema.described(JSONSchema.nullable(JSONSchema.type("object")),
                                        "The method's params; user_id may be left out (the push's is used) and must otherwise equal it.")),
    ], optional: ["params"])

    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        let user = try params.userID()
        let clientID = try params.requiredString("client_id", description: "The device's stable id (1-200 characters); mutation ids are unique per client.")
        let list: [JSONValue]
        if params.declares("mutations", schema: JSONSchema.array(of: mutationSchema), required: true,
                           description: "Applied in order, at most 1,000 per push.") {
            list = []
        } else {
            list = try params.requiredArray("mutations")
        }
        guard !params.isDescribing else { return Params(user: user, clientID: clientID, mutations: []) }
        try checkLength(clientID, field: "client_id")
        guard list.count <= maxMutations else {
            throw .invalidParams(field: "mutations", reason: RPCReason.outOfRange, message: "at most \(maxMutations) mutations per push")
        }
        var mutations: [Mutation] = []
        mutations.reserveCapacity(list.count)
        for (index, element) in list.enumerated() {
            let field = "mutations[\(index)]"
            guard case .object(let object) = element else {
                throw .invalidParams(field: field, reason: RPCReason.wrongType, message: "expected an object")
            }
            do throws(RPCError) {
                let reader = try ParamsReader(object)
                try reader.rejectUnknownKeys(allowed: ["mutation_id", "method", "params"])
                let id = try reader.requiredString("mutation_id")
                try checkLength(id, field: "mutation_id")
                mutations.append(Mutation(id: id, method: try reader.requiredString("method"), params: try reader.optionalObject("params")))
            } catch {
                throw error.prefixingField(with: field)
            }
        }
        return Params(user: user, clientID: clientID, mutations: mutations)
    }

    private static func checkLength(_ text: String, field: String) throws(RPCError) {
        // char_length counts code points, as unicodeScalars does.
        guard idLengths.contains(text.unicodeScalars.count) else {
            throw .invalidParams(field: field, reason: text.isEmpty ? InputFailure.empty : InputFailure.tooLong, message: "must be 1 to 200 characters")
        }
    }

    static func run(_ params: Params, in context: MethodContext) throws -> PushResult {
        let limit = PushLimit(context)
        var outcomes: [(id: String, outcome: JSONValue)] = []
        outcomes.reserveCapacity(params.mutations.count)
        var stopped = false
        var applied = 0
        for mutation in params.mutations {
            if !stopped {
                do {
                    outcomes.append((mutation.id, try apply(mutation, of: params, in: context, within: limit)))
                    applied += 1
                    continue
                } catch is PushLimit.Reached {
                    stopped = true
                }
            }
            // Not started, or cut off and rolled back: nothing of it took effect and nothing is
            // recorded, so the same mutation id pushed again runs.
            outcomes.append((mutation.id, .object(["error": encoded(DomainErrorCode.deadlineExceeded.error())])))
        }
        // With the configured statement timeout, not the time the deadline left: the mutations'
        // outcomes are committed and must be answered.
        let settings = StoreSettings(statementTimeoutMilliseconds: context.configuredStatementTimeoutMilliseconds)
        // The user's replay records past the caps, oldest first (sql/functions/sync.sql), in the
        // cursor's statement; only when a mutation ran (an empty push, or one cut off before its
        // first mutation, recorded nothing).
        let cursor = try SyncRepository(connection: context.connection, settings: settings)
            .cursorAfterPush(user: params.user, prune: applied > 0)
        return PushResult(outcomes: outcomes, cursor: cursor.text)
    }

    /// When a push must stop: its `deadline_ms`, or `--statement-timeout-ms` after it started,
    /// whichever comes first (no `--statement-timeout-ms`: the deadline only). A mutation
    /// starts only with at least a millisecond left, and runs with `statement_timeout` = the
    /// time left; cancelled (57014), or finished after the limit, it is rolled back.
    struct PushLimit {
        struct Reached: Error {}

        let end: DispatchTime?

        init(_ context: MethodContext) {
            let ceiling = context.configuredStatementTimeoutMilliseconds
            let byCeiling = ceiling > 0 ? DispatchTime.now() + .milliseconds(ceiling) : nil
            end = switch (context.deadline, byCeiling) {
            case let (deadline?, ceiling?): min(deadline, ceiling)
            case let (deadline, ceiling): deadline ?? ceiling
            }
        }

        /// The statement timeout (ms) for a mutation starting now; throws when none is left.
        func timeLeft() throws -> Int? {
            guard let end else { return nil }
            let now = DispatchTime.now().uptimeNanoseconds
            guard end.uptimeNanoseconds >= now + 1_000_000 else { throw Reached() }
            return Int((end.uptimeNanoseconds - now) / 1_000_000)
        }

        var passed: Bool { end.map { DispatchTime.now() >= $0 } ?? false }

        /// Whether a cancellation (57014) was this limit's: its statement_timeout was the time
        /// left, rounded down to the millisecond, so it fires at most a few ms before the end.
        /// Another cancel (pg_cancel_backend, a pooler's timeout) with time left is not.
        var cutOff: Bool { end.map { DispatchTime.now() + .milliseconds(10) >= $0 } ?? false }
    }

    /// One mutation in its own transaction; returns its recorded outcome, `{"result": …}` or
    /// `{"error": …}`, as the record holds it (so a replay answers the same bytes). Throws
    /// `PushLimit.Reached` when the push's time ran out before it or while it ran (rolled back).
    private static func apply(_ mutation: Mutation, of push: Params, in outer: MethodContext, within limit: PushLimit) throws -> JSONValue {
        let (user, client) = (push.user, push.clientID)
        var context = outer
        if let left = try limit.timeLeft() {
            context = MethodContext(connection: outer.connection, settings: StoreSettings(statementTimeoutMilliseconds: left),
                                    syncRetention: outer.syncRetention, deadline: outer.deadline,
                                    configuredStatementTimeoutMilliseconds: outer.configuredStatementTimeoutMilliseconds)
        }
        let recorded: String
        do {
            recorded = try context.scope.transaction(as: user) { connection in
                // Replay records are written only through their functions (sql/functions/sync.sql).
                let claimed = try connection.queryOne("""
                    SELECT habit.sync_mutation_claim(\(user), \(client), \(mutation.id))
                    """).decode(Bool.self, at: 0)
                guard claimed else {
                    // Recorded by an earlier push (committed: the claim waited for it).
                    let row = try connection.queryOne("""
                        SELECT outcome::text FROM habit.sync_mutations
                        WHERE user_id = \(user) AND client_id = \(client) AND mutation_id = \(mutation.id)
                        """)
                    guard let outcome = try row.decode(String?.self, at: 0) else {
                        throw PostgresError(kind: .misuse, message: "a committed replay record without an outcome")
                    }
                    return outcome
                }
                var recorded: String?
                do {
                    // The result is recorded inside the savepoint, so a result past
                    // maxOutcomeBytes rolls its effect back with it.
                    recorded = try connection.withTransaction { connection in
                        let result = try perform(mutation, as: user, in: context)
                        guard let text = try record(JSONValue.object(["result": result]), of: mutation, push: push, on: connection) else {
                            throw DomainErrorCode.responseTooLarge.error(extra: [("limit", .int(maxOutcomeBytes))])
                        }
                        return text
                    }
                } catch let error where isRecordable(error) {
                    let outcome = JSONValue.object(["error": encoded(ErrorMapping.rpcError(for: error))])
                    recorded = try record(outcome, of: mutation, push: push, on: connection)
                }
                guard let recorded else {
                    throw PostgresError(kind: .misuse, message: "an error outcome larger than \(maxOutcomeBytes) bytes")
                }
                // Finished after the push's limit (a mutation of several statements, each
                // allowed the time that was left when it began): rolled back, not recorded.
                if limit.passed { throw PushLimit.Reached() }
                return recorded
            }
        } catch let error as PostgresError where error.sqlState == .queryCanceled && limit.cutOff {
            // Its statement_timeout was the push's time left: the push's limit cut it off.
            throw PushLimit.Reached()
        }
        do {
            return try JSONParser.parse(recorded)
        } catch {
            throw PostgresError(kind: .decoding, message: "a replay record's outcome is not JSON: \(error)")
        }
    }

    /// Writes `outcome` into the mutation's claimed record with the user's change number (the
    /// clock's, if this transaction moved it: sql/functions/sync.sql) and returns it as stored;
    /// nil, writing nothing, when its `jsonb` text is longer than `maxOutcomeBytes`.
    private static func record(_ outcome: JSONValue, of mutation: Mutation, push: Params, on connection: Connection) throws -> String? {
        let (user, client) = (push.user, push.clientID)
        // Past maxOutcomeBytes nothing is recorded (NULL); with change_seq: the user's clock if
        // this transaction moved it (habit.sync_mutation_record, which keeps both rules).
        return try connection.queryOne("""
            SELECT habit.sync_mutation_record(\(user), \(client), \(mutation.id), \(JSONB(text: outcome.jsonString)))
            """).decode(JSONB?.self, at: 0)?.text
    }

    /// Decodes the mutation with its method's own declaration and runs it on this connection
    /// (inside the caller's transaction: its own transactions become savepoints).
    private static func perform(_ mutation: Mutation, as user: UUID, in context: MethodContext) throws -> JSONValue {
        // A name no method has stays -32601 (what the method's own request would answer).
        if !mutationNameSet.contains(mutation.method), MethodRegistry.standard.has(mutation.method) {
            throw DomainErrorCode.methodNotAllowed.error()
        }
        var params = mutation.params ?? JSONObject()
        switch params["user_id"] {
        case nil:
            params.append(key: "user_id", value: .string(user.lowercaseString))
        case .string(let text)? where UUID(canonical: text).map({ $0 != user }) ?? false:
            throw DomainErrorCode.userMismatch.error()
        default:
            break // the push's user, or not a UUID: the method's decoder says what is wrong
        }
        switch try MethodRegistry.standard.prepare(IncomingRequest(id: nil, method: mutation.method, params: params)) {
        case .immediate(let value):
            return value
        case .database(let run, _):
            return try run(context)
        case .worker:
            // The worker's own state (subscriptions) is not data a device replays.
            throw DomainErrorCode.methodNotAllowed.error()
        }
    }

    /// Whether a mutation's failure is its outcome. Not so for what says nothing about the
    /// mutation and may pass on a retry: the connection, the statement timeout, a conflict with
    /// a concurrent transaction, a prepared statement's name lost behind a pooler (the outer
    /// transaction runs again unnamed).
    /// Nor is an error the push would answer as -32603 (a bug, not the mutation's outcome): it
    /// rolls back, and the push answers -32603, logged with its cause (`JobRunner`).
    static func isRecordable(_ error: Error) -> Bool {
        if error is PushLimit.Reached { return false }
        guard let postgres = error as? PostgresError else {
            return ErrorMapping.rpcError(for: error).code != .internalError
        }
        switch postgres.kind {
        case .connectionFailed, .connectionLost, .connectionClosed, .commitUnconfirmed: return false
        default: break
        }
        if postgres.isConnectionLost || postgres.isTransactionConflict { return false }
        let transient: [SQLState] = [.queryCanceled, .tooManyConnections, .invalidSQLStatementName, .duplicatePreparedStatement,
                                     .inFailedSQLTransaction]
        return !transient.contains { $0 == postgres.sqlState } && ErrorMapping.rpcError(for: postgres).code != .internalError
    }

    /// A JSON-RPC error object as a response carries it.
    static func encoded(_ error: RPCError) -> JSONValue {
        var object: JSONObject = ["code": .int(error.code.rawValue), "message": .string(error.message)]
        if let data = error.data { object.append(key: "data", value: data) }
        return .object(object)
    }

    /// `{results: [{mutation_id, result} | {mutation_id, error}], cursor}`.
    struct PushResult: MethodResult {
        let outcomes: [(id: String, outcome: JSONValue)]
        let cursor: String

        static let schema = JSONSchema.object([
            ("results", JSONSchema.described(JSONSchema.array(of: JSONSchema.object([
                ("mutation_id", JSONSchema.string()),
                ("result", JSONSchema.described(JSONSchema.any, "The method's result, as the method answers it.")),
                ("error", JSONSchema.described(JSONSchema.object([("code", JSONSchema.integer()), ("message", JSONSchema.string()),
                                                                  ("data", JSONSchema.any)], optional: ["data"]),
                                               "The method's error, as the method answers it; recorded like a result.")),
            ], optional: ["result", "error"])), "One per mutation, in order: result or error. A replay answers the recorded one.")),
            ("cursor", JSONSchema.described(JSONSchema.string(), "The user's caught-up sync cursor after the push (sync.pull).")),
        ])

        func write(to json: inout JSONWriter) {
            json.beginObject()
            json.key("results")
            json.array(outcomes) { json, element in
                json.beginObject()
                json.key("mutation_id"); json.string(element.id)
                if case .object(let outcome) = element.outcome {
                    for (key, value) in outcome.members where key == "result" || key == "error" {
                        if key == "result" { json.key("result") } else { json.key("error") }
                        json.value(value)
                    }
                }
                json.endObject()
            }
            json.key("cursor"); json.string(cursor)
            json.endObject()
        }

        var estimatedJSONBytes: Int { 128 + 400 * outcomes.count }
    }
}

extension RPCError {
    /// The same error about a param inside `prefix` (`mutations[3]` + `method`).
    func prefixingField(with prefix: String) -> RPCError {
        guard case .object(var data)? = data, case .string(let field)? = data["field"] else { return self }
        data["field"] = .string(prefix + "." + field)
        var copy = self
        copy.data = .object(data)
        return copy
    }
}
