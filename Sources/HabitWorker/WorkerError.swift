import HabitStore
import JSONRPC
import PostgresClient

/// The worker's domain error codes (JSON-RPC's server range -32000…-32099). Each carries
/// `data.reason`, the stable string clients match on.
public enum DomainErrorCode: Int, CaseIterable, Sendable {
    case notFound = -32001
    case futureDate = -32002
    case habitNotActive = -32003
    case invalidState = -32004
    case databaseUnavailable = -32010
    case timeout = -32011
    /// Serialization failure or deadlock: the transaction was rolled back, so any method may be retried.
    case conflict = -32012
    /// The user already has as many rows of that kind as allowed (`habit.row_limits`).
    case limitExceeded = -32013
    /// The result would exceed `--max-response-bytes`; nothing of it was sent.
    case responseTooLarge = -32014
    /// The request's `deadline_ms` passed: not run if it was still waiting, cancelled (rolled
    /// back) if it was running. Nothing of it took effect.
    case deadlineExceeded = -32016

    public var reason: String {
        switch self {
        case .notFound: "not_found"
        case .futureDate: "future_date"
        case .habitNotActive: "habit_not_active"
        case .invalidState: "invalid_state"
        case .databaseUnavailable: "database_unavailable"
        case .timeout: "timeout"
        case .conflict: "conflict"
        case .limitExceeded: "limit_exceeded"
        case .responseTooLarge: "response_too_large"
        case .deadlineExceeded: "deadline_exceeded"
        }
    }

    var message: String {
        switch self {
        case .notFound: "Not found"
        case .futureDate: "Date is in the future"
        case .habitNotActive: "Habit is not active on that date"
        case .invalidState: "Invalid state transition"
        case .databaseUnavailable: "Database unavailable"
        case .timeout: "Statement timeout"
        case .conflict: "Conflict with a concurrent transaction"
        case .limitExceeded: "Row limit exceeded"
        case .responseTooLarge: "Response too large"
        case .deadlineExceeded: "Deadline exceeded"
        }
    }

    func error(extra: [(String, JSONValue)] = []) -> RPCError {
        var data = JSONObject([("reason", .string(reason))])
        for (key, value) in extra { data.append(key: key, value: value) }
        return RPCError(code: RPCErrorCode(rawValue: rawValue), message: message, data: .object(data))
    }
}

enum ErrorMapping {
    /// Turns whatever a handler threw into the JSON-RPC error the client sees. Unknown
    /// errors become -32603 without detail (the log has the safe description).
    static func rpcError(for error: Error) -> RPCError {
        switch error {
        case let rpc as RPCError:
            return rpc
        case let store as StoreError:
            switch store {
            case .notFound: return DomainErrorCode.notFound.error()
            case .futureDate(let today): return DomainErrorCode.futureDate.error(extra: [("today", .string(today.description))])
            case .habitNotActive: return DomainErrorCode.habitNotActive.error()
            case .invalidState(let reason): return DomainErrorCode.invalidState.error(extra: [("detail", .string(reason))])
            case .invalidInput(let field, let reason): return .invalidParams(field: field, reason: reason)
            case .limitExceeded(let table): return DomainErrorCode.limitExceeded.error(extra: [("table", .string(table))])
            }
        case let postgres as PostgresError:
            if postgres.isConnectionLost || postgres.sqlState == .tooManyConnections {
                return DomainErrorCode.databaseUnavailable.error()
            }
            if postgres.sqlState == .queryCanceled { return DomainErrorCode.timeout.error() }
            if postgres.isTransactionConflict {
                return DomainErrorCode.conflict.error()
            }
            return .internalError()
        default:
            return .internalError()
        }
    }
}
