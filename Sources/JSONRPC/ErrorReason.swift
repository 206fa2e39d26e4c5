// The machine-readable `data.reason` of every error: a stable snake_case code that says WHAT is
// wrong; `data.field` (-32602) or `data.member` (-32600) says WHERE, and `data.message` is prose
// for people and logs (it may be reworded; the code never is). docs/protocol.md ("Reasons")
// lists every code, and the OpenRPC document enumerates them per error code.
//
// The codes are closed sets of enum cases, so a typo cannot invent a reason: this module's
// (`RPCReason`) are about JSON, requests and params in general; a module that validates values
// of its own declares its own enum and conforms it to `ErrorReason` (the worker's domain values).

/// A closed set of `data.reason` codes (snake_case raw values).
public protocol ErrorReason: RawRepresentable, CaseIterable, Sendable where RawValue == String {}

/// The reasons of the JSON-RPC layer: parse errors, invalid requests, method not found, the
/// params' JSON types and keys, internal errors.
public enum RPCReason: String, ErrorReason {
    /// The line is not JSON (-32700).
    case invalidJSON = "invalid_json"
    /// The line is not UTF-8 (-32700).
    case invalidUTF8 = "invalid_utf8"
    /// Arrays and objects nested deeper than the parser's limit (-32700).
    case tooDeep = "too_deep"
    /// The line (or a batch element) is not a request object (-32600).
    case notAnObject = "not_an_object"
    /// `[]` (-32600).
    case emptyBatch = "empty_batch"
    /// `jsonrpc` is not the string "2.0" (-32600).
    case invalidVersion = "invalid_version"
    /// The line is longer than `--max-line-bytes` (-32600).
    case lineTooLong = "line_too_long"
    /// The batch has more elements than `--max-batch` (-32600).
    case batchTooLarge = "batch_too_large"
    /// A member (-32600) or param (-32602) that must be there is missing, or a param is null.
    case required
    /// A member (-32600) or param (-32602) has the wrong JSON type (positional params included).
    case wrongType = "wrong_type"
    /// A member (-32600) or a key inside params (-32602) appears twice.
    case duplicateKey = "duplicate_key"
    /// A member (-32600) or param (-32602) the request or method does not have.
    case unknownKey = "unknown_key"
    /// A number, date or instant outside the accepted range (-32602).
    case outOfRange = "out_of_range"
    /// A string that is not one of the param's choices (-32602).
    case invalidChoice = "invalid_choice"
    /// No method of that name (-32601).
    case unknownMethod = "unknown_method"
    /// An unexpected failure; the details are only in the log (-32603).
    case internalError = "internal_error"

    /// The error codes this reason is sent with.
    public var codes: [RPCErrorCode] {
        switch self {
        case .invalidJSON, .invalidUTF8, .tooDeep: [.parseError]
        case .notAnObject, .emptyBatch, .invalidVersion, .lineTooLong, .batchTooLarge: [.invalidRequest]
        case .required, .wrongType, .duplicateKey, .unknownKey: [.invalidRequest, .invalidParams]
        case .outOfRange, .invalidChoice: [.invalidParams]
        case .unknownMethod: [.methodNotFound]
        case .internalError: [.internalError]
        }
    }

    /// The reasons sent with `code`, in declaration order.
    public static func reasons(for code: RPCErrorCode) -> [RPCReason] {
        allCases.filter { $0.codes.contains(code) }
    }
}

extension JSONParseError {
    var rpcReason: RPCReason {
        switch kind {
        case .syntax: .invalidJSON
        case .invalidUTF8: .invalidUTF8
        case .tooDeep: .tooDeep
        }
    }
}
