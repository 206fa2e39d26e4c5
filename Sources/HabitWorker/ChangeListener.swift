import Foundation
import HabitStore
import JSONRPC
import Logging
import PostgresClient

/// `changes.subscribe`: tells the worker's reader (a gateway) when a subscribed user's data
/// changed, by anyone — this worker, another one, psql. Subscriptions belong to the worker
/// process, not to a client of the gateway (docs/protocol.md, "Change notifications").
///
/// Two threads of its own, started by the first subscribe:
/// - `habit-listen` holds the one LISTEN connection (`--listen-url`), opened while somebody is
///   subscribed and closed when the last one leaves. It waits with poll(2) on the connection's
///   socket and a wake pipe, reads NOTIFYs (`habit_changes`, payload "<user_id> <seq>", sent
///   at commit by `habit.next_change_seq`), and records each for its user if subscribed. After
///   a loss it reconnects with backoff; every (re)connect notifies every subscribed user,
///   because changes may have been committed while nobody listened.
/// - `habit-notify` writes the notifications. Per user, the first change after a quiet
///   `window` goes out at once; later ones within the window are folded into one, with the
///   latest seq, written when the window ends. Pending notifications are one entry per user,
///   so a reader that stops reading stdout blocks this thread only (never the listener, whose
///   NOTIFY queue would grow in the server) and costs a bounded amount of memory.
final class ChangeListener: @unchecked Sendable { // state under `state`; the connection is the listen thread's
    static let channel = "habit_changes"

    struct Settings: Sendable {
        /// libpq conninfo or URL of a server (or a session-mode pool): LISTEN needs a session.
        var connectionString: String
        var connectTimeoutSeconds: Int = 3
        /// At most one notification per user per window (ms).
        var windowMilliseconds: Int = 200
        /// For reading a user's cursor after a reconnect.
        var store = StoreSettings()
        /// Reconnect delays double from the first to the longest (ms).
        var firstBackoffMilliseconds: Int = 250
        var longestBackoffMilliseconds: Int = 5_000
    }

    /// What the health socket shows.
    struct Status: Sendable {
        var subscribers = 0
        var listening = false
        /// ISO 8601 (UTC) and why, of the last failure to connect or the last loss.
        var lastError: (at: String, reason: String)?
    }

    private struct Subscriber {
        /// When the last notification was written (uptime ns; 0: never).
        var lastSent: UInt64 = 0
        /// The caught-up cursor of the latest change not yet written.
        var pending: SyncCursor?
        var due: UInt64 = 0
    }

    private let settings: Settings
    private let transport: WorkerTransport
    private let logger: Logger
    private let wake = WakePipe()

    private let state = NSCondition()
    private var subscribers: [UUID: Subscriber] = [:]
    /// Users with a pending notification, in the order they got it.
    private var scheduled: [UUID] = []
    private var status = Status()
    private var started = false
    private var stopping = false
    private let listenerDone = DispatchGroup()
    private let writerDone = DispatchGroup()

    init(settings: Settings, transport: WorkerTransport, logger: Logger) {
        self.settings = settings
        self.transport = transport
        self.logger = logger
        _ = fcntl(wake.readEnd, F_SETFL, O_NONBLOCK) // drained without blocking
    }

    // MARK: - Subscriptions (any thread)

    /// Subscribes `user`; true. Succeeds also while the listen connection is down (it is
    /// being reopened; the user is notified once it is up).
    func subscribe(_ user: UUID) -> Bool {
        state.lock()
        let first = subscribers.isEmpty
        if subscribers[user] == nil, !stopping { subscribers[user] = Subscriber() }
        status.subscribers = subscribers.count
        let start = !started && !stopping
        if start { started = true }
        state.unlock()
        if start { startThreads() }
        if first { wake.wake() } // the listen thread opens its connection
        return true
    }

    /// Unsubscribes `user` (nothing pending is written); false, the state after the call.
    func unsubscribe(_ user: UUID) -> Bool {
        state.lock()
        let removed = subscribers.removeValue(forKey: user) != nil
        status.subscribers = subscribers.count
        let last = removed && subscribers.isEmpty
        state.unlock()
        if last { wake.wake() } // the listen thread closes its connection
        return false
    }

    var currentStatus: Status { state.withLock { status } }

    /// Stops both threads (the worker is exiting); notifications not yet written are dropped.
    /// Waits for the listen thread, and for the writer at most a second.
    func stop() {
        state.lock()
        stopping = true
        let wasStarted = started
        state.broadcast()
        state.unlock()
        guard wasStarted else { return }
        wake.wake()
        listenerDone.wait() // its connection closed (a connect under way ends within the connect timeout)
        // The writer may be blocked on a stdout nobody reads: the exit must not wait for it.
        _ = writerDone.wait(timeout: .now() + .seconds(1))
    }

    private func startThreads() {
        for (name, listens) in [("habit-listen", true), ("habit-notify", false)] {
            let done = listens ? listenerDone : writerDone
            done.enter()
            let thread = Thread { [self] in
                if listens { listen() } else { writeNotifications() }
                done.leave()
            }
            thread.name = name
            thread.start()
        }
    }

    // MARK: - Recording changes (listen thread)

    /// A change of `user` (ignored unless subscribed): written at once after a quiet window,
    /// else folded into the one written when the window ends.
    private func record(_ user: UUID, _ change: SyncCursor) {
        state.lock()
        defer { state.unlock() }
        guard var subscriber = subscribers[user] else { return }
        if let pending = subscriber.pending {
            // The latest change wins (NOTIFYs of one user arrive in commit order; a cursor read
            // after a reconnect covers every change before it).
            if change.seq >= pending.seq { subscriber.pending = change }
        } else {
            subscriber.pending = change
            subscriber.due = max(DispatchTime.now().uptimeNanoseconds, subscriber.lastSent + windowNanoseconds)
            scheduled.append(user)
            state.signal()
        }
        subscribers[user] = subscriber
    }

    private var windowNanoseconds: UInt64 { UInt64(max(0, settings.windowMilliseconds)) * 1_000_000 }

    /// "<uuid> <seq>" (`habit.next_change_seq`); anything else is logged and ignored.
    static func parse(payload: String) -> (UUID, Int64)? {
        let parts = payload.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 2, let user = UUID(canonical: String(parts[0])), let seq = Int64(parts[1]), seq >= 0 else { return nil }
        return (user, seq)
    }

    // MARK: - The listen thread

    private func listen() {
        var connection: Connection?
        var backoff = settings.firstBackoffMilliseconds
        var nextAttempt = DispatchTime.now()
        defer { connection?.close() }
        while true {
            state.lock()
            let (stop, wanted) = (stopping, !subscribers.isEmpty)
            state.unlock()
            if stop { return }
            if !wanted {
                if let open = connection {
                    close(open, because: nil)
                    connection = nil
                }
                waitForWake(socket: -1, timeoutMilliseconds: -1)
                continue
            }
            guard let open = connection else {
                let now = DispatchTime.now()
                if now < nextAttempt {
                    waitForWake(socket: -1, timeoutMilliseconds: Int((nextAttempt.uptimeNanoseconds - now.uptimeNanoseconds) / 1_000_000) + 1)
                    continue
                }
                do {
                    connection = try openListening()
                    backoff = settings.firstBackoffMilliseconds
                } catch {
                    failed(reason: "connect_failed", error: error)
                    nextAttempt = .now() + .milliseconds(backoff)
                    backoff = min(backoff * 2, settings.longestBackoffMilliseconds)
                }
                continue
            }
            // A timeout also reads: a TLS connection may hold decrypted bytes poll cannot see.
            waitForWake(socket: open.socketDescriptor, timeoutMilliseconds: 1_000)
            do {
                let store = SyncRepository(connection: open, settings: settings.store)
                for notification in try open.consumeNotifications() where notification.channel == Self.channel {
                    guard let (user, seq) = Self.parse(payload: notification.payload) else {
                        logger.warning("unexpected change notification payload", metadata: ["bytes": "\(notification.payload.utf8.count)"])
                        continue
                    }
                    record(user, store.cursor(user: user, seq: seq))
                }
            } catch {
                close(open, because: error)
                connection = nil
                nextAttempt = .now() // once at once: a terminated backend, a failover
            }
        }
    }

    /// Connects, LISTENs, then notifies every subscribed user with the cursor of now: changes
    /// committed while nobody listened are covered (LISTEN first, so none falls in between).
    private func openListening() throws -> Connection {
        let connection = try Connection(settings.connectionString, applicationName: "habit-listen",
                                        connectTimeoutSeconds: settings.connectTimeoutSeconds, preparedStatements: .off)
        do {
            try connection.execute("LISTEN habit_changes") // Self.channel
            state.withLock {
                status.listening = true
            }
            logger.info("listening for changes")
            for user in state.withLock({ Array(subscribers.keys) }) {
                record(user, try currentCursor(user, on: connection))
            }
            return connection
        } catch {
            connection.close()
            state.withLock { status.listening = false }
            throw error
        }
    }

    /// The user's cursor now; if reading it fails short of losing the connection (a bug, or
    /// a role without access), the cursor of change 0, logged: the user is notified either way.
    private func currentCursor(_ user: UUID, on connection: Connection) throws -> SyncCursor {
        let store = SyncRepository(connection: connection, settings: settings.store)
        do {
            return try store.currentCursor(user: user)
        } catch let error as PostgresError where !error.isConnectionLost {
            logger.error("change listener: reading a cursor failed", metadata: ["error": "\(error)"])
            return store.cursor(user: user, seq: 0)
        }
    }

    /// Closes the connection: UNLISTEN first when nobody is subscribed any more (a clean end
    /// for a pooler in session mode), else it was lost (`error`).
    private func close(_ connection: Connection, because error: Error?) {
        if let error {
            failed(reason: "connection_lost", error: error)
        } else {
            _ = try? connection.execute("UNLISTEN habit_changes") // Self.channel
            logger.info("stopped listening for changes")
        }
        connection.close()
        state.withLock { status.listening = false }
    }

    private func failed(reason: String, error: Error) {
        state.withLock {
            status.listening = false
            status.lastError = (WorkerStatus.now(), reason)
        }
        logger.warning("change listener: \(reason == "connect_failed" ? "connect failed" : "connection lost")",
                       metadata: ["error": "\(error)"])
    }

    /// Waits until `socket` (if any) is readable, the wake pipe was written to, or the timeout
    /// (ms; negative: none) passed; drains the wake pipe.
    private func waitForWake(socket: Int32, timeoutMilliseconds: Int) {
        var descriptors = [pollfd(fd: wake.readEnd, events: Int16(POLLIN), revents: 0)]
        if socket >= 0 { descriptors.append(pollfd(fd: socket, events: Int16(POLLIN), revents: 0)) }
        _ = poll(&descriptors, nfds_t(descriptors.count), Int32(clamping: timeoutMilliseconds))
        if descriptors[0].revents != 0 {
            var buffer = [UInt8](repeating: 0, count: 64)
            while read(wake.readEnd, &buffer, buffer.count) > 0 {}
        }
    }

    // MARK: - The notify thread

    private func writeNotifications() {
        state.lock()
        while !stopping {
            let now = DispatchTime.now().uptimeNanoseconds
            var due: [(UUID, SyncCursor)] = []
            var later: [UUID] = []
            var next: UInt64?
            for user in scheduled {
                guard var subscriber = subscribers[user], let pending = subscriber.pending else { continue } // unsubscribed
                if subscriber.due <= now {
                    due.append((user, pending))
                    subscriber.pending = nil
                    subscriber.lastSent = now
                    subscribers[user] = subscriber
                } else {
                    later.append(user)
                    next = min(next ?? subscriber.due, subscriber.due)
                }
            }
            scheduled = later
            if due.isEmpty {
                if let next {
                    _ = state.wait(until: Date(timeIntervalSinceNow: Double(next - min(next, now)) / 1e9))
                } else {
                    state.wait()
                }
                continue
            }
            state.unlock()
            for (user, pending) in due {
                transport.write(line: Self.line(user: user, cursor: pending.text), beforeBlocking: nil)
            }
            state.lock()
        }
        state.unlock()
    }

    /// `{"jsonrpc":"2.0","method":"changes","params":{"user_id":…,"cursor":…}}`
    static func line(user: UUID, cursor: String) -> [UInt8] {
        JSONWriter.encode { json in
            json.object { json in
                json.key("jsonrpc"); json.string("2.0")
                json.key("method"); json.string("changes")
                json.key("params")
                json.object { json in
                    json.key("user_id"); json.string(user.uuidString.lowercased())
                    json.key("cursor"); json.string(cursor)
                }
            }
        }.bytes
    }
}
