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
    /// Methods a push may not carry: they read or steer the protocol, not the user's data.
    static let refusedPrefixes = ["sync.", "changes.", "rpc.", "system."]
    /// Methods a push may not carry by name: deleting the account is a decision made online,
    /// confirmed, and answered at once; replayed from an offline queue it would delete whatever
    /// the user created since on other devices (and its own replay record with it).
    static let refusedMethods: Set<String> = ["account.delete"]

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
        ("method", JSONSchema.described(JSONSchema.string(), "Any method that takes user_id, except sync.*, changes.*, rpc.*, system.* and account.delete.")),
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
        var outcomes: [(id: String, outcome: JSONValue)] = []
        outcomes.reserveCapacity(params.mutations.count)
        for mutation in params.mutations {
            outcomes.append((mutation.id, try apply(mutation, of: params, in: context)))
        }
        let cursor = try SyncRepository(connection: context.connection, settings: context.settings).currentCursor(user: params.user)
        return PushResult(outcomes: outcomes, cursor: cursor.text)
    }

    /// One mutation in its own transaction; returns its recorded outcome, `{"result": …}` or
    /// `{"error": …}`, as the record holds it (so a replay answers the same bytes).
    private static func apply(_ mutation: Mutation, of push: Params, in context: MethodContext) throws -> JSONValue {
        let (user, client) = (push.user, push.clientID)
        let recorded: String = try context.scope.transaction(as: user) { connection in
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
            let outcome: JSONValue
            do {
                let result = try connection.withTransaction { _ in try perform(mutation, as: user, in: context) }
                outcome = .object(["result": result])
            } catch let error where isRecordable(error) {
                outcome = .object(["error": encoded(ErrorMapping.rpcError(for: error))])
            }
            // With change_seq: the user's clock if this transaction moved it (sql/functions/sync.sql).
            return try connection.queryOne("""
                SELECT habit.sync_mutation_record(\(user), \(client), \(mutation.id), \(outcome.jsonString)::jsonb)::text
                """).decode(String.self, at: 0)
        }
        do {
            return try JSONParser.parse(recorded)
        } catch {
            throw PostgresError(kind: .decoding, message: "a replay record's outcome is not JSON: \(error)")
        }
    }

    /// Decodes the mutation with its method's own declaration and runs it on this connection
    /// (inside the caller's transaction: its own transactions become savepoints).
    private static func perform(_ mutation: Mutation, as user: UUID, in context: MethodContext) throws -> JSONValue {
        if refusedPrefixes.contains(where: mutation.method.hasPrefix) || refusedMethods.contains(mutation.method) {
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
    static func isRecordable(_ error: Error) -> Bool {
        guard let postgres = error as? PostgresError else { return true }
        switch postgres.kind {
        case .connectionFailed, .connectionLost, .connectionClosed, .commitUnconfirmed: return false
        default: break
        }
        if postgres.isConnectionLost || postgres.isTransactionConflict { return false }
        let transient: [SQLState] = [.queryCanceled, .tooManyConnections, .invalidSQLStatementName, .duplicatePreparedStatement,
                                     .inFailedSQLTransaction]
        return !transient.contains { $0 == postgres.sqlState }
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
