// Framing: bytes ↔ newline-delimited lines on raw file descriptors.
//
// Raw read(2)/write(2) instead of FileHandle: we need bounded buffering for hostile
// input, EINTR/EPIPE handled as values rather than traps, and a wake fd to interrupt
// a blocked read on SIGTERM.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation  // NSLock only

/// Errors from the framing layer. `errno` is the raw value reported by the system call.
public enum FramingError: Error, Sendable, Equatable, CustomStringConvertible {
    case readFailed(errno: Int32)
    case pollFailed(errno: Int32)
    /// EPIPE here means the peer closed its end (the process must ignore SIGPIPE).
    case writeFailed(errno: Int32)
    /// `LineWriter` refuses bytes containing `\n`: they would split into several lines.
    case lineContainsNewline

    public var isBrokenPipe: Bool { self == .writeFailed(errno: EPIPE) }

    public var description: String {
        switch self {
        case .readFailed(let e): "read failed: \(String(cString: strerror(e)))"
        case .pollFailed(let e): "poll failed: \(String(cString: strerror(e)))"
        case .writeFailed(let e): "write failed: \(String(cString: strerror(e)))"
        case .lineContainsNewline: "line contains a newline byte"
        }
    }
}

public enum LineEvent: Sendable, Equatable {
    /// One line without its `\n` and without one trailing `\r`. May be empty.
    case line([UInt8])
    /// A line longer than `maxLineBytes` was skipped. `byteCount` is its length excluding
    /// the `\n` and a trailing `\r`. Reported once per line.
    case oversized(byteCount: Int)
    /// End of input, or the wake fd fired. Every later call returns this again.
    case endOfFile
}

/// Reads `\n`-terminated lines from a file descriptor with blocking `read(2)`.
///
/// Memory is bounded: at most `maxLineBytes + 1` bytes of a line are buffered (the extra
/// byte is room for a `\r` that is stripped), plus one read chunk. Not thread-safe: use it
/// from one reader.
public final class LineReader {
    public static let defaultMaxLineBytes = 1_048_576

    public let fileDescriptor: Int32
    public let wakeFileDescriptor: Int32?
    public let maxLineBytes: Int

    private var chunk: [UInt8]
    private var chunkStart = 0
    private var chunkEnd = 0
    /// The incomplete line collected from earlier chunks.
    private var partial: [UInt8] = []
    /// True while skipping the rest of an oversized line up to its `\n`.
    private var discarding = false
    private var discardedCount = 0
    private var lastDiscardedByte: UInt8 = 0
    private var sawEOF = false
    private var woken = false

    /// Largest number of bytes ever held in the partial-line buffer (for tests).
    private(set) var peakBufferedBytes = 0

    /// - Parameters:
    ///   - fileDescriptor: the input, default stdin. Not closed by the reader.
    ///   - wakeFileDescriptor: if given, the reader waits with `poll(2)` on both fds and
    ///     reports `.endOfFile` as soon as this one is readable (or hung up/invalid), so a
    ///     signal handler writing a byte to a pipe can stop a blocked read. It is checked
    ///     only when the reader needs more input; lines already buffered are delivered first.
    ///   - maxLineBytes: longest accepted line (excluding `\n` and a trailing `\r`).
    ///   - readChunkSize: bytes requested per `read(2)`.
    public init(
        fileDescriptor: Int32 = 0,
        wakeFileDescriptor: Int32? = nil,
        maxLineBytes: Int = LineReader.defaultMaxLineBytes,
        readChunkSize: Int = 65_536
    ) {
        self.fileDescriptor = fileDescriptor
        self.wakeFileDescriptor = wakeFileDescriptor
        self.maxLineBytes = max(0, maxLineBytes)
        self.chunk = [UInt8](repeating: 0, count: max(1, readChunkSize))
    }

    /// Whether bytes were read but not yet delivered: `next()` has input without waiting
    /// (or at least without waiting for all of it).
    public var hasBufferedInput: Bool { chunkStart < chunkEnd }

    /// Blocks until the next line, oversized line or end of input.
    /// A final line without a trailing `\n` is delivered at EOF (not after a wake).
    public func next() throws(FramingError) -> LineEvent {
        while true {
            if woken { return .endOfFile }
            if chunkStart < chunkEnd {
                if let event = consumeBuffered() { return event }
                continue
            }
            if sawEOF { return finishAtEOF() }
            try fill()
        }
    }

    /// Consumes buffered bytes up to and including the next `\n`, or all of them.
    private func consumeBuffered() -> LineEvent? {
        let start = chunkStart
        let newline: Int? = chunk.withUnsafeBufferPointer { p in
            guard let base = p.baseAddress,
                let hit = memchr(base + start, 0x0A, chunkEnd - start)
            else { return nil }
            return UnsafeRawPointer(hit) - UnsafeRawPointer(base)
        }
        guard let newline else {
            appendPartial(start..<chunkEnd)
            chunkStart = chunkEnd
            return nil
        }
        chunkStart = newline + 1
        return completeLine(start..<newline)
    }

    /// Adds a newline-free piece of the current line, switching to discard mode as soon
    /// as the line can no longer fit, so an oversized line is never held in memory.
    private func appendPartial(_ range: Range<Int>) {
        guard !range.isEmpty else { return }
        if discarding {
            discardedCount += range.count
            lastDiscardedByte = chunk[range.upperBound - 1]
            return
        }
        if partial.count + range.count > maxLineBytes + 1 {
            discarding = true
            discardedCount = partial.count + range.count
            lastDiscardedByte = chunk[range.upperBound - 1]
            partial = []  // release the memory now
            return
        }
        partial.append(contentsOf: chunk[range])
        peakBufferedBytes = max(peakBufferedBytes, partial.count)
    }

    /// `range` is the last piece of a line (its `\n` excluded).
    private func completeLine(_ range: Range<Int>) -> LineEvent {
        if discarding {
            appendPartial(range)
            return finishDiscarding()
        }
        let endsWithCR: Bool =
            range.isEmpty ? partial.last == 0x0D : chunk[range.upperBound - 1] == 0x0D
        let length = partial.count + range.count - (endsWithCR ? 1 : 0)
        guard length <= maxLineBytes else {
            partial = []
            return .oversized(byteCount: length)
        }
        if partial.isEmpty {
            return .line(Array(chunk[range.lowerBound..<(range.upperBound - (endsWithCR ? 1 : 0))]))
        }
        partial.append(contentsOf: chunk[range])
        if endsWithCR { partial.removeLast() }
        let line = partial
        partial = []
        return .line(line)
    }

    private func finishDiscarding() -> LineEvent {
        let count = discardedCount - (lastDiscardedByte == 0x0D ? 1 : 0)
        discarding = false
        discardedCount = 0
        lastDiscardedByte = 0
        return .oversized(byteCount: count)
    }

    private func finishAtEOF() -> LineEvent {
        if discarding { return finishDiscarding() }
        if !partial.isEmpty { return completeLine(0..<0) }
        return .endOfFile
    }

    /// Refills `chunk` with one read; sets `sawEOF` or `woken` instead when appropriate.
    private func fill() throws(FramingError) {
        if let wake = wakeFileDescriptor {
            try waitReadable(wake: wake)
            if woken { return }
        }
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fileDescriptor, $0.baseAddress, $0.count) }
            if n > 0 {
                chunkStart = 0
                chunkEnd = n
                return
            }
            if n == 0 {
                sawEOF = true
                return
            }
            let error = errno
            if error == EINTR { continue }
            if error == EAGAIN || error == EWOULDBLOCK {
                // Non-blocking input: wait for data instead of spinning.
                try waitReadable(wake: wakeFileDescriptor)
                if woken { return }
                continue
            }
            throw .readFailed(errno: error)
        }
    }

    /// Blocks in poll(2) until the input is readable (or at EOF/error, which read reports)
    /// or the wake fd has anything to say, in which case `woken` is set.
    private func waitReadable(wake: Int32?) throws(FramingError) {
        var fds = [pollfd(fd: fileDescriptor, events: Int16(POLLIN), revents: 0)]
        if let wake { fds.append(pollfd(fd: wake, events: Int16(POLLIN), revents: 0)) }
        while true {
            let r = poll(&fds, nfds_t(fds.count), -1)
            if r < 0 {
                let error = errno
                if error == EINTR { continue }
                throw .pollFailed(errno: error)
            }
            // Any event on the wake fd (data, hang-up, even POLLNVAL) means stop: failing
            // safe beats blocking forever on a wake mechanism that broke.
            if fds.count > 1, fds[1].revents != 0 {
                woken = true
                return
            }
            if fds[0].revents != 0 { return }
        }
    }
}

/// Writes whole lines to a file descriptor. Thread-safe: each line is written under a
/// lock, so lines from different threads never interleave even beyond PIPE_BUF.
public final class LineWriter: Sendable {
    public let fileDescriptor: Int32
    private let lock = NSLock()

    /// - Parameter fileDescriptor: the output, default stdout. Not closed by the writer.
    public init(fileDescriptor: Int32 = 1) {
        self.fileDescriptor = fileDescriptor
    }

    /// Whether a write of up to PIPE_BUF (4,096) bytes would not block now (`poll(2)` says
    /// writable: a pipe then has at least a page free). Says nothing about longer writes.
    public var isWritableNow: Bool {
        var descriptor = pollfd(fd: fileDescriptor, events: Int16(POLLOUT), revents: 0)
        return poll(&descriptor, 1, 0) == 1 && descriptor.revents & Int16(POLLOUT) != 0
    }

    /// Whether the reading end is gone (`poll(2)` reports POLLERR or POLLHUP on the output):
    /// nothing written now could be read. Never blocks.
    public var isBroken: Bool {
        var descriptor = pollfd(fd: fileDescriptor, events: Int16(POLLOUT), revents: 0)
        return poll(&descriptor, 1, 0) == 1 && descriptor.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0
    }

    /// Writes `bytes` followed by `\n`, retrying partial writes and EINTR.
    /// Throws (never traps) on EPIPE, EBADF and other errors; a failed line may have been
    /// partly written.
    public func writeLine(_ bytes: [UInt8]) throws(FramingError) {
        try writeLine(bytes, beforeBlocking: nil)
    }

    /// `writeLine`, calling `beforeBlocking` (once) first if the write might block: when
    /// another thread holds the writer (it may itself be blocked on a full pipe), or when the
    /// line is not below PIPE_BUF (4,096) bytes or the pipe has no free page right now. Decided
    /// under the writer's lock, so no other writer can fill the pipe between check and write.
    public func writeLine(_ bytes: [UInt8], beforeBlocking: (() -> Void)?) throws(FramingError) {
        let hasNewline = bytes.withUnsafeBytes { p in
            p.baseAddress.map { memchr($0, 0x0A, p.count) != nil } ?? false
        }
        if hasNewline { throw .lineContainsNewline }
        if let beforeBlocking {
            if !lock.try() {
                beforeBlocking()
                lock.lock()
            } else if !(bytes.count < 4_096 && isWritableNow) {
                beforeBlocking()
            }
        } else {
            lock.lock()
        }
        defer { lock.unlock() }
        let result = bytes.withUnsafeBytes { p in
            Result { () throws(FramingError) in try writeLocked(p) }
        }
        try result.get()
    }

    public func writeLine(_ text: String) throws(FramingError) {
        try writeLine(Array(text.utf8))
    }

    private func writeLocked(_ line: UnsafeRawBufferPointer) throws(FramingError) {
        var newline: UInt8 = 0x0A
        var written = 0
        let total = line.count + 1
        while written < total {
            // One writev per line (content + "\n") in the common case.
            // errno is captured right after the call, before anything can free memory.
            let (r, callErrno): (Int, Int32) = withUnsafeMutablePointer(to: &newline) { nl in
                if written < line.count, let base = line.baseAddress {
                    var iov = [
                        iovec(iov_base: UnsafeMutableRawPointer(mutating: base + written),
                              iov_len: line.count - written),
                        iovec(iov_base: UnsafeMutableRawPointer(nl), iov_len: 1),
                    ]
                    let r = writev(fileDescriptor, &iov, 2)
                    return (r, errno)
                }
                let r = write(fileDescriptor, nl, 1)
                return (r, errno)
            }
            if r > 0 {
                written += r
                continue
            }
            let error = r == 0 ? EIO : callErrno
            if error == EINTR { continue }
            if error == EAGAIN || error == EWOULDBLOCK {
                var fd = pollfd(fd: fileDescriptor, events: Int16(POLLOUT), revents: 0)
                _ = poll(&fd, 1, -1)
                continue
            }
            throw .writeFailed(errno: error)
        }
    }
}
