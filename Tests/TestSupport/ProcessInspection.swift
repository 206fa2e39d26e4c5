import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What Linux's /proc says about other processes, and waiting for processes that are not
/// our children (PostgreSQL backends, a postmaster) to exit without polling: a pidfd
/// (`pidfd_open(2)`, Linux ≥ 5.3) becomes readable when its process exits.
public enum ProcessInspection {
    /// Resident memory of `pid` from /proc/<pid>/status: now (`VmRSS`) and its high-water
    /// mark since the process started (`VmHWM`), in KiB. nil once the process is gone.
    public static func memory(of pid: pid_t) -> (residentKiB: Int, peakKiB: Int)? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        var rss: Int?
        var hwm: Int?
        for line in status.split(separator: "\n") {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 2 else { continue }
            if fields[0] == "VmRSS:" { rss = Int(fields[1]) }
            if fields[0] == "VmHWM:" { hwm = Int(fields[1]) }
        }
        guard let rss, let hwm else { return nil }
        return (rss, hwm)
    }

    /// Every pid in /proc.
    public static func allPIDs() -> [pid_t] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { pid_t($0) }
    }

    /// State letter and parent of `pid` from /proc/<pid>/stat (nil once gone). The command
    /// name may contain spaces and parentheses, so fields are read after the last ')'.
    public static func stat(of pid: pid_t) -> (state: Character, parent: pid_t)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count >= 2, let state = fields[0].first, let parent = pid_t(fields[1]) else { return nil }
        return (state, parent)
    }

    /// Running (not exited, not a zombie awaiting its parent).
    public static func isAlive(_ pid: pid_t) -> Bool {
        guard let stat = stat(of: pid) else { return false }
        return stat.state != "Z" && stat.state != "X"
    }

    /// Live children of `pid`.
    public static func children(of pid: pid_t) -> [pid_t] {
        allPIDs().filter { stat(of: $0)?.parent == pid && isAlive($0) }
    }

    /// Live processes whose environment holds exactly `entry` ("KEY=value"): a child started
    /// with a unique marker in its environment passes it on to everything it spawns, so this
    /// finds orphans however they were re-parented.
    public static func processes(withEnvironment entry: String) -> [pid_t] {
        let wanted = Array(entry.utf8)
        return allPIDs().filter { pid in
            guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/environ"), isAlive(pid) else { return false }
            return data.split(separator: 0).contains { Array($0) == wanted }
        }
    }

    private typealias PidfdOpen = @convention(c) (pid_t, UInt32) -> Int32
    private static let pidfdOpen: PidfdOpen? = {
        guard let symbol = dlsym(nil, "pidfd_open") else { return nil }
        return unsafeBitCast(symbol, to: PidfdOpen.self)
    }()

    /// Blocks until every process in `pids` has exited, or the hang guard `timeout` expires;
    /// returns the pids still alive then (empty: all exited). Uses pidfds, so it wakes the
    /// moment the last one exits; without pidfd support it falls back to checking /proc
    /// every 10 ms.
    public static func waitForExit(_ pids: [pid_t], timeout: TimeInterval) -> [pid_t] {
        let deadline = Date(timeIntervalSinceNow: timeout)
        guard let pidfdOpen else {
            var alive = pids.filter(isAlive)
            while !alive.isEmpty && Date() < deadline {
                usleep(10_000)
                alive = alive.filter(isAlive)
            }
            return alive
        }
        var open: [(pid: pid_t, fd: Int32)] = []
        for pid in pids {
            let fd = pidfdOpen(pid, 0)
            if fd >= 0 { open.append((pid, fd)) } // ESRCH: already gone
        }
        defer { for entry in open { close(entry.fd) } }
        var waiting = open
        while !waiting.isEmpty {
            // A zombie's pidfd is readable at once; a process exiting makes it readable then.
            waiting = waiting.filter { isAlive($0.pid) }
            if waiting.isEmpty { break }
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 { break }
            var fds = waiting.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&fds, nfds_t(fds.count), Int32(min(remaining, 3_600) * 1_000) + 1)
            if ready < 0 && errno != EINTR { break }
        }
        return waiting.map(\.pid).filter(isAlive)
    }
}
