import Foundation
import Glibc
import TestSupport

/// A relay between the clients that connect to it and the suite's server that counts round
/// trips: an exchange starts each time a client sends after the server last spoke (or for the
/// first time). A client that pipelines its statements and then waits costs one exchange
/// however many statements it sent; one that waits for an answer before sending the next costs
/// one per wait. PostgreSQL answers a pipeline only at its Sync (or a Flush), so the count does
/// not depend on how the client's bytes were split into writes.
///
/// Listens on a unix socket in a fresh directory (`conninfo`); relays to the server at
/// DATABASE_URL (a unix socket directory or a TCP host). Test code only: production code keeps
/// no counters.
final class RoundTripCounter: @unchecked Sendable {
    let directory: String
    let port = 5432
    private let listener: Int32
    private let upstream: (host: String, port: Int)
    private let lock = NSLock()
    private var exchanges = 0
    private var clientSpokeLast = false
    private var sockets: [Int32] = []
    private var closed = false

    init() throws {
        upstream = try PgBouncer.suiteServerAddress()
        var template = Array("/tmp/habit-rt.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw CounterError.system("mkdtemp", errno) }
        directory = String(cString: made)
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw CounterError.system("socket", errno) }
        var address = try Self.unixAddress("\(directory)/.s.PGSQL.\(port)")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(listener, 16) == 0 else { throw CounterError.system("bind/listen", errno) }
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    /// Conninfo settings that route a connection through this counter.
    var conninfo: [String: String] { ["host": directory, "port": String(port)] }

    /// Exchanges so far, over every connection through this counter.
    var roundTrips: Int { lock.withLock { exchanges } }

    /// The round trips `body` costs.
    func count(_ body: () throws -> Void) rethrows -> Int {
        let before = roundTrips
        try body()
        return roundTrips - before
    }

    /// Stops accepting and cuts every relayed connection. Idempotent.
    func close() {
        // Shut down only, under the lock: each relay pair closes its own sockets (also under the
        // lock) when both directions have ended, so no descriptor is touched after its close.
        let first = lock.withLock {
            guard !closed else { return false }
            closed = true
            for socket in sockets { shutdown(socket, Int32(SHUT_RDWR)) }
            return true
        }
        guard first else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        Glibc.close(listener)
        unlink("\(directory)/.s.PGSQL.\(port)")
        rmdir(directory)
    }

    /// A counter for the duration of `body`, closed on every path.
    static func with<Value>(_ body: (RoundTripCounter) throws -> Value) throws -> Value {
        let counter = try RoundTripCounter()
        defer { counter.close() }
        return try body(counter)
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else {
                if errno == EINTR { continue }
                return
            }
            guard let server = try? connectUpstream() else {
                Glibc.close(client)
                continue
            }
            let registered = lock.withLock {
                guard !closed else { return false }
                sockets += [client, server]
                return true
            }
            guard registered else {
                Glibc.close(client)
                Glibc.close(server)
                return
            }
            let pair = RelayPair(client: client, server: server)
            Thread { [self] in
                relay(from: client, to: server, clientSends: true)
                finish(pair)
            }.start()
            Thread { [self] in
                relay(from: server, to: client, clientSends: false)
                finish(pair)
            }.start()
        }
    }

    /// The two sockets of one relayed connection, closed by whichever direction ends last.
    private final class RelayPair: @unchecked Sendable {
        let client: Int32
        let server: Int32
        var running = 2
        init(client: Int32, server: Int32) {
            self.client = client
            self.server = server
        }
    }

    private func finish(_ pair: RelayPair) {
        lock.withLock {
            pair.running -= 1
            guard pair.running == 0 else { return }
            sockets.removeAll { $0 == pair.client || $0 == pair.server }
            Glibc.close(pair.client)
            Glibc.close(pair.server)
        }
    }

    /// Copies bytes one way until the source closes. The direction is recorded before the bytes
    /// are passed on, so by the time a client has read an answer the count includes its request.
    private func relay(from source: Int32, to destination: Int32, clientSends: Bool) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            lock.withLock {
                if clientSends, !clientSpokeLast { exchanges += 1 }
                clientSpokeLast = clientSends
            }
            var sent = 0
            while sent < count {
                // MSG_NOSIGNAL: a peer that is gone is EPIPE here, never a SIGPIPE for the test process.
                let written = buffer.withUnsafeBytes { send(destination, $0.baseAddress! + sent, count - sent, Int32(MSG_NOSIGNAL)) }
                if written < 0, errno == EINTR { continue }
                guard written > 0 else { break }
                sent += written
            }
            guard sent == count else { break }
        }
        shutdown(destination, Int32(SHUT_WR))
    }

    private func connectUpstream() throws -> Int32 {
        if upstream.host.hasPrefix("/") {
            let server = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            guard server >= 0 else { throw CounterError.system("socket", errno) }
            var address = try Self.unixAddress("\(upstream.host)/.s.PGSQL.\(upstream.port)")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard connected == 0 else {
                Glibc.close(server)
                throw CounterError.system("connect", errno)
            }
            return server
        }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(upstream.host, String(upstream.port), &hints, &found) == 0, let first = found else {
            throw CounterError.system("getaddrinfo", errno)
        }
        defer { freeaddrinfo(found) }
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let info = candidate {
            let server = socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
            if server >= 0 {
                if connect(server, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 { return server }
                Glibc.close(server)
            }
            candidate = info.pointee.ai_next
        }
        throw CounterError.system("connect", errno)
    }

    private static func unixAddress(_ path: String) throws -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        try withUnsafeMutableBytes(of: &address.sun_path) { field in
            guard bytes.count < field.count else { throw CounterError.pathTooLong(path) }
            field.copyBytes(from: bytes)
            field[bytes.count] = 0
        }
        return address
    }

    enum CounterError: Error {
        case system(String, Int32)
        case pathTooLong(String)
    }
}
