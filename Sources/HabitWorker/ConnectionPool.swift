import Foundation
import HabitStore
import Logging
import PostgresClient

/// The worker's database connections: one slot per connection, each used by one thread at a
/// time (the scheduler hands slots over under its lock). A slot connects when first used,
/// reconnects when its connection died while idle, backs off after a failed attempt, and drops
/// a connection that cannot be trusted any more.
final class ConnectionPool: @unchecked Sendable {
    let slots: [ConnectionSlot]
    private let configuration: WorkerConfiguration
    private let logger: Logger
    /// Set when the first connection fell back to unnamed statements: one warning per worker.
    private let preparedStatementsFellBack = LockedFlag()

    init(configuration: WorkerConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        slots = (0..<max(1, configuration.poolSize)).map { ConnectionSlot(index: $0) }
    }

    /// The slot's connection, reconnecting when it broke while idle. During an outage, requests
    /// within the backoff window fail at once instead of each waiting to connect.
    /// `beforeConnecting` runs before a connection attempt (a wait that cannot watch stdin).
    func context(_ slot: ConnectionSlot, beforeConnecting: (() -> Void)? = nil) throws -> MethodContext {
        if let context = slot.context, let connection = slot.connection, connection.isAliveAfterIdle() { return context }
        slot.drop()
        if let lastFailedConnect = slot.lastFailedConnect,
           DispatchTime.now().uptimeNanoseconds < lastFailedConnect.uptimeNanoseconds + UInt64(configuration.reconnectBackoffMilliseconds) * 1_000_000 {
            throw PostgresError(kind: .connectionFailed, message: "database unavailable (retrying)")
        }
        beforeConnecting?()
        do {
            let fresh = try Connection(configuration.connectionString, applicationName: "habit-serve",
                                       connectTimeoutSeconds: configuration.connectTimeoutSeconds,
                                       preparedStatements: configuration.preparedStatements)
            fresh.onPreparedStatementsDisabled = { [logger, preparedStatementsFellBack] error in
                guard preparedStatementsFellBack.set() else { return }
                logger.warning("prepared statements off", metadata: ["reason": "\(PreparedStatementMode.fallbackWarning(error))"])
            }
            let context = MethodContext(connection: fresh, settings: configuration.storeSettings)
            slot.connection = fresh
            slot.context = context
            slot.lastFailedConnect = nil
            return context
        } catch {
            slot.lastFailedConnect = .now()
            logger.warning("database connect failed", metadata: ["slot": "\(slot.index)", "error": "\(error)"])
            throw error
        }
    }

    /// After `error` on `slot`'s connection: drops the connection when it cannot be trusted
    /// (lost, or a session not where it should be — a bug), saying why with the `request`'s
    /// log metadata; true if it did.
    func dropIfUntrusted(_ slot: ConnectionSlot, after error: PostgresError, request: @autoclosure () -> Logger.Metadata) -> Bool {
        if error.kind == .misuse {
            logger.error("connection in an unexpected state; reconnecting", metadata: request().merging(["error": "\(error)"]) { $1 })
        } else if error.isConnectionLost {
            logger.warning("database connection lost", metadata: request().merging(["error": "\(error)"]) { $1 })
        } else {
            return false
        }
        slot.drop()
        return true
    }

    /// Closes every connection (all threads are done).
    func close() {
        for slot in slots { slot.drop() }
    }
}

/// One database connection of the pool, used by one thread at a time.
final class ConnectionSlot: @unchecked Sendable {
    let index: Int
    fileprivate(set) var connection: Connection?
    fileprivate(set) var context: MethodContext?
    fileprivate var lastFailedConnect: DispatchTime?

    init(index: Int) { self.index = index }

    func drop() {
        connection?.close()
        connection = nil
        context = nil
    }
}
