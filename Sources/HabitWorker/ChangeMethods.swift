import Foundation
import JSONRPC

// `changes.subscribe` / `changes.unsubscribe` (docs/protocol.md, "Change notifications"):
// answered by the reading thread from the worker's subscriptions (`ChangeListener`), without
// waiting for the database. The subscription belongs to this worker process.

enum ChangesSubscribe: WorkerMethod {
    static let name = "changes.subscribe"
    static let retry = RetrySafety.always
    static let summary = "Writes a \"changes\" notification {user_id, cursor} after the user's committed changes (any writer), "
        + "at most one per 200 ms per user; until changes.unsubscribe or the worker's exit."
    static func decode(_ params: ParamsReader) throws(RPCError) -> UUID { try params.userID() }
    static func run(_ user: UUID, in worker: WorkerContext) throws(RPCError) -> Subscription {
        Subscription(subscribed: worker.changes.subscribe(user))
    }
}

enum ChangesUnsubscribe: WorkerMethod {
    static let name = "changes.unsubscribe"
    static let retry = RetrySafety.always
    static let summary = "Ends the user's change notifications on this worker (none pending is written). Not subscribed: the same answer."
    static func decode(_ params: ParamsReader) throws(RPCError) -> UUID { try params.userID() }
    static func run(_ user: UUID, in worker: WorkerContext) throws(RPCError) -> Subscription {
        Subscription(subscribed: worker.changes.unsubscribe(user))
    }
}

/// Whether the user is subscribed after the call.
struct Subscription: MethodResult {
    let subscribed: Bool
    static let schema = JSONSchema.object([
        ("subscribed", JSONSchema.described(JSONSchema.boolean, "Whether the user is subscribed on this worker after the call.")),
    ])
    func write(to json: inout JSONWriter) { json.object { $0.member("subscribed", subscribed) } }
}
