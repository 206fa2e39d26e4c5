import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// How the workers of a test reach PostgreSQL.
enum Route: String, CustomTestStringConvertible, Sendable {
    /// Straight to the server, prepared statements on (the default).
    case direct
    /// Through a pgbouncer 1.18 in transaction mode, with `--prepared-statements off`.
    case pgbouncer

    var testDescription: String { rawValue }
}

/// Several `habit serve` processes on one database; every one is killed and reaped when
/// `with` returns, on every path.
enum Workers {
    /// One worker per entry of `configurations` (extra arguments, extra environment).
    static func with<Value>(databaseURL: String, configurations: [(arguments: [String], environment: [String: String])],
                            _ body: ([WorkerProcess]) throws -> Value) throws -> Value {
        var workers: [WorkerProcess] = []
        defer { for worker in workers { worker.forceStop() } }
        for configuration in configurations {
            workers.append(try WorkerProcess.serve(databaseURL: databaseURL, arguments: configuration.arguments,
                                                   environment: configuration.environment))
        }
        return try body(workers)
    }

    static func with<Value>(count: Int, databaseURL: String, arguments: [String],
                            _ body: ([WorkerProcess]) throws -> Value) throws -> Value {
        try with(databaseURL: databaseURL, configurations: Array(repeating: (arguments, [:]), count: count), body)
    }

    /// Closes every worker's stdin and checks that each answers nothing more and exits 0.
    static func stop(_ workers: [WorkerProcess], sourceLocation: SourceLocation = #_sourceLocation) throws {
        for worker in workers { worker.closeInput() }
        for worker in workers {
            #expect(try worker.remainingOutput().isEmpty, sourceLocation: sourceLocation)
            #expect(worker.waitForExit() == 0, "stderr: \(worker.stderrText.suffix(2_000))", sourceLocation: sourceLocation)
        }
    }
}

/// One request of a scripted exchange.
struct Call: Sendable {
    var method: String
    var params: WireJSON
}

/// Sends `calls` to each worker (worker `i` gets `plan[i]`) from one thread per worker, all
/// at once, without waiting between requests; then reads every response. Returns, per
/// worker, the responses in the order of its calls. Ids are the calls' indices.
func exchange(_ workers: [WorkerProcess], _ plan: [[Call]]) throws -> [[WorkerResponse]] {
    precondition(workers.count == plan.count)
    let results = LockedBox<[Int: [WorkerResponse]]>([:])
    let errors = runConcurrently(workers.count) { index in
        let worker = workers[index]
        let calls = plan[index]
        for (id, call) in calls.enumerated() {
            try worker.sendRequest(call.method, params: call.params, id: .int(id))
        }
        var byID = [Int: WorkerResponse]()
        for _ in calls.indices {
            let response = try worker.readResponse()
            guard let id = response.id?.intValue, calls.indices.contains(id), byID[id] == nil else {
                throw UnexpectedAnswer(description: "worker \(index): unexpected or repeated id in \(response.raw)")
            }
            byID[id] = response
        }
        results.withValue { $0[index] = calls.indices.map { byID[$0]! } }
    }
    if let first = errors.first { throw first }
    return results.withValue { all in workers.indices.map { all[$0] ?? [] } }
}

struct UnexpectedAnswer: Error, CustomStringConvertible {
    let description: String
}

extension WorkerResponse {
    /// The result's `id` as a UUID.
    var resultID: UUID? { result?["id"]?.stringValue.flatMap(UUID.init(uuidString:)) }
}

extension Connection {
    /// A query's single integer (count(*) and the like).
    func count(_ query: Query) throws -> Int {
        try queryOne(query).decode(Int.self, at: 0)
    }
}
