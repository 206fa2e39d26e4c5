import CLibPQ
import Foundation

/// A client-side bound on one round trip, for waits the server's `statement_timeout` does not
/// cover. The one that matters: with synchronous replication, a commit waits for the standby
/// after the statement's timeout was disabled (PostgreSQL's finish_xact_command turns it off
/// before committing), so with the standby gone a COMMIT waits forever. Past the limit the
/// watchdog sends a cancel request (PQcancel, over a connection of its own); the server then
/// stops waiting, commits locally and says so in a WARNING (`SessionState.noteNotice`). A round
/// trip still unanswered after as long again (a server that cannot even take a cancel request)
/// has its socket shut down: libpq reads end-of-file and the connection is reported lost.
///
/// Arming and disarming only write a deadline under a lock: one shared thread
/// (`WatchdogMonitor`) looks at every armed round trip five times a second, so a busy
/// connection pays no timer per round trip, and a limit is kept to within 0.2 s.
final class ResponseWatchdog: @unchecked Sendable {
    private let lock = NSLock()
    /// nil once freed. Used under `lock` only: PQcancel runs on the monitor's thread while the
    /// connection's thread may be disarming.
    private var cancel: OpaquePointer?
    private let socket: Int32
    /// The armed round trip's limit and when the next step is due; nil: nothing armed.
    private var limit: Duration = .zero
    private var due: ContinuousClock.Instant?
    private var cancelSent = false

    init?(handle: OpaquePointer) {
        guard let cancel = PQgetCancel(handle) else { return nil }
        self.cancel = cancel
        socket = PQsocket(handle)
        WatchdogMonitor.shared.watch(self)
    }

    deinit { free() }

    /// Guards the round trip that `body` waits for.
    func guarding<Value>(after limit: Duration, _ body: () throws -> Value) rethrows -> Value {
        lock.withLock {
            self.limit = limit
            due = .now + limit
            cancelSent = false
        }
        defer { lock.withLock { due = nil } }
        return try body()
    }

    /// The monitor's look: cancel a round trip past its limit, abandon one past twice that.
    fileprivate func check(at now: ContinuousClock.Instant) {
        lock.withLock {
            guard let due, now >= due, let cancel else { return }
            if !cancelSent {
                var errorBuffer = [CChar](repeating: 0, count: 256)
                _ = PQcancel(cancel, &errorBuffer, Int32(errorBuffer.count))
                cancelSent = true
                self.due = now + limit
            } else {
                // The connection's thread is still inside the round trip (it disarms under this
                // lock when it returns), so the socket is still libpq's, open.
                if socket >= 0 { _ = shutdown(socket, Int32(SHUT_RDWR)) }
                self.due = nil
            }
        }
    }

    /// Before PQfinish or PQreset: no cancel or shutdown may reach a closed or reused socket.
    func free() {
        lock.withLock {
            due = nil
            if let cancel { PQfreeCancel(cancel) }
            cancel = nil
        }
    }
}

/// The one thread that looks at every connection's `ResponseWatchdog`, started by the first.
final class WatchdogMonitor: @unchecked Sendable {
    static let shared = WatchdogMonitor()
    private let lock = NSLock()
    private var watched: [Weak] = []
    private var started = false

    private struct Weak {
        weak var watchdog: ResponseWatchdog?
    }

    func watch(_ watchdog: ResponseWatchdog) {
        let start: Bool = lock.withLock {
            watched.removeAll { $0.watchdog == nil }
            watched.append(Weak(watchdog: watchdog))
            defer { started = true }
            return !started
        }
        guard start else { return }
        let thread = Thread { [self] in
            while true {
                usleep(200_000)
                let now = ContinuousClock.now
                let current = lock.withLock { watched.compactMap(\.watchdog) }
                for watchdog in current { watchdog.check(at: now) }
            }
        }
        thread.name = "habit-response-watchdog"
        thread.start()
    }
}
