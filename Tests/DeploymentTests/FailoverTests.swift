import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Two servers of the test's own (scripts/failover-tmp): a primary and its synchronous
/// standby, with the steps of a failover; `with` stops both and deletes their directory on
/// every path.
struct FailoverServers {
    let directory: String

    private static var script: String { TestDatabase.repositoryRoot.appendingPathComponent("scripts/failover-tmp").path }

    static func with<Value>(_ body: (FailoverServers) throws -> Value) throws -> Value {
        let directory = "/tmp/habit-failover.wt\(UUID().uuidString.lowercased().prefix(8))"
        defer { _ = try? WorkerProcess.run("/bin/bash", [script, "stop", directory], environment: environment) }
        try WorkerProcess.checked(WorkerProcess.run("/bin/bash", [script, "start", directory], environment: environment), "failover-tmp start")
        return try body(FailoverServers(directory: directory))
    }

    /// `failover-tmp STEP DIR` (kill-primary, promote, rebuild).
    func step(_ name: String) throws {
        try WorkerProcess.checked(WorkerProcess.run("/bin/bash", [Self.script, name, directory], environment: Self.environment), "failover-tmp \(name)")
    }

    /// One of the URLs `failover-tmp urls` exports for the current roles.
    func url(_ name: String) throws -> String {
        let printed = try WorkerProcess.checked(WorkerProcess.run("/bin/bash", [Self.script, "urls", directory], environment: Self.environment), "failover-tmp urls")
        let prefix = "export \(name)='"
        let line = try #require(printed.stdout.split(separator: "\n").first { $0.hasPrefix(prefix) }, "no \(name) in \(printed.stdout)")
        return String(line.dropFirst(prefix.count).dropLast())
    }

    static var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = (environment["PATH"].map { $0 + ":" } ?? "") + "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        return environment
    }
}

/// What the writers were told succeeded: each must be on whichever server is the primary.
struct Ledger {
    var habits: Set<UUID> = []
    var completions: [(habit: UUID, date: String)] = []
    /// Every failure's data.reason, with how many times.
    var failures: [String: Int] = [:]

    /// The acknowledged writes missing on the server at `url`.
    func missing(on url: String, user: UUID) throws -> [String] {
        let connection = try Connection(url)
        defer { connection.close() }
        let storedHabits = Set(try connection.query("SELECT id FROM public.habit_templates WHERE user_id = \(user)")
            .map { try $0.decode(UUID.self, at: 0) })
        let storedCompletions = Set(try connection.query("SELECT template_id::text || ' ' || completed_date::text FROM public.habit_completions WHERE user_id = \(user)")
            .map { try $0.decode(String.self, at: 0) })
        return habits.subtracting(storedHabits).map { "habit \($0)" }
            + completions.map { "\($0.habit.uuidString.lowercased()) \($0.date)" }.filter { !storedCompletions.contains($0) }.map { "completion \($0)" }
    }
}

/// The load of a failover: `writers` requests in flight at a time, half `habits.create` with a
/// client-supplied id, half `completions.set` on a habit created before, each on a new date;
/// every success goes in the ledger, every failure's reason is counted.
final class FailoverLoad {
    let worker: WorkerProcess
    let user = UUID()
    let anchor = UUID()
    let writers: Int
    var ledger = Ledger()
    private var day = 0
    private var nextID = 0

    init(worker: WorkerProcess, writers: Int = 4) throws {
        self.worker = worker
        self.writers = writers
        try worker.call("habits.create", params(user, ["id": .uuid(anchor), "name": "Anchor", "activated_at": "2000-01-01T00:00:00Z"]))
        ledger.habits.insert(anchor)
    }

    /// One round: `writers` requests sent together, then their answers. True if all succeeded.
    @discardableResult
    func round() throws -> Bool {
        var sent: [(id: Int, habit: UUID?, completion: (UUID, String)?)] = []
        for index in 0..<writers {
            nextID += 1
            if index % 2 == 0 {
                let habit = UUID()
                try worker.sendRequest("habits.create", params: params(user, ["id": .uuid(habit), "name": .string("H\(nextID)")]), id: .int(nextID))
                sent.append((nextID, habit, nil))
            } else {
                day += 1
                let date = Calendar(identifier: .gregorian).date(byAdding: .day, value: day, to: Date(timeIntervalSince1970: 946_684_800))!
                let text = ISO8601DateFormatter.string(from: date, timeZone: TimeZone(identifier: "UTC")!, formatOptions: [.withFullDate])
                try worker.sendRequest("completions.set", params: params(user, ["template_id": .uuid(anchor), "date": .string(text), "completed": true]), id: .int(nextID))
                sent.append((nextID, nil, (anchor, text)))
            }
        }
        var allSucceeded = true
        for request in sent {
            let response = try worker.response(id: .int(request.id), timeout: 30)
            if response.isSuccess {
                if let habit = request.habit { ledger.habits.insert(habit) }
                if let completion = request.completion { ledger.completions.append(completion) }
            } else {
                allSucceeded = false
                ledger.failures[response.reason ?? "code \(response.code ?? 0)", default: 0] += 1
            }
        }
        return allSucceeded
    }

    /// Rounds until one succeeds entirely; returns when (nil: not within `limit` seconds).
    func untilSuccess(limit: TimeInterval) throws -> Date? {
        let deadline = Date(timeIntervalSinceNow: limit)
        while Date() < deadline {
            if try round() { return Date() }
            usleep(20_000)
        }
        return nil
    }
}

/// Issue #20, failover: a worker on a multi-host URL loses its primary to kill -9; the standby
/// is promoted; the worker follows it by itself, and no acknowledged write is lost.
@Suite("deployment: failover to a synchronous standby")
struct FailoverTests {
    static func habit(_ arguments: [String]) throws -> WorkerProcess.CommandResult {
        try WorkerProcess.run(try WorkerProcess.binaryPath(), arguments, environment: WorkerProcess.childEnvironment())
    }

    static func changeSeq(of user: UUID, on url: String) throws -> Int64 {
        let connection = try Connection(url)
        defer { connection.close() }
        return try connection.queryOne("SELECT coalesce((SELECT seq FROM habit.sync_clocks WHERE user_id = \(user)), 0)").decode(Int64.self, at: 0)
    }

    /// Reads the subscriber's lines until a `changes` notification of `user` whose cursor is at
    /// least `seq` (notifications fold several changes); false if none within 30 s.
    static func waitForNotification(_ subscriber: WorkerProcess, user: UUID, atLeast seq: Int64) throws -> Bool {
        let deadline = Date(timeIntervalSinceNow: 30)
        while Date() < deadline {
            guard let line = subscriber.readLine(timeout: max(0, deadline.timeIntervalSinceNow)) else { return false }
            let json = try WireJSON.parse(line)
            guard json["method"]?.stringValue == "changes", json["params"]?["user_id"]?.stringValue == user.uuidString.lowercased() || json["params"]?["user_id"]?.stringValue == user.uuidString,
                  let cursor = json["params"]?["cursor"]?.stringValue else { continue }
            if (try? SyncCursor(text: cursor))?.seq ?? -1 >= seq { return true }
        }
        return false
    }

    /// Rounds of failover: kill the primary mid-load, promote the standby, keep writing until
    /// writes succeed, check the ledger on the new primary, rebuild the old one as standby.
    /// HABIT_FAILOVER_ROUNDS (scripts/reliability.sh failover N) sets how many; the suite does 2.
    @Test("kill -9 the primary mid-load, promote: the worker resumes by itself, every acknowledged write is on the new primary")
    func acknowledgedWritesSurviveFailover() throws {
        let rounds = Int(ProcessInfo.processInfo.environment["HABIT_FAILOVER_ROUNDS"] ?? "") ?? 2
        try FailoverServers.with { servers in
            try WorkerProcess.checked(Self.habit(["migrate", "--database-url", try servers.url("PRIMARY_URL")]), "migrate")
            let failoverURL = try servers.url("FAILOVER_URL")
            // The load's worker; its --listen-url is the multi-host URL too, so its change
            // listener must follow the primary as its pool does.
            try WorkerProcess.withServe(databaseURL: failoverURL, arguments: ["--statement-timeout-ms", "2000", "--listen-url", failoverURL]) { worker in
                let load = try FailoverLoad(worker: worker)
                let subscriber = try WorkerProcess.serve(databaseURL: failoverURL, arguments: ["--listen-url", failoverURL])
                defer { subscriber.forceStop() }
                #expect(try subscriber.call("changes.subscribe", params(load.user))["subscribed"] == true)
                var fromKill: [Double] = [], fromPromotion: [Double] = []
                for failover in 1...rounds {
                    for _ in 0..<10 { try load.round() }
                    // Writes in flight while the primary dies.
                    for index in 1...load.writers {
                        try worker.sendRequest("habits.create", params: params(load.user, ["name": .string("inflight\(failover).\(index)")]), id: .string("inflight-\(failover)-\(index)"))
                    }
                    let killed = Date()
                    try servers.step("kill-primary")
                    for index in 1...load.writers {
                        let response = try worker.response(id: .string("inflight-\(failover)-\(index)"), timeout: 30)
                        if !response.isSuccess { load.ledger.failures[response.reason ?? "?", default: 0] += 1 }
                    }
                    // Load during the outage, then promotion.
                    for _ in 0..<5 { try load.round(); usleep(20_000) }
                    try servers.step("promote")
                    let promoted = Date()
                    let resumed = try #require(try load.untilSuccess(limit: 60), "writes did not resume within 60 s of the promotion")
                    fromKill.append(resumed.timeIntervalSince(killed))
                    fromPromotion.append(resumed.timeIntervalSince(promoted))
                    for _ in 0..<10 { try load.round() }
                    let newPrimary = try servers.url("PRIMARY_URL")
                    // The subscriber's listener reconnected to the new primary: it hears the
                    // writes made there (a notification with the user's latest change).
                    let latest = try Self.changeSeq(of: load.user, on: newPrimary)
                    #expect(try Self.waitForNotification(subscriber, user: load.user, atLeast: latest),
                            "failover \(failover): no change notification with seq \(latest) from the new primary")
                    let missing = try load.ledger.missing(on: newPrimary, user: load.user)
                    #expect(missing.isEmpty, "failover \(failover): acknowledged writes missing on the new primary: \(missing.prefix(10))")
                    print(String(format: "reliability figure: failover %d: kill→first success %.2f s, promotion→first success %.2f s, acknowledged %d habits %d completions, lost %d",
                                 failover, fromKill.last!, fromPromotion.last!, load.ledger.habits.count, load.ledger.completions.count, missing.count))
                    if failover < rounds { try servers.step("rebuild") }
                }
                let unexpected = load.ledger.failures.keys.filter { $0 != "database_unavailable" && $0 != "commit_unconfirmed" }
                #expect(unexpected.isEmpty, "answers during the outages other than database_unavailable: \(load.ledger.failures)")
                print("reliability figure: failures by reason: \(load.ledger.failures)")
                let sorted = fromPromotion.sorted()
                print(String(format: "reliability figure: %d failovers: promotion→first success median %.2f s max %.2f s; kill→first success max %.2f s",
                             rounds, sorted[sorted.count / 2], sorted.last!, fromKill.max()!))
            }
        }
    }

    /// The trap of synchronous replication: a commit whose wait for the standby is cancelled is
    /// committed locally and answered with a WARNING only. statement_timeout does not stop that
    /// wait (PostgreSQL disables it before committing): the worker's watchdog cancels it after
    /// the timeout plus a second, and must answer an error, not a success.
    @Test("standby gone: a write is answered commit_unconfirmed after the statement timeout plus a second, never acknowledged")
    func unconfirmedCommitIsNotAcknowledged() throws {
        try FailoverServers.with { servers in
            let primaryURL = try servers.url("PRIMARY_URL")
            try WorkerProcess.checked(Self.habit(["migrate", "--database-url", primaryURL]), "migrate")
            try WorkerProcess.withServe(databaseURL: primaryURL, arguments: ["--statement-timeout-ms", "500"]) { worker in
                let user = UUID()
                try worker.call("habits.create", params(user, ["name": "Confirmed"]))
                // The standby's postmaster killed: nobody confirms commits any more.
                try servers.stopStandby()
                let habit = UUID()
                let started = Date()
                let answer = try worker.request("habits.create", params: params(user, ["id": .uuid(habit), "name": "Unconfirmed"]), timeout: 30)
                let waited = Date().timeIntervalSince(started)
                #expect(!answer.isSuccess, "\(answer)")
                #expect(answer.code == -32021 && answer.reason == "commit_unconfirmed", "\(answer)")
                #expect(waited < 20, "answered after \(waited) s")
                // A read commits nothing and waits for nobody.
                let list = try worker.request("habits.list", params: params(user), timeout: 30)
                #expect(list.isSuccess, "\(list)")
                // What the error means: the primary has the row, the standby may not.
                let connection = try Connection(primaryURL)
                defer { connection.close() }
                let stored = try connection.queryOne("SELECT count(*)::int FROM public.habit_templates WHERE id = \(habit)").decode(Int.self, at: 0)
                #expect(stored == 1, "the unconfirmed commit is applied on the primary")
                print(String(format: "commit_unconfirmed after %.2f s (statement timeout 0.5 s + 1 s)", waited))
            }
        }
    }

    /// The other way a sync-rep wait ends early: the backend is terminated while its commit
    /// waits (a failover tool, an admin, a server shutdown). PostgreSQL warns (57P01, "canceling
    /// the wait for synchronous replication and terminating connection") and closes the
    /// connection: the worker cannot know the outcome and must answer an error.
    @Test("a backend terminated while its commit waits for the standby: an error, never a success")
    func terminatedDuringCommitIsNotAcknowledged() throws {
        try FailoverServers.with { servers in
            let primaryURL = try servers.url("PRIMARY_URL")
            try WorkerProcess.checked(Self.habit(["migrate", "--database-url", primaryURL]), "migrate")
            // A statement timeout long enough that the watchdog stays out of it.
            try WorkerProcess.withServe(databaseURL: primaryURL, arguments: ["--statement-timeout-ms", "60000", "--pool-size", "1"]) { worker in
                let user = UUID()
                try worker.call("habits.create", params(user, ["name": "Confirmed"]))
                try servers.stopStandby()
                try worker.sendRequest("habits.create", params: params(user, ["name": "Waiting"]), id: "waiting")
                let admin = try Connection(primaryURL)
                defer { admin.close() }
                var terminated = false
                for _ in 0..<1_000 where !terminated {
                    terminated = try admin.queryOne("""
                        SELECT count(pg_terminate_backend(pid))::int > 0 FROM pg_stat_activity
                        WHERE wait_event = 'SyncRep' AND application_name = 'habit-serve'
                        """).decode(Bool.self, at: 0)
                    if !terminated { usleep(10_000) }
                }
                try #require(terminated, "no worker backend waited for the standby within 10 s")
                let answer = try worker.response(id: "waiting", timeout: 30)
                #expect(!answer.isSuccess, "\(answer)")
                #expect(answer.reason == "database_unavailable" || answer.reason == "commit_unconfirmed", "\(answer)")
                print("terminated during commit: \(answer.raw)")
            }
        }
    }
}

extension FailoverServers {
    /// Kills the standby's postmaster and processes (the primary keeps waiting for it).
    func stopStandby() throws {
        let standby = try url("STANDBY_URL")
        let node = standby.hasSuffix("/a/socket") ? "a" : "b"
        let pid = try String(contentsOfFile: "\(directory)/\(node)/data/postmaster.pid", encoding: .utf8).split(separator: "\n")[0]
        try WorkerProcess.checked(WorkerProcess.run("/bin/bash", ["-c", "kill -9 \(pid) $(pgrep -P \(pid)); while kill -0 \(pid) 2>/dev/null; do sleep 0.01; done"]), "kill the standby")
    }
}
