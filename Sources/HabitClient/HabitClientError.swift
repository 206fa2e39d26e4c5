import Foundation
import JSONRPC
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Everything a call can throw. Only `.rpc` means the worker answered; `.unknownOutcome`
/// means it may or may not have run the request (docs/client.md says what to do).
public enum HabitClientError: Error, Sendable, CustomStringConvertible {
    /// The worker answered with a JSON-RPC error (a domain error such as not_found, or a
    /// protocol error). The request's outcome is known: see the code's row in docs/protocol.md.
    case rpc(RPCErrorResponse)
    /// The request was sent (at least partly) but no answer will come: the worker died
    /// (crash, SIGKILL), the client was closed before the answer, or the calling task was
    /// cancelled. A write may have committed. Never retried by the client unless asked
    /// (`RetryPolicy`), and then only for retry-safe methods (`HabitMethods.isRetrySafe`).
    case unknownOutcome(method: String, reason: UnknownOutcomeReason)
    /// Nothing of the request reached the worker (its stdin was closed or it had exited):
    /// it did not run; any method may be sent again.
    case notSent(method: String, errno: Int32)
    /// The request line would be longer than the worker's line limit; nothing was sent.
    case requestTooLarge(method: String, bytes: Int, limit: Int)
    /// The client was closed before the call was sent.
    case closed
    /// The worker could not be started.
    case spawnFailed(executable: String, errno: Int32)
    /// The worker's answer is not a JSON-RPC response (the line is included, shortened).
    case malformedResponse(line: String, problem: String)
    /// The result does not decode into the expected type (a client older than the worker?).
    case unexpectedResult(method: String, problem: String)

    public enum UnknownOutcomeReason: Sendable, Equatable, CustomStringConvertible {
        /// The worker's stdout ended (it exited or was killed) before the answer.
        case workerExited(pid: Int32)
        /// `close()` gave up waiting and stopped the worker.
        case closed
        /// The calling task was cancelled (e.g. the gateway's timeout) after sending.
        case cancelled
        /// Writing the line failed after part of it was written.
        case writeFailed(errno: Int32)

        public var description: String {
            switch self {
            case .workerExited(let pid): "worker \(pid) exited before answering"
            case .closed: "the client was closed before the answer"
            case .cancelled: "the call was cancelled after it was sent"
            case .writeFailed(let error): "writing the request failed part way: \(String(cString: strerror(error)))"
            }
        }
    }

    /// The JSON-RPC error, if the worker answered with one.
    public var rpcError: RPCErrorResponse? {
        if case .rpc(let error) = self { error } else { nil }
    }

    public var isUnknownOutcome: Bool {
        if case .unknownOutcome = self { true } else { false }
    }

    public var description: String {
        switch self {
        case .rpc(let error): "\(error)"
        case .unknownOutcome(let method, let reason): "\(method): outcome unknown (\(reason))"
        case .notSent(let method, let error): "\(method): not sent (\(String(cString: strerror(error))))"
        case .requestTooLarge(let method, let bytes, let limit):
            "\(method): the request line of \(bytes) bytes exceeds the worker's line limit of \(limit) bytes; nothing was sent"
        case .closed: "the client is closed"
        case .spawnFailed(let executable, let error): "cannot start \(executable): \(String(cString: strerror(error)))"
        case .malformedResponse(let line, let problem): "malformed response (\(problem)): \(line.prefix(300))"
        case .unexpectedResult(let method, let problem): "\(method): unexpected result: \(problem)"
        }
    }
}

/// A JSON-RPC error object as the worker sent it.
public struct RPCErrorResponse: Sendable, Equatable, CustomStringConvertible {
    public var code: Int
    public var message: String
    public var data: JSONValue?

    public init(code: Int, message: String, data: JSONValue?) {
        self.code = code
        self.message = message
        self.data = data
    }

    /// `data.reason`: the stable machine code (docs/protocol.md, Errors).
    public var reason: String? { data?["reason"]?.stringValue }
    /// `data.field` of -32602.
    public var field: String? { data?["field"]?.stringValue }

    public var description: String {
        var text = "JSON-RPC error \(code) \(message)"
        if let data { text += " \(data.jsonString)" }
        return text
    }
}
