import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `habit serve` with stdin and stdout on named pipes the test holds, so the test decides
/// when (and whether) the worker's output is read — unlike `WorkerProcess`, whose reader
/// threads always drain stdout. Used to write thousands of requests while nobody reads.
///
/// The test opens both FIFOs read-write (which never blocks on Linux), so it counts as the
/// reader of stdout and the writer of stdin from the start; closing its stdin end is the
/// worker's EOF.
final class FifoWorker {
    let process: WorkerProcess
    private let directory: String
    private var input: Int32
    private let output: Int32
    private var pending: [UInt8] = []
    private var lineEnds: [Int] = []
    private var written = 0

    static func with(databaseURL: String, arguments: [String] = [], _ body: (FifoWorker) throws -> Void) throws {
        let worker = try FifoWorker(databaseURL: databaseURL, arguments: arguments)
        defer { worker.close() }
        try body(worker)
    }

    init(databaseURL: String, arguments: [String]) throws {
        var template = Array("/tmp/habit-fifo.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw FifoError.system("mkdtemp", errno) }
        directory = String(cString: made)
        let inPath = directory + "/in"
        let outPath = directory + "/out"
        guard mkfifo(inPath, 0o600) == 0, mkfifo(outPath, 0o600) == 0 else { throw FifoError.system("mkfifo", errno) }
        input = open(inPath, O_RDWR | O_CLOEXEC)
        output = open(outPath, O_RDWR | O_CLOEXEC)
        guard input >= 0, output >= 0 else { throw FifoError.system("open fifo", errno) }
        process = try WorkerProcess(
            executable: "/bin/sh",
            arguments: ["-c", #"exec "$0" "$@" <"$FIFO_IN" >"$FIFO_OUT""#, try WorkerProcess.binaryPath(), "serve",
                        "--database-url", databaseURL] + arguments,
            environment: WorkerProcess.childEnvironment(["FIFO_IN": inPath, "FIFO_OUT": outPath]))
    }

    /// Writes one line and reads one response line (blocking, hang guard `timeout`).
    func roundTrip(_ line: String, timeout: TimeInterval = 60) throws -> WorkerResponse {
        let bytes = Array(line.utf8) + [0x0A]
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(input, $0.baseAddress! + offset, bytes.count - offset) }
            if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { throw FifoError.system("write", errno) }
        }
        var received: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            var fd = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            let ready = poll(&fd, 1, Int32(timeout * 1_000))
            if ready == 0 { throw FifoError.hangGuard("no response to \(line.prefix(80))") }
            if ready < 0 { if errno == EINTR { continue }; throw FifoError.system("poll", errno) }
            let n = read(output, &byte, 1)
            if n < 0 { if errno == EINTR { continue }; throw FifoError.system("read", errno) }
            if n == 1 && byte == 0x0A { return try WorkerResponse(line: received) }
            if n == 1 { received.append(byte) }
        }
    }

    /// Writes `lines` (each ending in "\n") without blocking until the pipe refuses more
    /// bytes; returns how many whole lines went in. The rest is written by `drainWhileWriting`.
    func writeUntilBlocked(_ lines: [[UInt8]]) throws -> Int {
        pending = lines.flatMap { $0 }
        lineEnds = []
        var end = 0
        for line in lines {
            end += line.count
            lineEnds.append(end)
        }
        _ = fcntl(input, F_SETFL, fcntl(input, F_GETFL) | O_NONBLOCK)
        while written < pending.count {
            let n = pending.withUnsafeBytes { write(input, $0.baseAddress! + written, pending.count - written) }
            if n > 0 {
                written += n
            } else if n < 0 && errno == EINTR {
                continue
            } else if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                break
            } else {
                throw FifoError.system("write", errno)
            }
        }
        return lineEnds.filter { $0 <= written }.count
    }

    /// Reads responses on a background thread while writing the rest of the lines (blocking);
    /// returns once `expecting` response lines arrived (hang guard: `timeout` per read).
    func drainWhileWriting(expecting: Int, timeout: TimeInterval = 120) throws -> [WorkerResponse] {
        let collected = LockedBox<(responses: [WorkerResponse], error: Error?)>(([], nil))
        let done = DispatchSemaphore(value: 0)
        let output = self.output
        let thread = Thread {
            var buffer: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65_536)
            var count = 0
            defer { done.signal() }
            while count < expecting {
                var fd = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
                let ready = poll(&fd, 1, Int32(timeout * 1_000))
                if ready == 0 {
                    collected.withValue { $0.error = FifoError.hangGuard("no output for \(timeout) s after \(count) responses") }
                    return
                }
                if ready < 0 { if errno == EINTR { continue }; collected.withValue { $0.error = FifoError.system("poll", errno) }; return }
                let n = chunk.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
                if n < 0 { if errno == EINTR { continue }; collected.withValue { $0.error = FifoError.system("read", errno) }; return }
                buffer += chunk[0..<n]
                while let newline = buffer.firstIndex(of: 0x0A) {
                    let line = Array(buffer[..<newline])
                    buffer.removeSubrange(...newline)
                    count += 1
                    do {
                        let response = try WorkerResponse(line: line)
                        collected.withValue { $0.responses.append(response) }
                    } catch {
                        collected.withValue { $0.error = error }
                        return
                    }
                }
            }
        }
        thread.start()
        _ = fcntl(input, F_SETFL, fcntl(input, F_GETFL) & ~O_NONBLOCK)
        while written < pending.count {
            let n = pending.withUnsafeBytes { write(input, $0.baseAddress! + written, pending.count - written) }
            if n > 0 { written += n } else if n < 0 && errno == EINTR { continue } else { throw FifoError.system("write", errno) }
        }
        guard done.wait(timeout: .now() + timeout * Double(max(1, expecting / 1_000))) == .success else {
            throw FifoError.hangGuard("responses did not arrive")
        }
        return try collected.withValue { value in
            if let error = value.error { throw error }
            return value.responses
        }
    }

    /// Closes stdin (EOF) and waits for the worker to exit; returns its status.
    func finish(timeout: TimeInterval = 60) throws -> Int32? {
        if input >= 0 {
            Glibc.close(input)
            input = -1
        }
        return process.waitForExit(timeout: timeout)
    }

    func close() {
        if input >= 0 { Glibc.close(input); input = -1 }
        process.forceStop()
        Glibc.close(output)
        try? FileManager.default.removeItem(atPath: directory)
    }
}

enum FifoError: Error, CustomStringConvertible {
    case system(String, Int32)
    case hangGuard(String)
    var description: String {
        switch self {
        case .system(let call, let error): "\(call) failed: \(String(cString: strerror(error)))"
        case .hangGuard(let what): "hang guard: \(what)"
        }
    }
}
