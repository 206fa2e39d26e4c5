import Foundation
import PostgresClient

/// How the leading thread waits while its own request waits for PostgreSQL: it polls the
/// database socket together with `descriptors` (stdin and the wake pipe). The first time one of
/// them is readable or hung up, `onReadable` runs, once (the worker hands reading over to
/// another thread), and from then on only the socket is waited for. A wait inside libpq, where
/// no strategy can take part, runs `onReadable` before it starts.
final class InputWatchingWait: WaitStrategy {
    /// The socket's place first (filled in per wait), then the watched descriptors.
    private var watched: [pollfd]
    private let onReadable: () -> Void
    private var fired = false

    init(descriptors: [Int32], onReadable: @escaping () -> Void) {
        watched = [pollfd(fd: -1, events: Int16(POLLIN), revents: 0)]
            + descriptors.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        self.onReadable = onReadable
    }

    func waitUntilReadable(_ socket: Int32) {
        while !fired {
            watched[0].fd = socket
            for index in watched.indices { watched[index].revents = 0 }
            if poll(&watched, nfds_t(watched.count), -1) < 0 {
                if errno == EINTR { continue }
                fire() // cannot watch: hand over, then wait for the socket alone
                break
            }
            // poll(2) reports POLLHUP and POLLERR even when not asked for: a closed stdin fires too.
            if watched.dropFirst().contains(where: { $0.revents != 0 }) { fire() }
            if watched[0].revents != 0 { return }
        }
        var socketOnly = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        while poll(&socketOnly, 1, -1) < 0, errno == EINTR {}
    }

    func willBlockInLibpq() {
        fire()
    }

    private func fire() {
        guard !fired else { return }
        fired = true
        onReadable()
    }
}
