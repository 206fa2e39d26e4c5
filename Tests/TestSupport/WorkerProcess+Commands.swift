import Foundation

/// One-shot commands (`habit migrate`, `habit weekly-counts`, `psql`…) spawned like a worker
/// and run to completion.
extension WorkerProcess {
    public struct CommandResult: Sendable {
        public var status: Int32
        public var stdout: String
        public var stderr: String
    }

    /// `result` if the command exited 0; otherwise an error naming `what`, with its output.
    @discardableResult
    public static func checked(_ result: CommandResult, _ what: String) throws -> CommandResult {
        guard result.status == 0 else { throw CommandFailed(what: what, status: result.status, output: result.stdout + result.stderr) }
        return result
    }

    public struct CommandFailed: Error, CustomStringConvertible {
        public let what: String
        public let status: Int32
        public let output: String
        public var description: String { "\(what) exited \(status): \(output.suffix(2_000))" }
    }

    /// Runs a command to completion with stdin at EOF and returns its status and output.
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                           timeout: TimeInterval = 120) throws -> CommandResult {
        let process = try WorkerProcess(executable: executable, arguments: arguments,
                                        environment: environment ?? ProcessInfo.processInfo.environment)
        defer { process.forceStop() }
        process.closeInput()
        let lines = try process.remainingOutput(timeout: timeout)
        guard let status = process.waitForExit(timeout: timeout) else {
            throw WorkerProcessError.timedOut("\(executable) \(arguments.joined(separator: " ")) did not exit", stderrTail: process.stderrTail())
        }
        _ = process.waitForStderrEnd(timeout: 10)
        return CommandResult(status: status, stdout: lines.joined(separator: "\n"), stderr: process.stderrText)
    }
}
