#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing
@testable import JSONRPC

/// A pipe whose ends are closed when the test is done with them.
private final class Pipe: @unchecked Sendable {
    let readEnd: Int32
    let writeEnd: Int32
    private var closed: Set<Int32> = []
    private let lock = NSLock()

    init() {
        var fds: [Int32] = [0, 0]
        precondition(pipe(&fds) == 0, "pipe failed")
        readEnd = fds[0]
        writeEnd = fds[1]
    }

    func closeWrite() { closeOnce(writeEnd) }
    func closeRead() { closeOnce(readEnd) }

    private func closeOnce(_ fd: Int32) {
        lock.lock()
        defer { lock.unlock() }
        if closed.insert(fd).inserted { close(fd) }
    }

    deinit {
        for fd in [readEnd, writeEnd] where !closed.contains(fd) { close(fd) }
    }
}

private func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, bytes.count - offset) }
        if n < 0 && errno == EINTR { continue }
        precondition(n > 0, "write failed: \(errno)")
        offset += n
    }
}

/// Runs `body` on a new thread; the returned group is left when it finishes.
@discardableResult
private func background(_ body: @escaping @Sendable () -> Void) -> DispatchGroup {
    let group = DispatchGroup()
    group.enter()
    Thread {
        body()
        group.leave()
    }.start()
    return group
}

private func readAll(_ reader: LineReader) throws -> [LineEvent] {
    var events: [LineEvent] = []
    while true {
        let event = try reader.next()
        events.append(event)
        if event == .endOfFile { return events }
    }
}

private func line(_ s: String) -> LineEvent { .line(Array(s.utf8)) }

@Suite struct LineReaderTests {
    @Test func linesSplitAcrossWrites() throws {
        let p = Pipe()
        let writer = background {
            for piece in ["{\"a\"", ":1}\n{\"b\":", "2}\n", "", "\n", "x", "y", "z\n"] {
                writeAll(p.writeEnd, Array(piece.utf8))
                usleep(2_000)
            }
            p.closeWrite()
        }
        let reader = LineReader(fileDescriptor: p.readEnd, readChunkSize: 3)
        let events = try readAll(reader)
        writer.wait()
        #expect(events == [line("{\"a\":1}"), line("{\"b\":2}"), line(""), line("xyz"), .endOfFile])
    }

    @Test func crlfAndBlankLinesAndFinalLineWithoutNewline() throws {
        let p = Pipe()
        writeAll(p.writeEnd, Array("a\r\n\r\n  \n\r\r\nb\rc\nlast".utf8))
        p.closeWrite()
        let reader = LineReader(fileDescriptor: p.readEnd)
        #expect(try readAll(reader) == [line("a"), line(""), line("  "), line("\r"), line("b\rc"), line("last"), .endOfFile])
        // EOF is sticky.
        #expect(try reader.next() == .endOfFile)
        #expect(try reader.next() == .endOfFile)
    }

    @Test func emptyInputIsEndOfFile() throws {
        let p = Pipe()
        p.closeWrite()
        #expect(try LineReader(fileDescriptor: p.readEnd).next() == .endOfFile)
    }

    @Test func finalLineWithCRAtEOF() throws {
        let p = Pipe()
        writeAll(p.writeEnd, Array("x\r".utf8))
        p.closeWrite()
        #expect(try readAll(LineReader(fileDescriptor: p.readEnd)) == [line("x"), .endOfFile])
    }

    @Test(arguments: [1, 2, 7, 64, 65_536])
    func limitBoundaries(chunkSize: Int) throws {
        let p = Pipe()
        let input = "12345\n123456\n12345\r\n123456\r\n1234567\n\nabc\n123456"
        writeAll(p.writeEnd, Array(input.utf8))
        p.closeWrite()
        let reader = LineReader(fileDescriptor: p.readEnd, maxLineBytes: 5, readChunkSize: chunkSize)
        #expect(try readAll(reader) == [
            line("12345"), .oversized(byteCount: 6), line("12345"), .oversized(byteCount: 6),
            .oversized(byteCount: 7), line(""), line("abc"), .oversized(byteCount: 6), .endOfFile,
        ])
        #expect(reader.peakBufferedBytes <= 6)
    }

    @Test func oversizedLineOf3MiBThenNormalLine() throws {
        let p = Pipe()
        let big = 3 * 1_048_576
        let writer = background {
            var chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 65_536)
            for _ in 0..<(big / chunk.count) { writeAll(p.writeEnd, chunk) }
            chunk = Array("\n{\"ok\":true}\n".utf8)
            writeAll(p.writeEnd, chunk)
            p.closeWrite()
        }
        let reader = LineReader(fileDescriptor: p.readEnd)
        #expect(reader.maxLineBytes == 1_048_576)
        let events = try readAll(reader)
        writer.wait()
        #expect(events == [.oversized(byteCount: big), line("{\"ok\":true}"), .endOfFile])
        // The oversized line was never buffered past the limit.
        #expect(reader.peakBufferedBytes <= 1_048_576 + 1)
    }

    @Test func oversizedFinalLineWithoutNewline() throws {
        let p = Pipe()
        writeAll(p.writeEnd, Array("ok\n0123456789".utf8))
        p.closeWrite()
        let reader = LineReader(fileDescriptor: p.readEnd, maxLineBytes: 4, readChunkSize: 4)
        #expect(try readAll(reader) == [line("ok"), .oversized(byteCount: 10), .endOfFile])
    }

    @Test func wakeDescriptorInterruptsBlockedRead() throws {
        let data = Pipe()
        let wake = Pipe()
        writeAll(data.writeEnd, Array("first\npartial".utf8))
        let reader = LineReader(fileDescriptor: data.readEnd, wakeFileDescriptor: wake.readEnd)
        #expect(try reader.next() == line("first"))
        let waker = background {
            usleep(100_000)
            writeAll(wake.writeEnd, [1])
        }
        // Blocks (the data pipe's write end stays open) until the wake byte arrives.
        let start = Date()
        #expect(try reader.next() == .endOfFile)
        #expect(Date().timeIntervalSince(start) >= 0.05)
        waker.wait()
        // Stays at end of file even though more data arrives.
        writeAll(data.writeEnd, Array("more\n".utf8))
        #expect(try reader.next() == .endOfFile)
    }

    @Test func wakeDescriptorAlreadySignalled() throws {
        let data = Pipe()
        let wake = Pipe()
        wake.closeWrite()  // hang-up counts as a wake
        #expect(try LineReader(fileDescriptor: data.readEnd, wakeFileDescriptor: wake.readEnd).next() == .endOfFile)
    }

    @Test func dataStillFlowsWithWakeDescriptor() throws {
        let data = Pipe()
        let wake = Pipe()
        writeAll(data.writeEnd, Array("a\nb".utf8))
        data.closeWrite()
        let reader = LineReader(fileDescriptor: data.readEnd, wakeFileDescriptor: wake.readEnd)
        #expect(try readAll(reader) == [line("a"), line("b"), .endOfFile])
    }

    @Test func readErrorIsThrown() {
        let reader = LineReader(fileDescriptor: -1)
        #expect(throws: FramingError.readFailed(errno: EBADF)) { try reader.next() }
    }
}

@Suite struct LineWriterTests {
    @Test func writesLines() throws {
        let p = Pipe()
        let writer = LineWriter(fileDescriptor: p.writeEnd)
        try writer.writeLine(Array("{\"a\":1}".utf8))
        try writer.writeLine([])
        try writer.writeLine("é")
        p.closeWrite()
        #expect(try readAll(LineReader(fileDescriptor: p.readEnd)) == [line("{\"a\":1}"), line(""), line("é"), .endOfFile])
    }

    @Test func rejectsEmbeddedNewline() {
        let p = Pipe()
        #expect(throws: FramingError.lineContainsNewline) { try LineWriter(fileDescriptor: p.writeEnd).writeLine("a\nb") }
    }

    @Test func brokenPipeThrows() {
        signal(SIGPIPE, SIG_IGN)
        let p = Pipe()
        p.closeRead()
        let writer = LineWriter(fileDescriptor: p.writeEnd)
        do {
            try writer.writeLine("x")
            Issue.record("expected EPIPE")
        } catch {
            #expect(error == .writeFailed(errno: EPIPE))
            #expect(error.isBrokenPipe)
        }
    }

    @Test func badDescriptorThrows() {
        #expect(throws: FramingError.writeFailed(errno: EBADF)) { try LineWriter(fileDescriptor: -1).writeLine("x") }
    }

    /// The hand-over hook runs exactly when the write might block: a line of PIPE_BUF or more,
    /// a pipe without a free page, or another thread holding the writer (blocked on a full
    /// pipe, as a follower writing a large page would be) — never for a short line into an
    /// empty pipe.
    @Test func beforeBlockingRunsOnlyWhenTheWriteMightBlock() throws {
        let p = Pipe()
        let writer = LineWriter(fileDescriptor: p.writeEnd)
        var calls = 0
        try writer.writeLine(Array(repeating: UInt8(ascii: "s"), count: 100), beforeBlocking: { calls += 1 })
        #expect(calls == 0)
        try writer.writeLine(Array(repeating: UInt8(ascii: "b"), count: 4_096), beforeBlocking: { calls += 1 })
        #expect(calls == 1)

        // Another thread holds the writer, blocked on a pipe nobody reads yet.
        let big = Array(repeating: UInt8(ascii: "x"), count: 1 << 20)
        let bigDone = DispatchSemaphore(value: 0)
        Thread { try! writer.writeLine(big); bigDone.signal() }.start()
        while writer.isWritableNow { usleep(1_000) } // until the pipe is full: the thread is inside writeLine
        let handedOver = DispatchSemaphore(value: 0)
        let smallDone = DispatchSemaphore(value: 0)
        Thread {
            try! writer.writeLine(Array("small".utf8), beforeBlocking: { handedOver.signal() })
            smallDone.signal()
        }.start()
        handedOver.wait() // hangs (the test times out) if the hook is never called
        let reader = LineReader(fileDescriptor: p.readEnd, maxLineBytes: 2 << 20)
        var lines: [[UInt8]] = []
        while lines.count < 4, case .line(let bytes) = try reader.next() { lines.append(bytes) }
        bigDone.wait()
        smallDone.wait()
        #expect(lines.map(\.count) == [100, 4_096, 1 << 20, 5])
    }

    /// Lines far larger than PIPE_BUF from several threads: only the lock keeps them whole.
    @Test func concurrentWritersNeverInterleave() throws {
        let p = Pipe()
        let writer = LineWriter(fileDescriptor: p.writeEnd)
        let threads = 4
        let linesPerThread = 200
        let group = DispatchGroup()
        for t in 0..<threads {
            group.enter()
            Thread {
                let letter = UInt8(ascii: "a") + UInt8(t)
                for i in 0..<linesPerThread {
                    let length = 1 + (i * 7919 + t * 104_729) % 20_000
                    var bytes = Array("\(t):\(i):".utf8)
                    bytes.append(contentsOf: repeatElement(letter, count: length))
                    try! writer.writeLine(bytes)
                }
                group.leave()
            }.start()
        }
        background {
            group.wait()
            p.closeWrite()
        }
        var seen: [Int: Int] = [:]  // thread → next expected index
        let reader = LineReader(fileDescriptor: p.readEnd)
        var count = 0
        while case .line(let bytes) = try reader.next() {
            count += 1
            let text = String(decoding: bytes, as: UTF8.self)
            let parts = text.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3, let t = Int(parts[0]), let i = Int(parts[1]) else {
                Issue.record("malformed line prefix: \(text.prefix(40))")
                continue
            }
            let letter = Character(Unicode.Scalar(UInt8(ascii: "a") + UInt8(t)))
            let length = 1 + (i * 7919 + t * 104_729) % 20_000
            #expect(parts[2].count == length && parts[2].allSatisfy { $0 == letter }, "line \(t):\(i) corrupted")
            // Each thread's own lines arrive in order.
            #expect(seen[t, default: 0] == i)
            seen[t] = i + 1
        }
        #expect(count == threads * linesPerThread)
    }
}
