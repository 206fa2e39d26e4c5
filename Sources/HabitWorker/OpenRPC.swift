import HabitStore
import JSONRPC

/// The OpenRPC document of the worker (https://spec.open-rpc.org), made from the registry's
/// declarations: each method's params as its `decode` reads them, its result schema and its
/// errors. `rpc.discover` returns it; docs/openrpc.json is that output, pretty-printed
/// (scripts/openrpc writes it; a test keeps the two equal and validates the file).
enum OpenRPCDocument {
    static let openRPCVersion = "1.3.2"
    /// The protocol's version: raise it when a method, a param or a result changes.
    static let protocolVersion = "1.10.0"

    /// The object types results share, each defined once under `components/schemas`.
    static let components: [any SchemaComponent.Type] = [Habit.self, HabitSchedule.self, Area.self, TaskItem.self, TaskList.self, Profile.self]

    /// `{"$ref": "#/components/schemas/<name>"}`.
    static func reference(_ name: String) -> JSONValue {
        .object(JSONObject([("$ref", .string("#/components/schemas/" + name))]))
    }

    /// The document of the methods the worker serves.
    static let standard: EncodedJSON = document(for: .standard).encodedJSON

    static func document(for registry: MethodRegistry) -> JSONValue {
        .object(JSONObject([
            ("openrpc", .string(openRPCVersion)),
            ("info", .object(JSONObject([
                ("title", "habit serve"),
                ("version", .string(protocolVersion)),
                ("description", """
                    JSON-RPC 2.0 over stdin/stdout, one message per line: a multi-user habit and task \
                    service. Params are by name; unknown keys, duplicate keys and positional params are \
                    -32602 (data.field names the param). Every error's data carries reason, a stable \
                    snake_case code (data.message is prose): components/errors lists each error code with \
                    x-data-schema, the JSON Schema of its data, whose reason enumerates the codes. Every \
                    method also accepts the envelope members deadline_ms and traceparent, listed with its \
                    params. The prose, with examples: docs/protocol.md.
                    """),
            ]))),
            ("methods", .array(registry.descriptions.map(method))),
            ("components", .object(JSONObject([
                ("schemas", .object(JSONObject(components.map { (key: $0.componentName, value: $0.objectSchema) }))),
                ("errors", .object(JSONObject(ErrorCatalog.entries.map { (key: $0.name, value: catalogError($0)) }))),
            ]))),
        ]))
    }

    private static func method(_ description: MethodRegistry.Description) -> JSONValue {
        var method = JSONObject([
            ("name", .string(description.name)),
            ("summary", .string(description.summary)),
            ("paramStructure", "by-name"),
            ("params", .array((description.params + Envelope.declarations).map(param))),
            ("result", .object(JSONObject([("name", "result"), ("schema", description.result)]))),
            ("x-retry-safe", .string(description.retry.rawValue)),
        ])
        if !description.errors.isEmpty {
            method.append(key: "errors", value: .array(description.errors.map(error)))
        }
        return .object(method)
    }

    private static func param(_ param: ParamDeclaration) -> JSONValue {
        var descriptor = JSONObject([("name", .string(param.name))])
        if let text = param.description { descriptor.append(key: "description", value: .string(text)) }
        descriptor.append(key: "required", value: .bool(param.required))
        descriptor.append(key: "schema", value: param.schema)
        return .object(descriptor)
    }

    /// An error code of `components/errors`: code, message, and `x-data-schema` (an extension: an
    /// OpenRPC Error's `data` is a value, not a schema), the JSON Schema of its `data`.
    private static func catalogError(_ entry: ErrorCatalogEntry) -> JSONValue {
        .object(JSONObject([
            ("code", .int(entry.code.rawValue)),
            ("message", .string(entry.message)),
            ("x-data-schema", entry.dataSchema),
        ]))
    }

    private static func error(_ code: DomainErrorCode) -> JSONValue {
        .object(JSONObject([
            ("code", .int(code.rawValue)),
            ("message", .string(code.message)),
            ("data", .object(JSONObject([("reason", .string(code.reason))]))),
        ]))
    }
}

/// `rpc.discover`: the OpenRPC document (the OpenRPC service discovery method).
enum RPCDiscover: LocalMethod {
    static let name = "rpc.discover"
    static let retry = RetrySafety.always
    static let summary = "This OpenRPC document (docs/openrpc.json)."
    static func decode(_ params: ParamsReader) throws(RPCError) {}
    static func run(_ params: Void) throws(RPCError) -> Document { Document() }

    struct Document: MethodResult {
        static let schema = JSONSchema.described(JSONSchema.type("object"), "An OpenRPC \(OpenRPCDocument.openRPCVersion) document.")
        func write(to json: inout JSONWriter) { json.value(.encoded(OpenRPCDocument.standard)) }
        var estimatedJSONBytes: Int { OpenRPCDocument.standard.bytes.count }
    }
}
