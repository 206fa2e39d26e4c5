import CLibPQ

/// One NOTIFY delivered to a connection that LISTENs on its channel.
public struct PostgresNotification: Sendable, Equatable {
    public let channel: String
    public let payload: String
    /// The server process that sent it.
    public let senderPID: Int32
}

extension Connection {
    /// The connection's socket, for a thread that waits for notifications with poll(2) (libpq:
    /// PQsocket "obtains the file descriptor number of the connection socket to the server");
    /// -1 once closed. Valid until the connection is closed or reset.
    public var socketDescriptor: Int32 {
        guard let handle = try? liveHandle() else { return -1 }
        return PQsocket(handle)
    }

    /// Reads what the server sent without blocking and returns the notifications received,
    /// in order (libpq's documented way to wait for them: "use PQsocket to obtain the file
    /// descriptor … When the function indicates data is available, call PQconsumeInput, then
    /// check PQnotifies"). Notifications also gathered during earlier statements on this
    /// connection come first. Throws `.connectionLost` when the server is gone (the session is
    /// then ended, as after any failed call): the caller reconnects.
    ///
    /// Not for a TLS connection waited on with poll(2) alone: after PQconsumeInput, OpenSSL
    /// may hold decrypted bytes the socket no longer shows. Callers poll with a timeout and
    /// call this again when it expires.
    public func consumeNotifications() throws -> [PostgresNotification] {
        let handle = try liveHandle()
        // libpq: PQconsumeInput "normally returns 1 indicating 'no error', but returns 0 if
        // there was some kind of trouble (in which case PQerrorMessage can be consulted)".
        guard PQconsumeInput(handle) == 1, PQstatus(handle) == CONNECTION_OK else { throw connectionFailure(sql: nil) }
        var received: [PostgresNotification] = []
        // libpq: PQnotifies "returns the next notification from a list of unhandled
        // notification messages received from the server. It returns a null pointer if there
        // are no pending notifications"; each one "should be freed with PQfreemem".
        while let notify = PQnotifies(handle) {
            let item = notify.pointee
            received.append(PostgresNotification(channel: String(cString: item.relname), payload: String(cString: item.extra),
                                                  senderPID: item.be_pid))
            PQfreemem(notify)
        }
        // A FATAL while idle (the backend terminated, the server shutting down) arrives as a
        // notice before the socket closes: the session is over even if libpq has not noticed.
        if session.ended { throw connectionFailure(sql: nil) }
        return received
    }
}
