import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Crashing a `PrivatePostgresServer` on purpose: `kill -9` of the postmaster, or
/// `pg_ctl stop -m immediate` (no checkpoint, crash recovery at the next start). Each crash is
/// confirmed (the postmaster and every process it had started have exited) before it returns,
/// and restarting waits for the old processes to release the shared memory.
public enum PostgresCrashMode: String, Sendable, CaseIterable {
    case sigkill = "kill -9 postmaster"
    case immediateStop = "pg_ctl stop -m immediate"
}

/// One confirmed crash.
public struct PostgresCrash: Sendable {
    public var mode: PostgresCrashMode
    public var postmasterPID: pid_t
    /// Processes the postmaster had started (backends, checkpointer, …), all exited.
    public var childCount: Int
}

public enum PostgresCrashError: Error, CustomStringConvertible {
    case noPostmaster(String)
    case notConfirmed(String)
    case restartFailed(String)

    public var description: String {
        switch self {
        case .noPostmaster(let detail): "no running postmaster: \(detail)"
        case .notConfirmed(let detail): "crash not confirmed: \(detail)"
        case .restartFailed(let detail): "restart after crash failed: \(detail)"
        }
    }
}

extension PrivatePostgresServer {
    public var dataDirectory: String { "\(directory)/data" }

    /// The whole server log so far (pg-tmp writes it to <dir>/server.log).
    public var serverLog: String { (try? String(contentsOfFile: "\(directory)/server.log", encoding: .utf8)) ?? "" }

    /// How many times the log says crash recovery ran (one per start after a crash).
    public var crashRecoveryCount: Int {
        serverLog.components(separatedBy: "automatic recovery in progress").count - 1
    }

    /// The running postmaster's pid (first line of postmaster.pid), checked to be alive.
    public func postmasterPID() throws -> pid_t {
        guard let text = try? String(contentsOfFile: "\(dataDirectory)/postmaster.pid", encoding: .utf8),
              let first = text.split(separator: "\n").first, let pid = pid_t(first.trimmingCharacters(in: .whitespaces)) else {
            throw PostgresCrashError.noPostmaster("no readable \(dataDirectory)/postmaster.pid")
        }
        guard ProcessInspection.isAlive(pid) else { throw PostgresCrashError.noPostmaster("pid \(pid) from postmaster.pid is not running") }
        return pid
    }

    /// Crashes the server and returns once the postmaster and all its children have exited
    /// (hang guard `timeout`; throws if they have not).
    @discardableResult
    public func crash(_ mode: PostgresCrashMode, timeout: TimeInterval = 60) throws -> PostgresCrash {
        let postmaster = try postmasterPID()
        let children = ProcessInspection.children(of: postmaster)
        switch mode {
        case .sigkill:
            guard kill(postmaster, SIGKILL) == 0 else {
                throw PostgresCrashError.notConfirmed("kill(\(postmaster), SIGKILL): errno \(errno)")
            }
        case .immediateStop:
            let result = try WorkerProcess.run("/usr/bin/env", ownerCommand(["\(try bindir())/pg_ctl", "-D", dataDirectory, "-m", "immediate",
                                                                             "-w", "-t", "60", "stop"]),
                                               environment: Self.crashEnvironment)
            guard result.status == 0 else {
                throw PostgresCrashError.notConfirmed("pg_ctl -m immediate stop exited \(result.status): \(result.stdout) \(result.stderr)")
            }
        }
        // Orphaned backends notice the postmaster's death on their own and exit.
        let alive = ProcessInspection.waitForExit([postmaster] + children, timeout: timeout)
        guard alive.isEmpty else {
            throw PostgresCrashError.notConfirmed("still running after \(timeout) s: \(alive)")
        }
        return PostgresCrash(mode: mode, postmasterPID: postmaster, childCount: children.count)
    }

    /// Starts the server after a crash. Retries with short pauses only while the start fails
    /// (e.g. the old shared memory is briefly still attached), bounded by `timeout`. Returns
    /// the number of attempts.
    @discardableResult
    public func restart(timeout: TimeInterval = 90) throws -> Int {
        let deadline = Date(timeIntervalSinceNow: timeout)
        var attempts = 0
        while true {
            attempts += 1
            do {
                try start()
                return attempts
            } catch {
                if Date() >= deadline { throw PostgresCrashError.restartFailed("\(attempts) attempts, last: \(error)") }
                Thread.sleep(forTimeInterval: 0.2) // waiting for an external server: the one allowed pause
            }
        }
    }

    private func bindir() throws -> String {
        let script = TestDatabase.repositoryRoot.appendingPathComponent("scripts/pg-tmp").path
        let result = try WorkerProcess.run("/bin/bash", [script, "bindir"], environment: Self.crashEnvironment)
        guard result.status == 0 else { throw PostgresCrashError.noPostmaster("pg-tmp bindir failed: \(result.stderr)") }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private func ownerCommand(_ command: [String]) -> [String] {
        getuid() == 0 ? ["runuser", "-u", "postgres", "--"] + command : command
    }

    private static var crashEnvironment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = (environment["PATH"].map { $0 + ":" } ?? "") + "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        return environment
    }
}
