import ArgumentParser
import Foundation
import HabitStore
import PostgresClient

extension ParsableCommand {
    /// Runs `body`, turning an error into a one-line message on stderr and an exit code:
    /// 3 when the database could not be reached or was lost, 1 for anything else. Usage
    /// errors (`ValidationError`, exit 64) and explicit exit codes pass through to ArgumentParser.
    func reportingFailures(_ body: () throws -> Void) throws {
        do {
            try body()
        } catch let error as ValidationError {
            throw error
        } catch let error as ExitCode {
            throw error
        } catch {
            FileHandle.standardError.write(Data("habit: \(error)\n".utf8))
            throw ExitCode(Self.exitCode(for: error))
        }
    }

    /// 3 = the database could not be reached or was lost; 1 = anything else.
    static func exitCode(for error: Error) -> Int32 {
        if let postgres = error as? PostgresError, postgres.isConnectionLost { return 3 }
        if error is EmbeddedServerError { return 3 }
        return 1
    }
}
