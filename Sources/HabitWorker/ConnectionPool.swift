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
    /// Counters for the health socket: connections up, the last database error.
    let status: WorkerStatus
    /// Held by the one thread that is starting a stopped embedded server.
    private let serverStart = NSLock()

    init(configuration: WorkerConfiguration, status: WorkerStatus, logger: Logger) {
        self.configuration = configuration
        self.status = status
        self.logger = logger
        slots = (0..<max(1, configuration.poolSize)).map { ConnectionSlot(index: $0, status: status) }
    }

    /// Runs `body` (a job on `slot`'s connection), counted as busy for the health socket.
    func busy<Value>(_ slot: ConnectionSlot, _ body: () -> Value) -> Value {
        status.busy(body)
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
            return try connect(slot)
        } catch {
            connectFailed(slot, error)
            guard startServerIfStopped() else { throw error }
        }
        do {
            return try connect(slot)
        } catch {
            connectFailed(slot, error)
            throw error
        }
    }

    private func connectFailed(_ slot: ConnectionSlot, _ error: Error) {
        slot.lastFailedConnect = .now()
        status.databaseError(error, reason: "connect_failed", connecting: true)
        logger.warning("database connect failed", metadata: ["slot": "\(slot.index)", "error": "\(error)"])
    }

    /// The embedded server stopped under the worker (`habit db stop`): starts it again, under
    /// its file lock, from one thread; the others answer -32010 meanwhile. True if it started
    /// it (the caller then connects again at once); a failure to start is logged, and the
    /// request answers the connection error (-32010) like any other.
    private func startServerIfStopped() -> Bool {
        guard let start = configuration.startServerIfStopped, serverStart.try() else { return false }
        defer { serverStart.unlock() }
        do {
            let started = try start()
            if started { logger.warning("embedded database was stopped; started it again") }
            return started
        } catch {
            logger.error("embedded database start failed", metadata: ["error": "\(error)"])
            return false
        }
    }

    private func connect(_ slot: ConnectionSlot) throws -> MethodContext {
        do {
            let fresh = try Connection(configuration.connectionString, applicationName: "habit-serve",
                                       connectTimeoutSeconds: configuration.connectTimeoutSeconds,
                                       preparedStatements: configuration.preparedStatements)
            if configuration.statementTimeoutMilliseconds > 0 {
                // What statement_timeout cannot stop: a commit waiting for a synchronous standby
                // that is gone (docs/admin.md, "Failover"). A second more than the timeout.
                fresh.responseTimeout = .milliseconds(configuration.statementTimeoutMilliseconds + 1_000)
            }
            fresh.onPreparedStatementsDisabled = { [logger, preparedStatementsFellBack] error in
                guard preparedStatementsFellBack.set() else { return }
                logger.warning("prepared statements off", metadata: ["reason": "\(PreparedStatementMode.fallbackWarning(error))"])
            }
            let context = MethodContext(connection: fresh, settings: configuration.storeSettings, syncRetention: configuration.syncRetention)
            slot.connection = fresh
            slot.context = context
            slot.lastFailedConnect = nil
            status.connectionOpened()
            return context
        }
    }

    /// After `error` on `slot`'s connection: drops the connection when it cannot be trusted
    /// (lost, or a session not where it should be — a bug), saying why with the `request`'s
    /// log metadata; true if it did.
    func dropIfUntrusted(_ slot: ConnectionSlot, after error: PostgresError, request: @autoclosure () -> Logger.Metadata) -> Bool {
        if error.kind == .misuse {
            status.databaseError(error, reason: "unexpected_state", connecting: false)
            logger.error("connection in an unexpected state; reconnecting", metadata: request().merging(["error": "\(error)"]) { $1 })
        } else if error.isConnectionLost {
            // A failed connect was recorded as such by `context`.
            if error.kind != .connectionFailed { status.databaseError(error, reason: "connection_lost", connecting: false) }
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
    private let status: WorkerStatus

    init(index: Int, status: WorkerStatus) {
        self.index = index
        self.status = status
    }

    func drop() {
        if connection != nil { status.connectionClosed() }
        connection?.close()
        connection = nil
        context = nil
    }
}
