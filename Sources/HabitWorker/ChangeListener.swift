import Foundation
import Glibc
import HabitStore
import JSONRPC
import Logging
import PostgresClient

/// `changes.subscribe`: tells the worker's reader (a gateway) when a subscribed user's data
/// changed, by anyone — this worker, another one, psql. Subscriptions belong to the worker
/// process, not to a client of the gateway (docs/protocol.md, "Change notifications").
///
/// Two threads of its own, started by the first subscribe:
/// - `habit-listen` holds one connection (`--listen-url`), opened while somebody is subscribed
///   and closed when the last one leaves, and polls: every `window` it reads, in one statement,
///   the change numbers of the subscribed users whose clocks moved past the last number it
///   recorded (`habit.changed_clocks`, by the users' notification tokens, sql/0026). Writers
///   send nothing: a NOTIFY serialised every writer on PostgreSQL's notification-queue lock
///   (held through the standby's confirmation under synchronous replication) and cannot cross
///   Citus nodes. The thread learns the token of each user it subscribes (`habit.change_token`,
///   as the user). A user's first poll after their subscribe, and everyone's after a
///   (re)connect, records the number of now whatever it is: changes may have been committed
///   while nobody polled. After a loss it reconnects with backoff.
/// - `habit-notify` writes the notifications. Per user, the first change after a quiet
///   `window` goes out at once; later ones within the window are folded into one, with the
///   latest seq, written when the window ends. Pending notifications are one entry per user,
///   so a reader that stops reading stdout blocks this thread only and costs a bounded amount
///   of memory.
final class ChangeListener: @unchecked Sendable { // state under `state`; the connection is the listen thread's

    struct Settings: Sendable {
        /// libpq conninfo or URL of a server or a pool (any mode: each poll is one statement).
        var connectionString: String
        var connectTimeoutSeconds: Int = 3
        /// At most one notification per user per window (ms); the clocks are polled once a window.
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
        /// The user's notification token, the key of the poll (nil: not learnt yet). A token
        /// never changes (sql/0025), so it is kept across reconnects.
        var token: UUID?
        /// The largest change number read from the database and recorded (-1: none yet).
        var confirmed: Int64 = -1
        /// The next poll records this user's number whatever it is (subscribed, or reconnected,
        /// since the last poll that saw the clock).
        var fresh = true
    }

    private let settings: Settings
    private let transport: WorkerTransport
    private let logger: Logger
    private let wake = WakePipe()

    private let state = NSCondition()
    private var subscribers: [UUID: Subscriber] = [:]
    /// Notification token → subscribed user.
    private var tokens: [UUID: UUID] = [:]
    /// Subscribed users whose token is still to be read, with the earliest time to try (uptime
    /// ns): a failed read is tried again later, not only after a reconnect. Kept apart from
    /// `subscribers` so a wake scans only these, never every subscriber.
    private var needingToken: [UUID: UInt64] = [:]
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
        if subscribers[user] == nil, !stopping {
            subscribers[user] = Subscriber()
            needingToken[user] = 0
        }
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
        let gone = subscribers.removeValue(forKey: user)
        if let token = gone?.token { tokens[token] = nil }
        needingToken[user] = nil
        let removed = gone != nil
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

    /// A change of `user` read from the database (ignored unless subscribed, and, when
    /// `onlyNewer`, unless its number is larger than the last one recorded): written at once
    /// after a quiet window, else folded into the one written when the window ends.
    private func record(_ user: UUID, _ change: SyncCursor, onlyNewer: Bool) {
        state.lock()
        defer { state.unlock() }
        guard var subscriber = subscribers[user] else { return }
        if onlyNewer && change.seq <= subscriber.confirmed { return }
        // A (re)connect's reading is the truth now, even below an earlier one (a restored database).
        subscriber.confirmed = onlyNewer ? max(subscriber.confirmed, change.seq) : change.seq
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

    // MARK: - The listen thread

    private func listen() {
        var connection: Connection?
        var backoff = settings.firstBackoffMilliseconds
        var nextAttempt = DispatchTime.now()
        var nextPoll = DispatchTime.now()
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
                waitForWake(timeoutMilliseconds: -1)
                continue
            }
            guard let open = connection else {
                let now = DispatchTime.now()
                if now < nextAttempt {
                    waitForWake(timeoutMilliseconds: Self.milliseconds(from: now, to: nextAttempt))
                    continue
                }
                do {
                    connection = try openPolling()
                    backoff = settings.firstBackoffMilliseconds
                    nextPoll = .now()
                } catch {
                    failed(reason: "connect_failed", error: error)
                    nextAttempt = .now() + .milliseconds(backoff)
                    backoff = min(backoff * 2, settings.longestBackoffMilliseconds)
                }
                continue
            }
            // A subscribe wakes the thread: the new user's token is learnt and their clock read
            // at once (their first notification, the cursor of now), not a window later.
            let now = DispatchTime.now()
            let woken = now < nextPoll && waitForWake(timeoutMilliseconds: Self.milliseconds(from: now, to: nextPoll))
            do {
                let learnt = try learnTokens(on: open)
                if woken && !learnt { continue } // nothing new to read before the window ends
                let started = DispatchTime.now()
                try poll(on: open, onlyFresh: woken)
                // Polls take at most a fifth of the time, however many users are subscribed.
                let spent = DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds
                if !woken {
                    nextPoll = started + .nanoseconds(Int(max(windowNanoseconds, spent * 5)))
                }
            } catch {
                close(open, because: error)
                connection = nil
                nextAttempt = .now() // once at once: a terminated backend, a failover
            }
        }
    }

    private static func milliseconds(from now: DispatchTime, to then: DispatchTime) -> Int {
        Int((then.uptimeNanoseconds - min(then.uptimeNanoseconds, now.uptimeNanoseconds)) / 1_000_000) + 1
    }

    /// Connects; every subscribed user's next poll records the number of now, since changes may
    /// have been committed while nobody polled.
    private func openPolling() throws -> Connection {
        let connection = try Connection(settings.connectionString, applicationName: "habit-listen",
                                        connectTimeoutSeconds: settings.connectTimeoutSeconds, preparedStatements: .off)
        if settings.store.statementTimeoutMilliseconds > 0 {
            // As the pool's connections: a poll the server never answers (a host gone without a
            // FIN, a frozen backend) is cancelled, then abandoned, and the thread reconnects,
            // instead of waiting for TCP to give up while nobody is notified.
            connection.responseTimeout = .milliseconds(settings.store.statementTimeoutMilliseconds + 1_000)
        }
        state.withLock {
            status.listening = true
            for user in subscribers.keys { subscribers[user]?.fresh = true }
            for user in needingToken.keys { needingToken[user] = 0 }
        }
        logger.info("polling for changes")
        return connection
    }

    /// A user's result read on the listen connection: a lost connection throws (the caller
    /// reconnects); another failure (a bug, or a role without access) is logged and gives
    /// `fallback`.
    private func checked<Value>(_ result: Result<Value, Error>, fallback: Value?) throws -> Value? {
        switch result {
        case .success(let value):
            return value
        case .failure(let error):
            if let postgres = error as? PostgresError, postgres.isConnectionLost { throw error }
            logger.error("change listener: reading a user's notification token or clock failed", metadata: ["error": "\(error)"])
            return fallback
        }
    }

    /// Learns the notification tokens of the subscribed users whose token is not known on this
    /// connection, in one round trip; true if it ran statements.
    private func learnTokens(on connection: Connection) throws -> Bool {
        let users: [UUID] = state.withLock {
            let now = DispatchTime.now().uptimeNanoseconds
            return needingToken.filter { $0.value <= now }.map(\.key)
        }
        guard !users.isEmpty else { return false }
        let results = try SyncRepository(connection: connection, settings: settings.store).changeTokens(users: users)
        for (user, result) in zip(users, results) {
            let token = try checked(result, fallback: nil)
            state.withLock {
                guard subscribers[user] != nil else { return } // unsubscribed meanwhile
                if let token {
                    subscribers[user]?.token = token
                    tokens[token] = user
                    needingToken[user] = nil
                } else {
                    // A timeout or conflict (a first write holding the new clock row): later.
                    needingToken[user] = DispatchTime.now().uptimeNanoseconds
                        + UInt64(settings.longestBackoffMilliseconds) * 1_000_000
                }
            }
        }
        return true
    }

    /// Reads, in one statement, the numbers of the subscribed users' clocks that moved past the
    /// last one recorded (every fresh user's, whatever it is; `onlyFresh`: only theirs), and
    /// records them.
    private func poll(on connection: Connection, onlyFresh: Bool) throws {
        let known: [(token: UUID, known: Int64?)] = state.withLock {
            subscribers.values.compactMap { subscriber in
                guard let token = subscriber.token, subscriber.fresh || !onlyFresh else { return nil }
                return (token, subscriber.fresh ? nil : subscriber.confirmed)
            }
        }
        guard !known.isEmpty else { return }
        let store = SyncRepository(connection: connection, settings: settings.store)
        let changed = try store.changedClocks(known)
        for (token, seq) in changed {
            let found: (user: UUID, fresh: Bool)? = state.withLock {
                guard let user = tokens[token], let subscriber = subscribers[user] else { return nil }
                subscribers[user]?.fresh = false
                return (user, subscriber.fresh)
            }
            if let found { record(found.user, store.cursor(user: found.user, seq: seq), onlyNewer: !found.fresh) }
        }
    }

    /// Closes the connection: nobody is subscribed any more, or it was lost (`error`).
    private func close(_ connection: Connection, because error: Error?) {
        if let error {
            failed(reason: "connection_lost", error: error)
        } else {
            logger.info("stopped polling for changes")
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

    /// Waits until the wake pipe was written to (true) or the timeout (ms; negative: none)
    /// passed (false); drains the wake pipe.
    @discardableResult
    private func waitForWake(timeoutMilliseconds: Int) -> Bool {
        var descriptor = pollfd(fd: wake.readEnd, events: Int16(POLLIN), revents: 0)
        _ = Glibc.poll(&descriptor, 1, Int32(clamping: timeoutMilliseconds))
        guard descriptor.revents != 0 else { return false }
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(wake.readEnd, &buffer, buffer.count) > 0 {}
        return true
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
