// Message codec: JSON values ↔ JSON-RPC 2.0 requests, responses and errors.
// https://www.jsonrpc.org/specification
//
// Choices stricter than the spec (each is answered with -32600 Invalid Request, with
// the id echoed when it could be determined, else id null):
//  * Duplicate member names in a request object. Different JSON parsers resolve
//    duplicates differently (first wins / last wins), so a gateway and this worker
//    could read different values from one request ("request smuggling").
//  * Members other than jsonrpc, id, method and params: likely a client bug (e.g.
//    "param"), and silently ignoring them hides it.
//  * "params": null. The spec says params is a structured value that MAY be omitted.
// Other choices:
//  * A blank (empty or JSON-whitespace-only) line is ignored (`.blank`): gateways send
//    keep-alive newlines.
//  * Positional params (an array) are a valid Request per the spec, but this worker only
//    supports named params: -32602 with data.field "params". For a notification that
//    error is never sent (`.invalidNotification`).
//  * Duplicate keys anywhere inside params (at any depth): -32602 naming the key path.
//  * An object without "id" that is not a valid Request (bad jsonrpc/method/members) is
//    not a notification (a Notification is a Request object), so it is answered with
//    id null, as in the spec's own `{"jsonrpc":"2.0","method":1,"params":"bar"}` example.

/// A request id: string, number or null. Numbers keep their literal text so they are
/// echoed byte for byte (`1.0` stays `1.0`, big integers lose no digits). Equality and
/// hashing compare that text, so `1` and `1.0` are different ids.
public enum RequestID: Sendable, Hashable, CustomStringConvertible {
    case string(String)
    case number(String)
    case null

    /// nil unless `value` is a string, number or null.
    public init?(_ value: JSONValue) {
        switch value {
        case .string(let s): self = .string(s)
        case .number(let n): self = .number(n)
        case .null: self = .null
        default: return nil
        }
    }

    public static func int(_ value: Int) -> RequestID { .number(String(value)) }

    public var jsonValue: JSONValue {
        switch self {
        case .string(let s): .string(s)
        case .number(let n): .number(n)
        case .null: .null
        }
    }

    public var description: String { jsonValue.jsonString }
}

/// A JSON-RPC error code.
///
/// Reserved by the spec: -32768…-32000. Of these, -32700 and -32600…-32603 are the
/// predefined errors below and -32099…-32000 are "implementation-defined server errors"
/// (see `serverError(_:)`); the rest is reserved for future use. Application errors
/// should use codes outside -32768…-32000.
public struct RPCErrorCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Invalid JSON was received.
    public static let parseError = RPCErrorCode(rawValue: -32700)
    /// The JSON sent is not a valid Request object.
    public static let invalidRequest = RPCErrorCode(rawValue: -32600)
    /// The method does not exist / is not available.
    public static let methodNotFound = RPCErrorCode(rawValue: -32601)
    /// Invalid method parameter(s).
    public static let invalidParams = RPCErrorCode(rawValue: -32602)
    /// Internal JSON-RPC error.
    public static let internalError = RPCErrorCode(rawValue: -32603)

    public static let serverErrorRange: ClosedRange<Int> = -32099 ... -32000

    /// -32000 - offset, with offset clamped to 0…99 so the result stays in the server
    /// error range.
    public static func serverError(_ offset: Int) -> RPCErrorCode {
        RPCErrorCode(rawValue: -32000 - min(max(offset, 0), 99))
    }

    /// True for the whole range the spec reserves (-32768…-32000).
    public var isReserved: Bool { (-32768 ... -32000).contains(rawValue) }
    public var isServerError: Bool { RPCErrorCode.serverErrorRange.contains(rawValue) }

    public var description: String { String(rawValue) }
}

/// A JSON-RPC error object. `message` is the spec's fixed phrase for predefined errors,
/// so clients can rely on it; details go into `data`.
public struct RPCError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: RPCErrorCode
    public var message: String
    public var data: JSONValue?

    public init(code: RPCErrorCode, message: String, data: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }

    /// `data` of the predefined errors: `reason` (the code), `message` (prose), then where.
    private static func data(_ reason: RPCReason, _ message: String?, _ location: [(String, JSONValue)] = []) -> JSONValue {
        var data: JSONObject = ["reason": .string(reason.rawValue)]
        if let message { data.append(key: "message", value: .string(message)) }
        for (key, value) in location { data.append(key: key, value: value) }
        return .object(data)
    }

    /// -32700; data `{"reason":…,"message":…,"offset":…}` (offset = byte offset in the line).
    public static func parseError(_ error: JSONParseError) -> RPCError {
        RPCError(code: .parseError, message: "Parse error",
                 data: data(error.rpcReason, error.reason, [("offset", .int(error.offset))]))
    }

    /// -32600; data `{"reason":…,"message":…,"member":…,"limit":…}` (member = the offending request
    /// member, limit = the limit exceeded; each only when it applies).
    public static func invalidRequest(_ reason: RPCReason, _ message: String, member: String? = nil, limit: Int? = nil) -> RPCError {
        var location: [(String, JSONValue)] = []
        if let member { location.append(("member", .string(member))) }
        if let limit { location.append(("limit", .int(limit))) }
        return RPCError(code: .invalidRequest, message: "Invalid Request", data: data(reason, message, location))
    }

    /// -32601; data `{"reason":"unknown_method","message":…,"method":…}`.
    public static func methodNotFound(_ method: String) -> RPCError {
        RPCError(code: .methodNotFound, message: "Method not found",
                 data: data(.unknownMethod, "no such method; rpc.discover lists them", [("method", .string(method))]))
    }

    /// -32602; data `{"reason":…,"message":…,"field":…}`, field being a key (path) inside params.
    /// `reason` is one of a closed set (`ErrorReason`): this module's or a validating module's.
    public static func invalidParams<Reason: ErrorReason>(field: String, reason: Reason, message: String) -> RPCError {
        let data: JSONObject = ["reason": .string(reason.rawValue), "message": .string(message), "field": .string(field)]
        return RPCError(code: .invalidParams, message: "Invalid params", data: .object(data))
    }

    /// -32603; data only `{"reason":"internal_error"}`: internal details belong in the log, not
    /// on the wire.
    public static func internalError() -> RPCError {
        RPCError(code: .internalError, message: "Internal error", data: data(.internalError, nil))
    }

    /// An implementation-defined server error (-32000 - offset, offset in 0…99).
    public static func serverError(_ offset: Int, message: String, data: JSONValue? = nil) -> RPCError {
        RPCError(code: .serverError(offset), message: message, data: data)
    }

    public var jsonValue: JSONValue {
        var object: JSONObject = ["code": .int(code.rawValue), "message": .string(message)]
        if let data { object.append(key: "data", value: data) }
        return .object(object)
    }

    public var description: String {
        if let data { return "\(code.rawValue) \(message) \(data.jsonString)" }
        return "\(code.rawValue) \(message)"
    }
}

/// A structurally valid request.
public struct IncomingRequest: Sendable, Equatable {
    /// nil for a notification (no "id" member at all): it must never be answered.
    public var id: RequestID?
    public var method: String
    /// nil when "params" is absent. Never has duplicate keys at any depth.
    public var params: JSONObject?

    public init(id: RequestID?, method: String, params: JSONObject?) {
        self.id = id
        self.method = method
        self.params = params
    }

    public var isNotification: Bool { id == nil }
}

/// One element of a line (the line itself, or one batch entry).
public enum DecodedMessage: Sendable, Equatable {
    case request(IncomingRequest)
    /// Answer with this error and id (null when the id could not be determined).
    case invalid(id: RequestID, error: RPCError)
    /// A notification the worker cannot process (e.g. positional params). Per spec it is
    /// never answered: drop it (log `error` if useful).
    case invalidNotification(method: String, error: RPCError)

    /// The error response to send right away, if any (only for `.invalid`).
    public var errorResponse: OutgoingResponse? {
        if case .invalid(let id, let error) = self { return .error(id: id, error: error) }
        return nil
    }
}

/// The result of decoding one line.
public enum DecodedLine: Sendable, Equatable {
    /// Empty or whitespace-only line: ignored, nothing is answered.
    case blank
    case single(DecodedMessage)
    /// A non-empty batch, in order. Answer with an array of the responses for the
    /// non-notification entries, or nothing at all if there are none.
    case batch([DecodedMessage])
    /// The whole line is unusable (parse error, `[]`, a scalar): answer with id null.
    case invalid(RPCError)
}

public enum RPCCodec {
    static let knownMembers: Set<String> = ["jsonrpc", "id", "method", "params"]

    /// Decodes one line (without its newline). Never throws, never traps.
    public static func decode(line: [UInt8], maxDepth: Int = JSONParser.defaultMaxDepth) -> DecodedLine {
        if line.allSatisfy(isJSONWhitespace) { return .blank }
        do throws(JSONParseError) {
            return decode(try JSONParser.parse(line, maxDepth: maxDepth))
        } catch {
            return .invalid(.parseError(error))
        }
    }

    /// Decodes an already parsed top-level value.
    public static func decode(_ value: JSONValue) -> DecodedLine {
        switch value {
        case .object:
            return .single(decodeMessage(value))
        case .array(let elements):
            guard !elements.isEmpty else { return .invalid(.invalidRequest(.emptyBatch, "empty batch")) }
            return .batch(elements.map(decodeMessage))
        default:
            return .invalid(.invalidRequest(.notAnObject, "expected a request object or a non-empty batch array"))
        }
    }

    /// Decodes one request object (a whole line or a batch element).
    public static func decodeMessage(_ value: JSONValue) -> DecodedMessage {
        guard case .object(let object) = value else {
            return .invalid(id: .null, error: .invalidRequest(.notAnObject, "request must be an object"))
        }
        var jsonrpc: JSONValue?
        var method: JSONValue?
        var params: JSONValue?
        var id: JSONValue?
        var idCount = 0
        var unknownMember: String?
        for (key, value) in object.members {
            switch key {
            case "jsonrpc": jsonrpc = value
            case "method": method = value
            case "params": params = value
            case "id":
                id = value
                idCount += 1
            default: if unknownMember == nil { unknownMember = key }
            }
        }

        // The id first: every later error echoes it when it is unambiguous.
        let replyID: RequestID
        switch (idCount, id) {
        case (0, _):
            replyID = .null
        case (1, let value?):
            guard let valid = RequestID(value) else {
                return .invalid(id: .null, error: .invalidRequest(.wrongType, "id must be a string, number or null", member: "id"))
            }
            replyID = valid
        default:
            return .invalid(id: .null, error: .invalidRequest(.duplicateKey, "duplicate member", member: "id"))
        }
        func invalid(_ reason: RPCReason, _ message: String, _ member: String) -> DecodedMessage {
            .invalid(id: replyID, error: .invalidRequest(reason, message, member: member))
        }

        if let duplicate = object.firstDuplicateKey { return invalid(.duplicateKey, "duplicate member", duplicate) }
        guard let jsonrpc else { return invalid(.required, "missing member", "jsonrpc") }
        guard jsonrpc == .string("2.0") else { return invalid(.invalidVersion, "must be the string 2.0", "jsonrpc") }
        guard let method else { return invalid(.required, "missing member", "method") }
        guard case .string(let methodName) = method else { return invalid(.wrongType, "must be a string", "method") }
        if let unknownMember { return invalid(.unknownKey, "unknown member", unknownMember) }

        let requestID: RequestID? = idCount == 0 ? nil : replyID
        let paramsObject: JSONObject?
        switch params {
        case nil:
            paramsObject = nil
        case .object(let p)?:
            if let path = duplicateKeyPath(in: .object(p)) {
                return paramsError(.invalidParams(field: path, reason: RPCReason.duplicateKey, message: "duplicate key"), requestID, methodName)
            }
            paramsObject = p
        case .array?:
            return paramsError(
                .invalidParams(field: "params", reason: RPCReason.wrongType, message: "positional parameters are not supported; use an object"),
                requestID, methodName)
        default:
            return invalid(.wrongType, "must be an object or an array", "params")
        }
        return .request(IncomingRequest(id: requestID, method: methodName, params: paramsObject))
    }

    /// Errors about a valid Request's params are not sent for notifications.
    private static func paramsError(_ error: RPCError, _ id: RequestID?, _ method: String) -> DecodedMessage {
        if let id { return .invalid(id: id, error: error) }
        return .invalidNotification(method: method, error: error)
    }

    /// Path (`a.b[2].c`, relative to params) of the first duplicated key at any depth.
    static func duplicateKeyPath(in value: JSONValue) -> String? {
        guard let reversed = duplicateKeyComponents(in: value) else { return nil }
        var path = ""
        for component in reversed.reversed() {
            switch component {
            case .key(let key): path += path.isEmpty ? key : ".\(key)"
            case .index(let index): path += "[\(index)]"
            }
        }
        return path
    }

    enum PathComponent { case key(String), index(Int) }

    /// Innermost component first; built only once a duplicate is found, so the common
    /// (clean) case allocates nothing. Recursion is bounded by the parser's depth limit.
    private static func duplicateKeyComponents(in value: JSONValue) -> [PathComponent]? {
        switch value {
        case .object(let object):
            if let key = object.firstDuplicateKey { return [.key(key)] }
            for (key, member) in object.members {
                switch member {
                case .object, .array:
                    if var found = duplicateKeyComponents(in: member) {
                        found.append(.key(key))
                        return found
                    }
                default: continue
                }
            }
            return nil
        case .array(let elements):
            for (index, element) in elements.enumerated() {
                switch element {
                case .object, .array:
                    if var found = duplicateKeyComponents(in: element) {
                        found.append(.index(index))
                        return found
                    }
                default: continue
                }
            }
            return nil
        default:
            return nil
        }
    }
}

/// A response to send back.
public enum OutgoingResponse: Sendable, Equatable {
    case result(id: RequestID, result: JSONValue)
    case error(id: RequestID, error: RPCError)

    public var id: RequestID {
        switch self {
        case .result(let id, _), .error(let id, _): id
        }
    }

    /// Appends `{"jsonrpc":"2.0","id":…,"result":…}` or
    /// `{"jsonrpc":"2.0","id":…,"error":{"code":…,"message":…[,"data":…]}}`.
    public func encode(into out: inout [UInt8]) {
        _ = encode(into: &out, limit: .max)
    }

    /// `encode(into:)`, unless `out` would grow past `limit` bytes: then false, with a partial
    /// response in `out` (see `JSONValue.write(into:limit:)`).
    public func encode(into out: inout [UInt8], limit: Int) -> Bool {
        out.append(contentsOf: #"{"jsonrpc":"2.0","id":"#.utf8)
        id.jsonValue.write(into: &out)
        switch self {
        case .result(_, let result):
            out.append(contentsOf: #","result":"#.utf8)
            guard result.write(into: &out, limit: limit) else { return false }
        case .error(_, let error):
            out.append(contentsOf: #","error":{"code":"#.utf8)
            out.append(contentsOf: String(error.code.rawValue).utf8)
            out.append(contentsOf: #","message":"#.utf8)
            JSONValue.writeString(error.message, into: &out)
            if let data = error.data {
                out.append(contentsOf: #","data":"#.utf8)
                data.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "}"))
        return out.count <= limit
    }

    public var encoded: [UInt8] {
        var out: [UInt8] = []
        if case .result(_, .encoded(let json)) = self { out.reserveCapacity(json.bytes.count + 64) }
        encode(into: &out)
        return out
    }

    public var encodedString: String { String(decoding: encoded, as: UTF8.self) }

    /// Appends `[r1,r2,…]`. Per spec, a batch with no responses (all notifications) gets
    /// no reply at all, not `[]`: then nothing is written and false is returned.
    @discardableResult
    public static func encodeBatch(_ responses: [OutgoingResponse], into out: inout [UInt8]) -> Bool {
        guard let line = batchLine(responses.map(\.encoded)) else { return false }
        out.append(contentsOf: line)
        return true
    }

    /// `[r1,r2,…]` from responses already encoded (each as `encode(into:)` wrote it); nil for
    /// none, since a batch without responses gets no reply at all.
    public static func batchLine(_ encoded: [[UInt8]]) -> [UInt8]? {
        guard !encoded.isEmpty else { return nil }
        var line: [UInt8] = [UInt8(ascii: "[")]
        line.reserveCapacity(encoded.reduce(2) { $0 + $1.count + 1 })
        for (index, response) in encoded.enumerated() {
            if index > 0 { line.append(UInt8(ascii: ",")) }
            line.append(contentsOf: response)
        }
        line.append(UInt8(ascii: "]"))
        return line
    }
}
