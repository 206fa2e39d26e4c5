import ArgumentParser
import Foundation
import HabitClient
import JSONRPC
#if canImport(Glibc)
import Glibc
#endif

/// habit-bench: drives a spawned `habit serve` through its pipes with HabitClient, keeping a fixed number of
/// requests in flight, and prints requests/s and latency percentiles as one JSON line.
///
/// Users and habits must exist (scripts/bench/setup-worker.sql creates them): user n is
/// md5('bench-user-n')::uuid with one habit md5('bench-habit-n')::uuid.
@main
struct HabitBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "habit-bench",
        abstract: "Load generator for `habit serve` (scripts/bench-worker.sh, scripts/bench-scaling.sh).",
        discussion: """
            Spawns the worker with --database-url, --pool-size, --max-in-flight (the in-flight count) \
            and --log-level warning, plus every argument habit-bench does not know itself, e.g. \
            `--prepared-statements off`. Requests pick a random bench user; completions.set sets a \
            random state (with --alternate, each user's opposite of its last). Prints {"method","in_flight","requests","errors","seconds","rps","p50_ms","p99_ms"}.
            """
    )

    @Option(help: ArgumentHelp("The habit executable.", valueName: "path"))
    var binary = ".build/release/habit"

    @Option(help: ArgumentHelp("Passed to the worker as --database-url.", valueName: "url"))
    var databaseURL = ""

    @Option(help: "day.get, completions.set, habits.stats, sync.pull (with each user's caught-up cursor: nothing new) or sync.push (one completions.set mutation); any other method is sent with empty params.")
    var method = "day.get"

    @Option(help: ArgumentHelp("day.get's include (e.g. streaks); none when empty.", valueName: "list"))
    var include = ""

    @Option(help: ArgumentHelp("Requests kept in flight.", valueName: "n"))
    var inFlight = 1

    @Option(help: "How long to send requests; the ones in flight are then answered.")
    var seconds = 10.0

    @Option(help: ArgumentHelp("Bench users requests are spread over (md5('bench-user-1') …).", valueName: "n"))
    var users = 64

    @Option(help: ArgumentHelp("The habit completions.set and sync.push write: md5('bench-habit-<n><suffix>'); scripts/bench/setup-streaks.sql's first habit is \"-1\".", valueName: "suffix"))
    var habitSuffix = ""

    @Flag(help: "completions.set and sync.push: each user's requests alternate done, not done, done… (instead of a random state), so that every request changes the row once it differs from the first.")
    var alternate = false

    @Option(help: ArgumentHelp("Passed to the worker as --pool-size.", valueName: "n"))
    var poolSize = 4

    @Option(help: ArgumentHelp("The date of every request.", valueName: "YYYY-MM-DD"))
    var date = "2026-11-02"

    @Option(help: ArgumentHelp("completions.set: send this value (a decimal string) instead of completed (with --alternate: this, \"0\", this…); checkins.add: the value of each check-in (default \"1\").", valueName: "decimal"))
    var value = ""

    @Option(help: ArgumentHelp("checkins.add: each request's date is --date minus 0 … n-1 days, at random (a day takes at most 100 check-ins).", valueName: "n"))
    var spreadDays = 1

    @Argument(parsing: .allUnrecognized, help: "Further worker arguments.")
    var workerArguments: [String] = []

    func validate() throws {
        guard inFlight >= 1 else { throw ValidationError("--in-flight must be at least 1") }
        guard users >= 1 else { throw ValidationError("--users must be at least 1") }
        guard seconds > 0 else { throw ValidationError("--seconds must be more than 0") }
        guard spreadDays >= 1 else { throw ValidationError("--spread-days must be at least 1") }
    }

    /// `end` and the `count - 1` days before it, as YYYY-MM-DD.
    static func dates(endingAt end: String, count: Int) throws -> [String] {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd"
        guard let last = formatter.date(from: end) else { throw ValidationError("--date must be YYYY-MM-DD") }
        return (0..<count).map { formatter.string(from: last.addingTimeInterval(-86_400 * Double($0))) }
    }

    func run() throws {
        let arguments = ["serve", "--database-url", databaseURL, "--pool-size", String(poolSize),
                         "--max-in-flight", String(inFlight), "--log-level", "warning"] + workerArguments
        var requests = RequestMaker(method: method, date: date, users: users, habitSuffix: habitSuffix,
                                    include: include.split(separator: ",").map(String.init), alternate: alternate)
        requests.value = value.isEmpty ? nil : value
        requests.dates = try Self.dates(endingAt: date, count: spreadDays)
        if method == "sync.pull" {
            requests.cursors = try caughtUpCursors(of: requests.users, arguments: arguments)
        }
        let driver = try LoadDriver(binary: binary, arguments: arguments, inFlight: inFlight, requests: requests)
        let result = driver.run(seconds: seconds)
        print(String(format: #"{"method":"%@","in_flight":%d,"requests":%d,"errors":%d,"seconds":%.3f,"rps":%.1f,"p50_ms":%.3f,"p99_ms":%.3f}"#,
                     method, inFlight, result.latencies.count, result.errors, result.seconds,
                     Double(result.latencies.count) / result.seconds, result.percentile(0.50), result.percentile(0.99)))
    }
}

extension HabitBench {
    /// Each user's cursor after a whole walk (`sync.pull` without a cursor, pages followed to the
    /// end), from a worker of its own: a pull with it finds nothing new.
    func caughtUpCursors(of users: [String], arguments: [String]) throws -> [String] {
        let worker = try WorkerConnection(command: WorkerCommand(executable: binary, arguments: arguments))
        defer {
            worker.closeInput()
            _ = worker.waitForExit(timeout: 60)
        }
        let outcome = Locked<Result<[String], Error>>(.success([]))
        let done = DispatchSemaphore(value: 0)
        Task {
            do {
                var cursors: [String] = []
                for user in users {
                    var cursor: String?
                    while true {
                        var params: JSONObject = ["user_id": .string(user), "limit": .int(10_000)]
                        if let cursor { params.append(key: "cursor", value: .string(cursor)) }
                        let page = try await worker.call(method: "sync.pull", params: params)
                        cursor = page["cursor"]?.stringValue
                        if page["has_more"] != .bool(true) { break }
                    }
                    cursors.append(cursor ?? "")
                }
                outcome.value = .success(cursors)
            } catch {
                outcome.value = .failure(error)
            }
            done.signal()
        }
        done.wait()
        return try outcome.value.get()
    }
}

/// A value shared with a task, under a lock.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
    /// Reads and changes the value in one step.
    func update<T>(_ body: (inout Value) -> T) -> T { lock.withLock { body(&stored) } }
}

/// One request per call, for a random bench user.
struct RequestMaker {
    let method: String
    let date: String
    let users: [String]
    let habits: [String]
    let include: [String]
    /// sync.pull: each user's caught-up cursor.
    var cursors: [String] = []
    /// `--alternate`: each user's next state (true first); nil: a random state per request.
    let nextStates: Locked<[Bool]>?
    /// `--value`: completions.set sends it (alternating with "0"); checkins.add's value.
    var value: String?
    /// checkins.add: the dates a request picks from (`--spread-days`).
    var dates: [String] = []

    init(method: String, date: String, users count: Int, habitSuffix: String = "", include: [String] = [],
         alternate: Bool = false) {
        self.method = method
        self.date = date
        self.include = include
        users = (1...count).map { md5UUID("bench-user-\($0)") }
        habits = (1...count).map { md5UUID("bench-habit-\($0)\(habitSuffix)") }
        nextStates = alternate ? Locked([Bool](repeating: true, count: count)) : nil
    }

    /// The state a write of user `index` sets: random, or with `--alternate` the opposite of the
    /// user's previous one (the worker runs a user's requests in the order they were sent).
    func completed(_ index: Int) -> Bool {
        guard let nextStates else { return Bool.random() }
        return nextStates.update { states in
            defer { states[index].toggle() }
            return states[index]
        }
    }

    /// sync.push: a mutation's error is inside a result (`LoadDriver` counts it too).
    var answersCarryOutcomes: Bool { method == "sync.push" }

    /// The method and params of the next request.
    func next() -> (method: String, params: JSONObject?) {
        let index = Int.random(in: 0..<users.count)
        switch method {
        case "completions.set" where value != nil:
            return (method, ["user_id": .string(users[index]), "template_id": .string(habits[index]), "date": .string(date),
                             "value": .string(completed(index) ? value! : "0")])
        case "completions.set":
            return (method, ["user_id": .string(users[index]), "template_id": .string(habits[index]), "date": .string(date),
                             "completed": .bool(completed(index))])
        case "checkins.add":
            return (method, ["user_id": .string(users[index]), "template_id": .string(habits[index]),
                             "date": .string(dates.randomElement() ?? date), "value": .string(value ?? "1")])
        case "day.get" where include.isEmpty:
            return (method, ["user_id": .string(users[index]), "date": .string(date)])
        case "day.get":
            return (method, ["user_id": .string(users[index]), "date": .string(date), "include": .array(include.map { .string($0) })])
        case "sync.pull":
            return (method, ["user_id": .string(users[index]), "cursor": .string(cursors[index])])
        case "sync.push":
            // The same write as completions.set's, as one mutation of a push: a fresh
            // mutation_id each time, so every push is applied (none is a replay).
            let mutation: JSONObject = ["mutation_id": .string(UUID().uuidString), "method": .string("completions.set"),
                                        "params": .object(["template_id": .string(habits[index]), "date": .string(date),
                                                           "completed": .bool(completed(index))])]
            return (method, ["user_id": .string(users[index]), "client_id": .string("bench"), "mutations": .array([.object(mutation)])])
        case "habits.stats", "widget.get":
            return (method, ["user_id": .string(users[index]), "date": .string(date)])
        default:
            return (method, JSONObject())
        }
    }
}

/// md5-based ids, as the SQL side computes them: md5('bench-user-n')::uuid.
func md5UUID(_ text: String) -> String {
    var digest = [UInt8](repeating: 0, count: 16)
    MD5.hash(Array(text.utf8), into: &digest)
    let hex = Array(digest.map { String(format: "%02x", $0) }.joined())
    return "\(String(hex[0..<8]))-\(String(hex[8..<12]))-\(String(hex[12..<16]))-\(String(hex[16..<20]))-\(String(hex[20..<32]))"
}
