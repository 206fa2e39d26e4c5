import CLibPQ

/// How a thread waits while its connection waits for the server. The connection says what it
/// waits for; the strategy decides how the thread waits and what else it notices (psycopg keeps
/// this policy in `waiting.py`, apart from its connection).
///
/// Without a strategy a connection uses libpq's own blocking wait.
public protocol WaitStrategy: AnyObject {
    /// Blocks until `socket` is readable or has an error or hang-up (the connection then asks
    /// libpq, which reads what arrived and reports any failure).
    func waitUntilReadable(_ socket: Int32)
    /// The connection is about to block inside libpq, where no strategy can take part:
    /// synchronous calls (statements outside a pipeline, scripts, COPY, streaming, reconnecting)
    /// and every wait of a TLS or GSSAPI connection, whose decrypted bytes poll(2) cannot see.
    func willBlockInLibpq()
}

extension Connection {
    /// Runs `body` with `strategy` deciding how this thread waits while the connection waits for
    /// the server. For a thread that must notice something else while it waits (the worker's
    /// reading thread runs requests itself and hands reading over when more input arrives).
    public func waiting<Value>(with strategy: WaitStrategy, _ body: () throws -> Value) rethrows -> Value {
        let outer = waitStrategy
        waitStrategy = strategy
        defer { waitStrategy = outer }
        return try body()
    }
}

/// PQgetResult, waiting the strategy's way when there is one.
///
/// libpq: PQisBusy "returns 1 if a command is busy, that is, PQgetResult would block waiting
/// for input"; PQconsumeInput reads what arrived without blocking ("if input is available from
/// the server, consume it") and returns 0 on trouble, which PQgetResult then reports. Without a
/// strategy this is PQgetResult alone: libpq's own poll(2) on the socket, nothing added.
func nextResult(of handle: OpaquePointer, waitingWith wait: WaitStrategy?) -> OpaquePointer? {
    if let wait, PQisBusy(handle) == 1 {
        if PQsslInUse(handle) != 0 || PQgetgssctx(handle) != nil {
            // An encrypted connection may hold decrypted bytes in OpenSSL/GSSAPI while its
            // socket is empty: polling the socket could then sleep forever. Only libpq's wait knows.
            wait.willBlockInLibpq()
        } else {
            let socket = PQsocket(handle)
            while socket >= 0, PQisBusy(handle) == 1 {
                wait.waitUntilReadable(socket)
                guard PQconsumeInput(handle) == 1 else { break }
            }
        }
    }
    return PQgetResult(handle)
}
