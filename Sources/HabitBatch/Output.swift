import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A buffered writer to a file descriptor (stdout by default): rows arrive one by one,
/// and one write(2) per row would dominate the job's time.
public final class OutputSink {
    private let descriptor: Int32
    private var buffer: [UInt8] = []
    private let capacity: Int

    public init(descriptor: Int32 = 1, capacity: Int = 1 << 16) {
        self.descriptor = descriptor
        self.capacity = capacity
        buffer.reserveCapacity(capacity)
    }

    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        buffer.append(contentsOf: bytes)
        if buffer.count >= capacity { try flush() }
    }

    public func write(_ bytes: [UInt8]) throws {
        buffer.append(contentsOf: bytes)
        if buffer.count >= capacity { try flush() }
    }

    public func flush() throws {
        var offset = 0
        while offset < buffer.count {
            let written = buffer[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                throw OutputError(errno: errno)
            }
            offset += written
        }
        buffer.removeAll(keepingCapacity: true)
    }

    public struct OutputError: Error, CustomStringConvertible {
        public let errno: Int32
        public var description: String { "writing output failed: \(String(cString: strerror(errno)))" }
    }
}

/// Progress on stderr for people watching a terminal: rows done, rate and ETA, redrawn in
/// place at most twice a second. Silent when stderr is not a terminal.
public final class ProgressReporter {
    private var total = 0
    private var done = 0
    private var started = DispatchTime.now()
    private var lastDraw = DispatchTime.now()

    public static func forStandardError() -> ProgressReporter? {
        isatty(2) == 1 ? ProgressReporter() : nil
    }

    func start(totalRows: Int) {
        total = totalRows
        started = .now()
        draw()
    }

    func rowDone() {
        done += 1
        if done & 1023 == 0, DispatchTime.now().uptimeNanoseconds - lastDraw.uptimeNanoseconds > 500_000_000 { draw() }
    }

    func finish() {
        draw()
        FileHandle.standardError.write(Data("\n".utf8))
    }

    private func draw() {
        lastDraw = .now()
        let seconds = Double(lastDraw.uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
        let rate = seconds > 0 ? Double(done) / seconds : 0
        let remaining = rate > 0 ? Double(max(0, total - done)) / rate : 0
        let percent = total > 0 ? 100 * Double(done) / Double(total) : 100
        let text = String(format: "\rweekly-counts: %d/%d rows (%.0f%%), %.0f rows/s, ETA %.0fs   ", done, total, percent, rate, remaining)
        FileHandle.standardError.write(Data(text.utf8))
    }
}
