import Foundation
import JSONRPC
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A client of `habit serve` for gateways: N spawned workers, many requests in flight on
/// each, a user's requests always on the same worker, crashed workers restarted.
///
/// ```swift
/// let client = try HabitClient(configuration: .init(
///     command: .serve(executable: "/usr/local/bin/habit", databaseURL: url), workers: 4))
/// let day = try await client.dayGet(userID: user, date: "2026-11-02")
/// await client.close()
/// ```
///
/// What a gateway must do on a timeout, a crash (`HabitClientError.unknownOutcome`) and a
/// restart: docs/client.md.
public final class HabitClient: HabitCalling, @unchecked Sendable { // mutable state under `lock` and each Slot's lock
    public struct Configuration: Sendable {
        /// How each worker is started (`WorkerCommand.serve(…)`).
        public var command: WorkerCommand
        /// Workers spawned. A user's requests always go to the same one (per-user order is
        /// a promise of one worker process); requests without `user_id` are spread.
        public var workers: Int
        /// The workers' `--max-line-bytes`; longer request lines are refused before sending.
        public var maxLineBytes: Int
        /// Wait before the first restart of a crashed worker; doubled for each crash of a
        /// worker that lived less than `stableAfter`, up to `maximumRestartBackoff`.
        public var restartBackoff: Duration
        public var maximumRestartBackoff: Duration
        public var stableAfter: Duration
        /// Each stderr line of every worker (its JSON log lines), on that worker's stderr
        /// thread; called before the line is put on `stderrLines`.
        public var stderrHandler: (@Sendable (WorkerLine) -> Void)?
        /// Lines `stderrLines` and `notifications` keep when nobody reads them (the oldest are dropped).
        public var streamBuffer: Int

        public init(command: WorkerCommand, workers: Int = 1, maxLineBytes: Int = 1_048_576,
                    restartBackoff: Duration = .milliseconds(100), maximumRestartBackoff: Duration = .seconds(5),
                    stableAfter: Duration = .seconds(10), stderrHandler: (@Sendable (WorkerLine) -> Void)? = nil,
                    streamBuffer: Int = 1_000) {
            self.command = command
            self.workers = workers
            self.maxLineBytes = maxLineBytes
            self.restartBackoff = restartBackoff
            self.maximumRestartBackoff = maximumRestartBackoff
            self.stableAfter = stableAfter
            self.stderrHandler = stderrHandler
            self.streamBuffer = streamBuffer
        }
    }

    /// One line a worker wrote, and which worker.
    public struct WorkerLine: Sendable, CustomStringConvertible {
        public var pid: Int32
        public var text: String
        public var description: String { "[\(pid)] \(text)" }
    }

    /// `{"method":"changes","params":{"user_id","cursor"}}` from a worker: the user's data
    /// changed (changes.subscribe); pull from your cursor. `cursor` is where a pull that saw
    /// this change ends, for comparison only if you keep cursors' order yourself.
    public struct ChangeNotification: Sendable, Equatable {
        public var pid: Int32
        public var userID: UUID
        public var cursor: String

        /// The line's change notification, if it is one.
        init?(pid: Int32, line: [UInt8]) {
            guard let message = try? JSONValue(parsing: String(decoding: line, as: UTF8.self)),
                  message["method"]?.stringValue == "changes", message["id"] == nil,
                  let user = message["params"]?["user_id"]?.stringValue.flatMap(UUID.init(uuidString:)),
                  let cursor = message["params"]?["cursor"]?.stringValue else { return nil }
            self.pid = pid
            userID = user
            self.cursor = cursor
        }
    }

    /// A stdout line that answers no call and is not a change notification: a notification
    /// from a worker of a kind this client does not know yet.
    public struct Notification: Sendable {
        public var pid: Int32
        public var line: String
        /// The line parsed, if it is JSON.
        public var json: JSONValue? { try? JSONValue(parsing: line) }
    }

    public let configuration: Configuration
    /// Every worker's stderr lines (JSON log lines), in order per worker.
    public let stderrLines: AsyncStream<WorkerLine>
    /// Stdout lines of the workers that answer no call, other than change notifications.
    public let notifications: AsyncStream<Notification>
    /// Every worker's change notifications (`changesSubscribe`). Subscriptions belong to a
    /// worker process: after a restart this client subscribes the users again, and the new
    /// worker notifies each once it listens (changes may have been missed meanwhile).
    public let changes: AsyncStream<ChangeNotification>

    private let stderrContinuation: AsyncStream<WorkerLine>.Continuation
    private let notificationContinuation: AsyncStream<Notification>.Continuation
    private let changeContinuation: AsyncStream<ChangeNotification>.Continuation
    private let slots: [Slot]
    private let lock = NSLock()
    private var nextSlot = 0
    private var closed = false

    /// Spawns `configuration.workers` workers (they connect to the database in the background).
    public init(configuration: Configuration) throws {
        precondition(configuration.workers >= 1, "HabitClient needs at least one worker")
        self.configuration = configuration
        (stderrLines, stderrContinuation) = AsyncStream.makeStream(of: WorkerLine.self, bufferingPolicy: .bufferingNewest(configuration.streamBuffer))
        (notifications, notificationContinuation) = AsyncStream.makeStream(of: Notification.self, bufferingPolicy: .bufferingNewest(configuration.streamBuffer))
        (changes, changeContinuation) = AsyncStream.makeStream(of: ChangeNotification.self, bufferingPolicy: .bufferingNewest(configuration.streamBuffer))
        let sinks = Slot.Sinks(configuration: configuration, stderr: stderrContinuation, notifications: notificationContinuation,
                               changes: changeContinuation)
        slots = (0..<configuration.workers).map { Slot(index: $0, sinks: sinks) }
        do {
            for slot in slots { try slot.start() }
        } catch {
            for slot in slots { slot.shutDown() }
            throw error
        }
    }

    deinit {
        // Closing stdin lets each worker answer what it accepted and exit.
        for slot in slots { slot.shutDown() }
        stderrContinuation.finish()
        notificationContinuation.finish()
        changeContinuation.finish()
    }

    /// The pids of the running workers, by slot (nil while one restarts).
    public var workerPIDs: [Int32?] { slots.map { $0.currentPID } }

    /// The worker slot `params` go to: by `user_id` if there is one, else the next in turn.
    public func slot(for params: JSONObject?) -> Int {
        if let user = params?["user_id"]?.stringValue {
            // FNV-1a over the lowercased UUID text: stable across processes and restarts.
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in user.lowercased().utf8 {
                hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            }
            return Int(hash % UInt64(slots.count))
        }
        return lock.withLock {
            defer { nextSlot = (nextSlot + 1) % slots.count }
            return nextSlot
        }
    }

    /// Sends a request to the worker of its user and returns the result. Throws
    /// `HabitClientError`: `.rpc` for an error answer, `.unknownOutcome` if the worker died
    /// (or the task was cancelled) before answering — retried only when `options.retry`
    /// allows it for a retry-safe method (`HabitMethods.isRetrySafe`). A request that was
    /// not sent at all (the worker had just died) waits for the restart and is sent there.
    public func call(method: String, params: JSONObject?, options: CallOptions) async throws -> JSONValue {
        let slot = slots[slot(for: params)]
        var retries = 0
        var resends = 0
        while true {
            let connection = try await slot.connection()
            do {
                let result = try await connection.call(method: method, params: params, options: options)
                slot.noteSubscription(method: method, params: params, result: result)
                return result
            } catch let error as HabitClientError {
                switch error {
                case .notSent where resends < 3:
                    // Nothing reached the worker: sending it to the restarted one is not a retry.
                    resends += 1
                case .unknownOutcome(_, .workerExited), .unknownOutcome(_, .writeFailed):
                    guard retries < options.retry.maximumRetries, HabitMethods.isRetrySafe(method: method, params: params) else { throw error }
                    retries += 1
                default:
                    throw error
                }
            }
        }
    }

    /// The callback layer: hands the request to its user's worker (waiting for a restart if
    /// that worker just died) and returns once it is written, or queued behind lines being
    /// written; `completion` gets the answer later, on that worker's stdout thread. Nothing
    /// is retried here.
    public func send(method: String, params: JSONObject?, options: CallOptions = CallOptions(),
                     completion: @escaping WorkerConnection.Completion) async throws {
        let connection = try await slots[slot(for: params)].connection()
        try connection.send(method: method, params: params, options: options, completion: completion)
    }

    /// Calls sent and not yet answered, over all workers.
    public var inFlight: Int { slots.reduce(0) { $0 + ($1.current?.inFlight ?? 0) } }

    /// Closes every worker's stdin: each answers what it accepted and exits. Workers still
    /// running after `timeout` are killed, and their unanswered calls fail with
    /// `unknownOutcome(.closed)`. Calls made after `close()` throw `.closed`. Returns when
    /// every worker exited and every call ended.
    public func close(timeout: Duration = .seconds(10)) async {
        lock.withLock { closed = true }
        let connections = slots.compactMap { $0.close() }
        await withTaskGroup(of: Void.self) { group in
            for connection in connections {
                group.addTask {
                    connection.markClosing()
                    connection.closeInput()
                    // A Dispatch timer, not a sleeping task: callers that keep the cooperative
                    // pool's few threads busy must not stretch the promised timeout.
                    let killer = DispatchWorkItem { connection.terminate(signal: SIGKILL) }
                    DispatchQueue.global().asyncAfter(deadline: .now() + timeout.dispatchInterval, execute: killer)
                    _ = await connection.exited()
                    await connection.outputEnd()
                    killer.cancel()
                }
            }
        }
        stderrContinuation.finish()
        notificationContinuation.finish()
        changeContinuation.finish()
    }
}

/// What `HabitClient` may do when a call ends with `unknownOutcome` because its worker died.
public struct RetryPolicy: Sendable, Equatable {
    /// Resends after a crash, only for retry-safe methods (`HabitMethods.isRetrySafe`).
    public var maximumRetries: Int

    /// Never resend (the default): the caller decides.
    public static let never = RetryPolicy(maximumRetries: 0)
    /// Resend a retry-safe method up to `retries` times on the restarted worker.
    public static func retrySafe(retries: Int = 1) -> RetryPolicy { RetryPolicy(maximumRetries: retries) }
}

// MARK: - A worker slot

extension HabitClient {
    /// One worker and its replacements: restarted with backoff after it dies.
    final class Slot: @unchecked Sendable { // vars under `lock`
        struct Sinks: Sendable {
            let configuration: Configuration
            let stderr: AsyncStream<WorkerLine>.Continuation
            let notifications: AsyncStream<Notification>.Continuation
            let changes: AsyncStream<ChangeNotification>.Continuation
        }

        let index: Int
        private let sinks: Sinks
        private let lock = NSLock()
        private var connection: WorkerConnection?
        private var generation = 0
        private var waiters: [CheckedContinuation<WorkerConnection, any Error>] = []
        private var closed = false
        private var quickDeaths = 0
        private var startedAt = ContinuousClock.now
        /// Users subscribed (changes.subscribe answered true) on this slot's worker: subscribed
        /// again on its replacement.
        private var subscribed: Set<UUID> = []

        init(index: Int, sinks: Sinks) {
            self.index = index
            self.sinks = sinks
        }

        var currentPID: Int32? { lock.withLock { connection?.pid } }
        var current: WorkerConnection? { lock.withLock { connection } }

        /// Spawns a worker and makes it current.
        func start() throws {
            let generation = lock.withLock {
                self.generation += 1
                return self.generation
            }
            let sinks = sinks
            let pidBox = PIDBox()
            let handlers = WorkerConnection.Handlers(
                stderrLine: { bytes in
                    let line = WorkerLine(pid: pidBox.pid, text: String(decoding: bytes, as: UTF8.self))
                    sinks.configuration.stderrHandler?(line)
                    sinks.stderr.yield(line)
                },
                otherLine: { bytes in
                    if let change = ChangeNotification(pid: pidBox.pid, line: bytes) {
                        sinks.changes.yield(change)
                    } else {
                        sinks.notifications.yield(Notification(pid: pidBox.pid, line: String(decoding: bytes, as: UTF8.self)))
                    }
                },
                outputEnded: { [weak self] in self?.died(generation: generation) })
            let started = try WorkerConnection(command: sinks.configuration.command,
                                               options: .init(maxLineBytes: sinks.configuration.maxLineBytes), handlers: handlers)
            pidBox.pid = started.pid
            lock.lock()
            if closed || generation != self.generation {
                lock.unlock()
                started.closeInput()
                started.terminate(signal: SIGKILL)
                return
            }
            connection = started
            startedAt = .now
            let waiting = waiters
            waiters = []
            let resubscribe = subscribed
            lock.unlock()
            // Sent before any waiting call, so a subscribed user's notifications resume first;
            // the answers are not needed (a failure shows in the worker's log).
            for user in resubscribe {
                _ = try? started.send(method: "changes.subscribe", params: ["user_id": .string(user.uuidString.lowercased())],
                                      completion: { _ in })
            }
            for waiter in waiting { waiter.resume(returning: started) }
        }

        /// Remembers a successful changes.subscribe / changes.unsubscribe of this slot's users.
        func noteSubscription(method: String, params: JSONObject?, result: JSONValue) {
            guard method == "changes.subscribe" || method == "changes.unsubscribe",
                  let user = params?["user_id"]?.stringValue.flatMap(UUID.init(uuidString:)),
                  case .bool(let isSubscribed)? = result["subscribed"] else { return }
            lock.withLock {
                if isSubscribed { subscribed.insert(user) } else { subscribed.remove(user) }
            }
        }

        /// The current worker, waiting for a restart if it died.
        func connection() async throws -> WorkerConnection {
            try await withCheckedThrowingContinuation { continuation in
                lock.lock()
                if closed {
                    lock.unlock()
                    continuation.resume(throwing: HabitClientError.closed)
                } else if let connection, !connection.outputHasEnded {
                    lock.unlock()
                    continuation.resume(returning: connection)
                } else {
                    waiters.append(continuation)
                    lock.unlock()
                }
            }
        }

        /// The worker of `generation` stopped answering: restart after the backoff.
        private func died(generation: Int) {
            lock.lock()
            guard !closed, generation == self.generation else {
                lock.unlock()
                return
            }
            connection = nil
            if ContinuousClock.now - startedAt < sinks.configuration.stableAfter {
                quickDeaths += 1
            } else {
                quickDeaths = 0
            }
            let delay = backoff(afterQuickDeaths: quickDeaths)
            lock.unlock()
            scheduleRestart(after: delay)
        }

        private func backoff(afterQuickDeaths count: Int) -> Duration {
            var delay = sinks.configuration.restartBackoff
            for _ in 0..<max(0, count - 1) where delay < sinks.configuration.maximumRestartBackoff { delay *= 2 }
            return min(delay, sinks.configuration.maximumRestartBackoff)
        }

        private func scheduleRestart(after delay: Duration) {
            Task { [weak self] in
                try? await Task.sleep(for: delay)
                guard let self else { return }
                do {
                    try self.start()
                } catch {
                    self.startFailed(error)
                }
            }
        }

        /// Spawning failed (executable gone?): the callers waiting learn why; try again later.
        private func startFailed(_ error: any Error) {
            lock.lock()
            let waiting = waiters
            waiters = []
            quickDeaths += 1
            let closed = closed
            let next = backoff(afterQuickDeaths: quickDeaths)
            lock.unlock()
            for waiter in waiting { waiter.resume(throwing: error) }
            if !closed { scheduleRestart(after: next) }
        }

        /// Stops restarting, fails the callers waiting for a restart; the current worker.
        func close() -> WorkerConnection? {
            lock.lock()
            closed = true
            let waiting = waiters
            waiters = []
            let current = connection
            lock.unlock()
            for waiter in waiting { waiter.resume(throwing: HabitClientError.closed) }
            return current
        }

        /// `close()` and end the worker's stdin without waiting.
        func shutDown() {
            close()?.closeInput()
        }
    }

    /// The pid, set right after the spawn (a line read before that reports pid 0).
    final class PIDBox: @unchecked Sendable { // `value` under `lock`
        private let lock = NSLock()
        private var value: Int32 = 0
        var pid: Int32 {
            get { lock.withLock { value } }
            set { lock.withLock { value = newValue } }
        }
    }
}

extension Duration {
    /// The duration for Dispatch, in nanoseconds (rounded down; negative → 0).
    var dispatchInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        let nanoseconds = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if seconds < 0 { return .nanoseconds(0) }
        if nanoseconds.overflow { return .never }
        return .nanoseconds(Int(nanoseconds.partialValue + attoseconds / 1_000_000_000))
    }
}
