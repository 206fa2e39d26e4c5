import Foundation
import Logging

/// `habit serve`: reads JSON-RPC lines from one file descriptor, runs requests on a pool of
/// database connections and writes each response as soon as it is ready, so responses may come
/// out of order; one user's requests take effect in the order they were read. Threads take
/// turns reading (see `Scheduler`): the thread that reads a database request usually runs it.
/// Stops at EOF (or a wake byte from a signal) after answering everything it accepted.
///
/// Wires three parts: the transport (`WorkerTransport`: lines in, responses out), the
/// connection pool (`ConnectionPool`) and dispatch (`Dispatcher`: lines to jobs, the scheduler
/// loop; `JobRunner`: running and answering jobs).
public final class WorkerServer: @unchecked Sendable {
    private let configuration: WorkerConfiguration
    private let logger: Logger
    private let transport: WorkerTransport
    private let pool: ConnectionPool
    private let dispatcher: Dispatcher
    private let status = WorkerStatus()
    private let input: Int32
    private let changes: ChangeListener

    /// `wake` stops the read loop when written to (signals); the worker makes one if none is given.
    public init(configuration: WorkerConfiguration, input: Int32 = 0, output: Int32 = 1, wake: WakePipe? = nil, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        self.input = input
        transport = WorkerTransport(input: input, output: output, wake: wake ?? WakePipe(),
                                    maxLineBytes: configuration.maxLineBytes, maxResponseBytes: configuration.maxResponseBytes,
                                    logger: logger)
        pool = ConnectionPool(configuration: configuration, status: status, logger: logger)
        changes = ChangeListener(
            settings: .init(connectionString: configuration.listenConnectionString ?? configuration.connectionString,
                            connectTimeoutSeconds: configuration.connectTimeoutSeconds, store: configuration.storeSettings),
            transport: transport, logger: logger)
        status.changes = changes
        dispatcher = Dispatcher(configuration: configuration, transport: transport, pool: pool,
                                worker: WorkerContext(changes: changes), logger: logger)
    }

    /// Serves until end of input; returns the process exit code (0, or 1 if stdin or stdout
    /// failed, or the health socket could not be bound).
    public func run() -> Int32 {
        var health: HealthSocket?
        if let path = configuration.healthSocketPath {
            do {
                health = try HealthSocket(path: path, status: status, configuration: configuration, stdin: input, logger: logger)
            } catch {
                logger.error("health socket failed", metadata: ["error": "\(error)"])
                return 1
            }
        }
        defer { health?.stop() }
        let prune = SyncPrune(configuration: configuration, logger: logger)
        defer { prune.stop() }
        // Every setting in effect, named as its flag: what an operator checks first, and what
        // DocumentedDefaultsTests holds the docs' default columns to.
        logger.info("serving", metadata: [
            "pool_size": "\(configuration.poolSize)",
            "max_per_round_trip": "\(configuration.maxRequestsPerRoundTrip)",
            "max_in_flight": "\(configuration.maxInFlight)",
            "statement_timeout_ms": "\(configuration.statementTimeoutMilliseconds)",
            "max_line_bytes": "\(configuration.maxLineBytes)",
            "max_batch": "\(configuration.maxBatchElements)",
            "max_response_bytes": "\(configuration.maxResponseBytes)",
            "connect_timeout": "\(configuration.connectTimeoutSeconds)",
            "sync_retention_days": "\(configuration.syncRetentionDays)",
            "prepared_statements": "\(configuration.preparedStatements.rawValue)",
        ])
        // One thread per slot plus this one, which leads first: a thread is always free to read.
        let threads = DispatchGroup()
        for index in pool.slots.indices {
            threads.enter()
            let thread = Thread { [dispatcher] in
                dispatcher.serveAsFollower()
                threads.leave()
            }
            thread.name = "habit-db-\(index)"
            thread.start()
        }
        dispatcher.serveAsLeader()
        threads.wait()
        changes.stop()
        pool.close()
        logger.info("stopped")
        return transport.failed ? 1 : 0
    }
}
