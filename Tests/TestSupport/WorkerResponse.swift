import Foundation

/// One stdout line of the worker, parsed and checked to be a JSON-RPC 2.0 response object
/// (`{"jsonrpc":"2.0","id":…,"result"|"error":…}`) or a non-empty array of them.
public struct WorkerResponse: Sendable, CustomStringConvertible {
    /// The line exactly as written (without "\n").
    public let raw: String
    public let json: WireJSON

    public init(line bytes: [UInt8]) throws {
        let raw = String(decoding: bytes, as: UTF8.self)
        let json: WireJSON
        do {
            json = try WireJSON.parse(bytes)
        } catch {
            throw WorkerProcessError.malformedOutput(line: raw, problem: "\(error)")
        }
        if let problem = WorkerResponse.shapeProblem(json) {
            throw WorkerProcessError.malformedOutput(line: raw, problem: problem)
        }
        self.raw = raw
        self.json = json
    }

    private init(raw: String, json: WireJSON) {
        self.raw = raw
        self.json = json
    }

    public var description: String { raw }

    public var isBatch: Bool { json.arrayValue != nil }
    /// The entries of a batch response (each with its JSON re-encoded as `raw`).
    public var batch: [WorkerResponse] { json.arrayValue?.map { WorkerResponse(raw: $0.encoded, json: $0) } ?? [] }

    public var id: WireJSON? { json["id"] }
    public var result: WireJSON? { json["result"] }
    public var error: WireJSON? { json["error"] }
    public var isSuccess: Bool { result != nil }
    public var code: Int? { error?["code"]?.intValue }
    public var message: String? { error?["message"]?.stringValue }
    public var data: WireJSON? { error?["data"] }
    /// error.data.reason
    public var reason: String? { data?["reason"]?.stringValue }
    /// error.data.field
    public var field: String? { data?["field"]?.stringValue }
    /// error.data.message: the prose next to the reason code
    public var dataMessage: String? { data?["message"]?.stringValue }

    /// Why `json` is not a valid JSON-RPC 2.0 response line, or nil if it is one.
    public static func shapeProblem(_ json: WireJSON) -> String? {
        if let elements = json.arrayValue {
            if elements.isEmpty { return "empty batch response" }
            for element in elements {
                if let problem = singleProblem(element) { return "batch entry: \(problem)" }
            }
            return nil
        }
        return singleProblem(json)
    }

    private static func singleProblem(_ json: WireJSON) -> String? {
        guard let keys = json.keys else { return "not an object" }
        guard json["jsonrpc"] == .string("2.0") else { return "jsonrpc is not \"2.0\"" }
        switch json["id"] {
        case .string?, .number?, .null?: break
        default: return "missing or invalid id"
        }
        let hasResult = json["result"] != nil
        let hasError = json["error"] != nil
        guard hasResult != hasError else { return "needs exactly one of result and error" }
        guard Set(keys) == ["jsonrpc", "id", hasResult ? "result" : "error"] else { return "unexpected members \(keys)" }
        if let error = json["error"] {
            guard let errorKeys = error.keys else { return "error is not an object" }
            guard error["code"]?.intValue != nil else { return "error.code is not an integer" }
            guard error["message"]?.stringValue != nil else { return "error.message is not a string" }
            guard Set(errorKeys).isSubset(of: ["code", "message", "data"]) else { return "unexpected error members \(errorKeys)" }
        }
        return nil
    }
}
