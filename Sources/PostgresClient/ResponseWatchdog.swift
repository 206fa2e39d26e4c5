import CLibPQ
import Foundation

/// A client-side bound on one round trip, for waits the server's `statement_timeout` does not
/// cover. The one that matters: with synchronous replication, a commit waits for the standby
/// after the statement's timeout was disabled (PostgreSQL's finish_xact_command turns it off
/// before committing), so with the standby gone a COMMIT waits forever. Past `cancelAfter` the
/// watchdog sends a cancel request (PQcancel, over a connection of its own); the server then
/// stops waiting, commits locally and says so in a WARNING (`SessionState.noteNotice`). A round
/// trip still unanswered after as long again (a server that cannot even take a cancel request)
/// has its socket shut down: libpq reads end-of-file and the connection is reported lost.
final class ResponseWatchdog: @unchecked Sendable {
    private let lock = NSLock()
    /// nil once freed; used under `lock` only (PQcancel may run on the timer's thread while the
    /// connection's thread disarms).
    private var cancel: OpaquePointer?
    private let socket: Int32
    /// Bumped by every disarm: a timer armed for an earlier round trip does nothing.
    private var generation = 0
    private let queue = DispatchQueue(label: "habit.response-watchdog")

    init?(handle: OpaquePointer) {
        guard let cancel = PQgetCancel(handle) else { return nil }
        self.cancel = cancel
        socket = PQsocket(handle)
    }

    deinit { free() }

    /// Guards the round trip that `body` waits for.
    func guarding<Value>(after limit: Duration, _ body: () throws -> Value) rethrows -> Value {
        let armed = lock.withLock { generation }
        let nanoseconds = Int(limit.components.seconds) * 1_000_000_000 + Int(limit.components.attoseconds / 1_000_000_000)
        queue.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [self] in
            guard sendCancel(ifStill: armed) else { return }
            queue.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [self] in abandon(ifStill: armed) }
        }
        defer { lock.withLock { generation += 1 } }
        return try body()
    }

    private func sendCancel(ifStill armed: Int) -> Bool {
        lock.withLock {
            guard armed == generation, let cancel else { return false }
            var errorBuffer = [CChar](repeating: 0, count: 256)
            _ = PQcancel(cancel, &errorBuffer, Int32(errorBuffer.count))
            return true
        }
    }

    private func abandon(ifStill armed: Int) {
        lock.withLock {
            // The connection's thread is still inside the round trip (it bumps the generation
            // under this lock when it returns), so the socket is still libpq's, open.
            guard armed == generation, cancel != nil, socket >= 0 else { return }
            _ = shutdown(socket, Int32(SHUT_RDWR))
        }
    }

    /// Before PQfinish or PQreset: no cancel or shutdown may reach a closed or reused socket.
    func free() {
        lock.withLock {
            generation += 1
            if let cancel { PQfreeCancel(cancel) }
            cancel = nil
        }
    }
}
