import Foundation

/// A pipe whose read end the line reader polls next to stdin: one byte written to it ends
/// the read loop like EOF. Written from signal handlers (write(2) is async-signal-safe)
/// and by the worker itself when stdout breaks.
public final class WakePipe: Sendable {
    public let readEnd: Int32
    let writeEnd: Int32

    public init() {
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
            _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
            _ = fcntl(fds[1], F_SETFL, O_NONBLOCK)
        }
        readEnd = fds[0]
        writeEnd = fds[1]
    }

    public func wake() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }
}

/// SIGTERM and SIGINT wake the reader, so a signal ends the read loop like EOF: in-flight
/// requests finish and are answered, then the worker exits 0. SIGPIPE is ignored so a
/// vanished reader shows up as EPIPE, not a crash.
public enum ShutdownSignals {
    nonisolated(unsafe) private static var writeEnd: Int32 = -1

    public static func install(waking pipe: WakePipe) {
        writeEnd = pipe.writeEnd
        signal(SIGPIPE, SIG_IGN)
        let handler: @convention(c) (Int32) -> Void = { _ in
            var byte: UInt8 = 1
            _ = write(ShutdownSignals.writeEnd, &byte, 1)
        }
        signal(SIGTERM, handler)
        signal(SIGINT, handler)
    }
}
