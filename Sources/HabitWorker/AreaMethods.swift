import Foundation
import HabitStore
import JSONRPC
import PostgresClient

// The JSON-RPC methods of areas (areas.*; issue 33, item 1). docs/protocol.md, "Areas",
// documents each one; each method's `decode` is the one declaration of its params. Every one
// names the area `area_id`, as the contract's areas.move does.

enum AreasCreate: DatabaseMethod {
    static let name = "areas.create"
    static let retry = RetrySafety.withClientID
    static let summary = "Creates an area after the user's last; with a client id, safe to retry."
    static let errors: [DomainErrorCode] = [.limitExceeded, .idConflict]
    struct Params: Sendable { let user: UUID; let id: UUID?; let name: String }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(), id: try params.clientID(),
               name: try params.requiredString("name", description: "Trimmed, then 1–100 characters, no control characters."))
    }
    static func run(_ params: Params, in context: MethodContext) throws -> Area {
        try context.habits.createArea(user: params.user, name: params.name, id: params.id)
    }
}

enum AreasUpdate: DatabaseMethod {
    static let name = "areas.update"
    static let retry = RetrySafety.always
    static let summary = "Renames an area."
    static let errors: [DomainErrorCode] = [.notFound]
    struct Params: Sendable { let user: UUID; let area: UUID; let name: String }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(), area: try params.uuid("area_id"),
               name: try params.requiredString("name", description: "Trimmed, then 1–100 characters, no control characters."))
    }
    static func run(_ params: Params, in context: MethodContext) throws -> Area {
        try context.habits.renameArea(user: params.user, id: params.area, name: params.name)
    }
}

enum AreasDelete: DatabaseMethod {
    static let name = "areas.delete"
    static let retry = RetrySafety.always
    static let summary = "Deletes an area; its habits stay, without an area."
    static let errors: [DomainErrorCode] = [.notFound]
    struct Params: Sendable { let user: UUID; let area: UUID }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(), area: try params.uuid("area_id"))
    }
    static func run(_ params: Params, in context: MethodContext) throws -> Deleted {
        try context.habits.deleteArea(user: params.user, id: params.area)
        return Deleted()
    }
}

enum AreasList: DatabaseMethod {
    static let name = "areas.list"
    static let retry = RetrySafety.always
    static let summary = "The user's areas in their order (at most 100: no pages)."
    struct Params: Sendable { let user: UUID }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID())
    }
    static func run(_ params: Params, in context: MethodContext) throws -> AreaList {
        AreaList(areas: try context.habits.areas(user: params.user))
    }

    struct AreaList: MethodResult {
        let areas: [Area]

        static let schema = JSONSchema.object([("areas", JSONSchema.array(of: Area.schema))])
        func write(to json: inout JSONWriter) {
            json.beginObject()
            json.key("areas"); json.array(areas) { $0.area($1) }
            json.endObject()
        }
        var estimatedJSONBytes: Int { 32 + 360 * areas.count }
    }
}

enum AreasMove: DatabaseMethod {
    static let name = "areas.move"
    static let retry = RetrySafety.always
    static let summary = "Moves an area just before or just after another area of the user; the others keep their places."
    static let errors: [DomainErrorCode] = [.notFound]
    struct Params: Sendable { let user: UUID; let area: UUID; let before: UUID?; let after: UUID? }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        let user = try params.userID()
        let area = try params.uuid("area_id", description: "The area to move.")
        let before = try params.optionalUUID("before", description: "Another area's id: put the area just before it. Give before or after, not both.")
        let after = try params.optionalUUID("after", description: "Another area's id: put the area just after it.")
        if params.isDescribing { return Params(user: user, area: area, before: nil, after: nil) }
        try params.checkMoveAnchor(before: before, after: after, moved: area, noun: "area", movedField: "area_id")
        return Params(user: user, area: area, before: before, after: after)
    }
    static func run(_ params: Params, in context: MethodContext) throws -> Area {
        try context.habits.moveArea(user: params.user, id: params.area, before: params.before, after: params.after)
    }
}
