import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// changes.subscribe over the pipes: a subscriber on one worker hears about changes made by
/// another worker, by psql, through a transaction pooler; nothing for users it did not
/// subscribe; a burst folded into few notifications; a notification for every subscribed user
/// after the server came back; and writers that send no NOTIFY (sql/0026: the worker polls),
/// so that two users' commits never wait for each other. Every wait is for a line, with a
/// generous timeout.
@Suite("habit serve: change notifications")
struct ChangeNotificationTests {
    @Test("a change through worker A and one through psql reach a subscriber on worker B, each with the cursor of its change")
    func otherWorkerAndPsql() throws {
        try WorkerSession.with { session in
            try session.withAnotherWorker { other in
                let subscriber = ChangeSubscriber(other)
                let user = UUID()
                #expect(try subscriber.listen(to: user).user == user)

                let habit = try #require(try session.worker.createHabit(user: user, name: "Walk").habitID)
                let afterCreate = try session.changeSeq(of: user)
                #expect(try subscriber.waitForChange(of: user, atLeast: afterCreate).seq == afterCreate)

                try session.admin.execute("UPDATE public.habit_templates SET name = 'Run' WHERE id = \(habit)")
                let afterPsql = try session.changeSeq(of: user)
                #expect(afterPsql > afterCreate)
                #expect(try subscriber.waitForChange(of: user, atLeast: afterPsql).seq == afterPsql)
            }
        }
    }

    @Test("an unsubscribed user gets nothing: a later change of a subscribed user arrives alone")
    func unsubscribedUserGetsNothing() throws {
        try WorkerSession.with { session in
            try session.withAnotherWorker { other in
                let subscriber = ChangeSubscriber(other)
                let (heard, left, never) = (UUID(), UUID(), UUID())
                _ = try subscriber.listen(to: heard)
                #expect(try subscriber.listen(to: left).user == left) // every subscribe: the cursor of now
                #expect(try subscriber.call("changes.unsubscribe", params(left))["subscribed"] == false)
                #expect(try subscriber.call("changes.unsubscribe", params(never))["subscribed"] == false)
                // Committed first, so their notifications, if any, would come first.
                _ = try session.worker.createHabit(user: left, name: "Left")
                _ = try session.worker.createHabit(user: never, name: "Never")
                _ = try session.worker.createHabit(user: heard, name: "Heard")
                let next = try subscriber.nextChange()
                #expect(next.user == heard, "\(next)")
                #expect(next.seq == (try session.changeSeq(of: heard)))
            }
        }
    }

    @Test("1,000 changes in a burst: at most one notification per 200 ms window (+2), the last with the final cursor")
    func burstIsCoalesced() throws {
        try WorkerSession.with { session in
            try session.withAnotherWorker { other in
                let subscriber = ChangeSubscriber(other)
                let user = UUID()
                _ = try subscriber.listen(to: user)
                let habit = try #require(try session.worker.createHabit(user: user, name: "Burst").habitID)
                _ = try subscriber.waitForChange(of: user, atLeast: try session.changeSeq(of: user))

                let started = DispatchTime.now()
                // 1,000 transactions, sent at once and answered in order (one user's requests).
                for index in 0..<1_000 {
                    try session.worker.sendRequest("habits.update", params: params(user, ["id": .uuid(habit), "name": .string("Burst \(index)")]),
                                                   id: .string("burst-\(index)"))
                }
                for index in 0..<1_000 {
                    #expect(try session.worker.response(id: .string("burst-\(index)")).isSuccess)
                }
                let burst = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
                let final = try session.changeSeq(of: user)
                var received = 0
                while true {
                    let change = try subscriber.nextChange()
                    #expect(change.user == user)
                    received += 1
                    if change.seq >= final {
                        #expect(change.seq == final)
                        break
                    }
                }
                let bound = Int(burst / 0.2) + 2
                #expect(received <= bound, "\(received) notifications for a burst of \(burst) s")
                #expect(received >= 1)
            }
        }
    }

    @Test("a gateway that stops reading stdout: the listener keeps polling, and afterwards each user's last notification carries its final cursor, folded")
    func unreadStdoutDoesNotStopTheListener() throws {
        try WorkerSession.with { session in
            // A raw process, not WorkerProcess (whose reader thread drains stdout at once):
            // nobody reads this stdout until the flood is over.
            let process = Process(), input = Pipe(), output = Pipe()
            process.executableURL = URL(fileURLWithPath: try WorkerProcess.binaryPath())
            process.arguments = ["serve", "--database-url", try session.database.workerURL(), "--pool-size", "2", "--log-level", "warning"]
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            defer {
                // SIGKILL: a worker asked to stop drains its answers first, and nobody may be
                // reading them any more.
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
                process.waitUntilExit()
            }
            let users = (0..<500).map { _ in UUID() }
            // One batch: its answer (~35 KB) and the 500 "now listening" notifications (~60 KB)
            // already overfill the 64 KiB pipe, so the worker's stdout writer blocks.
            let batch = users.enumerated().map { #"{"jsonrpc":"2.0","id":\#($0.offset),"method":"changes.subscribe","params":{"user_id":"\#($0.element)"}}"# }
            input.fileHandleForWriting.write(Data(("[" + batch.joined(separator: ",") + "]\n").utf8))
            #expect(try waitUntil { try session.listenBackends() == 1 })

            let list = users.map(\.uuidString).joined(separator: ",")
            var blockedBackend = false
            for round in 0..<20 {
                // One transaction touching all 500 users: 500 changes each, 10,000 in all.
                try session.admin.execute("""
                    INSERT INTO public.profiles (user_id, timezone) SELECT u, \(round % 2 == 0 ? "Europe/Paris" : "UTC")
                    FROM unnest(string_to_array(\(list), ',')::uuid[]) u ON CONFLICT (user_id) DO UPDATE SET timezone = excluded.timezone
                    """)
                // A listener that stopped reading its connection would leave its backend writing to it.
                blockedBackend = try blockedBackend || session.admin.queryOne("""
                    SELECT count(*)::int FROM pg_stat_activity
                    WHERE datname = current_database() AND application_name = 'habit-listen' AND wait_event = 'ClientWrite'
                    """).decode(Int.self, at: 0) > 0
            }
            #expect(!blockedBackend, "the listen connection's backend waited to write to the worker")
            let finals = try Dictionary(uniqueKeysWithValues: users.map { ($0, try session.changeSeq(of: $0)) })

            // Now read: every user's notifications end at its final change, and the 10,000
            // changes arrive folded (at most the listening one, one written before the block,
            // one pending per user, and a couple of 200 ms windows).
            var reached = Set<UUID>(), notifications = 0, bytes = 0, buffer = Data()
            let reader = output.fileHandleForReading
            // availableData blocks: past the hang guard, ending the worker ends the read (EOF).
            let guardTimer = DispatchSource.makeTimerSource()
            guardTimer.schedule(deadline: .now() + 60)
            guardTimer.setEventHandler { process.terminate() }
            guardTimer.resume()
            defer { guardTimer.cancel() }
            while reached.count < users.count {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                bytes += chunk.count
                buffer.append(chunk)
                while let newline = buffer.firstIndex(of: 0x0A) {
                    let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                    buffer.removeSubrange(buffer.startIndex...newline)
                    guard let change = try ChangeSubscriber.change(in: line) else { continue } // the batch's answer
                    notifications += 1
                    if change.seq == finals[change.user] { reached.insert(change.user) }
                }
            }
            #expect(bytes > 65_536, "the pipe never filled (\(bytes) bytes): the test did not block the writer")
            #expect(reached.count == users.count, "\(users.count - reached.count) users never got their final cursor")
            #expect(notifications <= users.count * 5, "\(notifications) notifications for 10,000 changes of \(users.count) users")
        }
    }

    @Test("NOTIFYs on habit_changes are not heard (the old '<user> <seq>' form, and the user's own token, sent as another user's role): the next line carries the real change")
    func forgedNotificationsAreNotBelieved() throws {
        try WorkerSession.with { session in
            let subscriber = ChangeSubscriber(session.worker)
            let (user, forger) = (UUID(), UUID())
            _ = try subscriber.listen(to: user)
            let habit = try #require(try subscriber.call("habits.create", params(user, ["name": "Real"]))["id"]?.stringValue)
            let created = try session.changeSeq(of: user)
            #expect(try subscriber.waitForChange(of: user, atLeast: created).seq == created)
            // The user's token, read as the owner (to_jsonb: before sql/0025 there is no column).
            let token = try session.admin.queryOne("""
                SELECT coalesce(to_jsonb(c) ->> 'notify_token', '') FROM habit.sync_clocks c WHERE c.user_id = \(user)
                """).decode(String.self, at: 0)
            let forgery = try session.database.connect()
            defer { forgery.close() }
            try forgery.execute("""
                SELECT set_config('role', 'authenticated', false), set_config('request.jwt.claim.sub', \(forger.lowercaseString), false)
                """)
            for payload in ["\(user.lowercaseString) 999999999", "\(user.lowercaseString) \(created + 1)", token, "\(token) 999999999"] {
                try forgery.execute("SELECT pg_notify('habit_changes', \(payload))")
            }
            // Committed after the forgeries, so heard after them: the first line about the user
            // is this change, with its own cursor.
            try session.admin.execute("UPDATE public.habit_templates SET name = 'Renamed' WHERE id = \(habit)::uuid")
            let renamed = try session.changeSeq(of: user)
            #expect(renamed == created + 1)
            let next = try subscriber.nextChange()
            #expect(next.user == user && next.seq == renamed, "\(next)")
            // Nothing else came: the next line is the answer of a ping.
            #expect(try subscriber.call("system.ping")["ok"] == true)
            #expect(subscriber.buffered.isEmpty, "\(subscriber.buffered)")
        }
    }

    @Test("a user subscribed while the worker already polls, who never wrote, gets the cursor of now at once, then hears their first write")
    func laterSubscriberHearsFirstWrite() throws {
        try WorkerSession.with { session in
            let subscriber = ChangeSubscriber(session.worker)
            let (first, later) = (UUID(), UUID())
            _ = try subscriber.listen(to: first)
            let now = try subscriber.listen(to: later)
            #expect(now.user == later && now.seq == 0, "\(now)")
            _ = try subscriber.call("habits.create", params(later, ["name": "First"]))
            let seq = try session.changeSeq(of: later)
            #expect(seq == 1)
            let next = try subscriber.nextChange()
            #expect(next.user == later && next.seq == seq, "\(next)")
        }
    }

    @Test("a session LISTENing on habit_changes hears nothing of a user's writes: writers send no NOTIFY (sql/0026)")
    func writersSendNoNotify() throws {
        try WorkerSession.with { session in
            let (user, spy) = (UUID(), UUID())
            let listener = try session.database.connect()
            defer { listener.close() }
            try listener.execute("""
                SELECT set_config('role', 'authenticated', false), set_config('request.jwt.claim.sub', \(spy.lowercaseString), false)
                """)
            try listener.execute("LISTEN habit_changes")
            _ = try session.worker.createHabit(user: user, name: "Private")
            try session.admin.execute("INSERT INTO public.profiles (user_id, timezone) VALUES (\(user), 'UTC')")
            // The listener's own NOTIFY comes after the two commits in the queue: once it is
            // here, anything they sent is too.
            try listener.execute("SELECT pg_notify('habit_changes', 'end of test')")
            var payloads: [String] = []
            for _ in 0..<100 where payloads.last != "end of test" {
                payloads += try listener.consumeNotifications().filter { $0.channel == "habit_changes" }.map(\.payload)
                try listener.execute("SELECT 1") // another round trip, should the server still be sending
            }
            #expect(payloads == ["end of test"])
        }
    }

    @Test("the poll is the worker's: authenticated may not call habit.changed_clocks, and an unknown token matches nothing")
    func pollIsTheWorkers() throws {
        try WorkerSession.with { session in
            let user = UUID()
            _ = try session.worker.createHabit(user: user, name: "Mine")
            let token = try session.admin.queryOne("SELECT notify_token FROM habit.sync_clocks WHERE user_id = \(user)").decode(UUID.self, at: 0)
            let device = try session.database.connect()
            defer { device.close() }
            try device.execute("""
                SELECT set_config('role', 'authenticated', false), set_config('request.jwt.claim.sub', \(user.lowercaseString), false)
                """)
            do {
                _ = try device.query("SELECT * FROM habit.changed_clocks(ARRAY[\(token)]::uuid[], ARRAY[NULL]::bigint[])")
                Issue.record("authenticated called habit.changed_clocks")
            } catch let error as PostgresError {
                #expect(error.sqlState == "42501", "\(error)")
            }
            let worker = try Connection(try session.database.workerURL(), applicationName: "habit-tests")
            defer { worker.close() }
            let seq = try session.changeSeq(of: user)
            let rows = try worker.query("SELECT token, seq FROM habit.changed_clocks(ARRAY[\(token), \(UUID())]::uuid[], ARRAY[NULL, NULL]::bigint[])")
            #expect(rows.count == 1)
            #expect(try rows.first?.decode(Int64.self, at: 1) == seq)
            #expect(try worker.query("SELECT * FROM habit.changed_clocks(ARRAY[\(token)]::uuid[], ARRAY[\(seq)]::bigint[])").isEmpty)
        }
    }

    @Test("on the subscriber's own stdout, notifications come between whole responses and batch arrays, never inside one")
    func notificationsInterleaveWholeLines() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            let subscriber = ChangeSubscriber(worker)
            let user = UUID()
            _ = try subscriber.listen(to: user)
            let habit = try #require(try subscriber.call("habits.create", params(user, ["name": "Mixed"]))["id"])
            func update(_ index: Int) -> WireJSON {
                WorkerProcess.envelope(method: "habits.update", params: params(user, ["id": habit, "name": .string("Mixed \(index)")]),
                                       id: .int(index))
            }
            // 300 single requests and 30 batches of 10, written at once.
            var expected = Set(0..<600)
            for index in 0..<300 { try worker.send(update(index)) }
            for batch in 0..<30 { try worker.send(.array((0..<10).map { update(300 + batch * 10 + $0) })) }
            while !expected.isEmpty {
                let bytes: [UInt8]
                switch worker.nextOutput(timeout: 30) {
                case .line(let line): bytes = line
                case let other: throw ChangeSubscriberError.unexpected("\(other)")
                }
                let line = String(decoding: bytes, as: UTF8.self)
                if try ChangeSubscriber.change(in: line) != nil { continue } // between two whole lines
                let response = try WorkerResponse(line: bytes) // a whole response or batch array, or this throws
                for element in response.isBatch ? response.batch : [response] {
                    #expect(element.isSuccess, "\(element)")
                    #expect(expected.remove(try #require(element.id?.intValue)) != nil, "\(element)")
                }
            }
            let final = try session.changeSeq(of: user)
            #expect(try subscriber.waitForChange(of: user, atLeast: final).seq == final)
        }
    }

    @Test("no subscriber, no poll connection: opened by the first subscribe, closed after the last unsubscribe")
    func listenConnectionFollowsSubscribers() throws {
        try WorkerSession.with { session in
            let subscriber = ChangeSubscriber(session.worker)
            #expect(try subscriber.call("system.ping")["ok"] == true)
            #expect(try session.listenBackends() == 0)
            let (first, second) = (UUID(), UUID())
            _ = try subscriber.listen(to: first)
            #expect(try session.listenBackends() == 1)
            _ = try subscriber.call("changes.subscribe", params(second))
            _ = try subscriber.call("changes.unsubscribe", params(first))
            #expect(try session.listenBackends() == 1)
            _ = try subscriber.call("changes.unsubscribe", params(second))
            #expect(try waitUntil { try session.listenBackends() == 0 })
        }
    }

    @Test("the server restarted: after the reconnect every subscribed user gets a notification")
    func reconnectNotifiesEverySubscriber() throws {
        try PrivatePostgresServer.with { server in
            let migrate = try WorkerProcess.run(try WorkerProcess.binaryPath(),
                                                ["migrate", "--database-url", server.adminURL, "--migrations-dir", TestDatabase.migrationsDirectory],
                                                environment: WorkerProcess.childEnvironment())
            try #require(migrate.status == 0, "habit migrate failed: \(migrate.stderr)")
            let workerURL = try ConnectionString.applying(["user": "habit_worker"], to: server.adminURL)
            let health = HealthSocketTests.socketPath()
            defer { HealthSocketTests.removeSocket(health) }
            try WorkerProcess.withServe(databaseURL: workerURL, arguments: ["--pool-size", "1", "--connect-timeout", "2",
                                                                            "--listen-url", workerURL, "--health-socket", health]) { worker in
                let subscriber = ChangeSubscriber(worker)
                let (one, two) = (UUID(), UUID())
                _ = try subscriber.listen(to: one)
                _ = try subscriber.call("changes.subscribe", params(two))
                #expect(try Self.listenStatus(health)?["subscribers"] as? Int == 2)
                #expect(try Self.listenStatus(health)?["connected"] as? Bool == true)
                try server.stop()
                // The health socket says notifications are not coming.
                #expect(try waitUntil { try Self.listenStatus(health)?["connected"] as? Bool == false })
                let error = try Self.listenStatus(health)?["last_error"] as? [String: Any]
                #expect(["connection_lost", "connect_failed"].contains(error?["reason"] as? String ?? ""), "\(String(describing: error))")
                try server.start()
                var notified: Set<UUID> = []
                while notified.count < 2 {
                    notified.insert(try subscriber.nextChange().user)
                }
                #expect(notified == [one, two])
                // Listening again: a change after the restart is heard.
                let admin = try Connection(server.adminURL, applicationName: "habit-tests")
                defer { admin.close() }
                try admin.execute("INSERT INTO public.profiles (user_id, timezone) VALUES (\(two), 'UTC')")
                let seq = try admin.queryOne("SELECT seq FROM habit.sync_clocks WHERE user_id = \(two)").decode(Int64.self, at: 0)
                #expect(try subscriber.waitForChange(of: two, atLeast: seq).seq == seq)
            }
        }
    }

    @Test("a poll that is never answered (the poll connection's backend frozen with SIGSTOP): the listener gives the connection up after the response limit, reconnects, and every subscriber is notified again")
    func frozenPollBackendIsAbandoned() throws {
        try TestDatabase.with { database in
            let health = HealthSocketTests.socketPath()
            defer { HealthSocketTests.removeSocket(health) }
            // 1 s statement timeout: the poll is abandoned about 2 × 2 s after it was sent.
            try WorkerProcess.withServe(databaseURL: try database.workerURL(),
                                        arguments: ["--pool-size", "1", "--statement-timeout-ms", "1000", "--health-socket", health]) { worker in
                let subscriber = ChangeSubscriber(worker)
                let user = UUID()
                _ = try subscriber.listen(to: user)
                let admin = try database.connect()
                defer { admin.close() }
                let pid = try admin.queryOne("""
                    SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'habit-listen'
                    """).decode(Int32.self, at: 0)
                // A frozen backend takes the poll's bytes and never answers, as a host that
                // vanished would; statement_timeout cannot fire in it.
                #expect(kill(pid, SIGSTOP) == 0)
                defer { kill(pid, SIGCONT) }
                #expect(try waitUntil {
                    (try Self.listenStatus(health)?["last_error"] as? [String: Any])?["reason"] as? String == "connection_lost"
                })
                // Back on a new connection: the subscriber gets the cursor of now, then hears a change.
                let notified = try subscriber.nextChange()
                #expect(notified.user == user)
                #expect(try admin.queryOne("""
                    SELECT count(*)::int FROM pg_stat_activity
                    WHERE datname = current_database() AND application_name = 'habit-listen' AND pid <> \(pid)
                    """).decode(Int.self, at: 0) == 1)
                _ = try subscriber.call("habits.create", params(user, ["name": "After the freeze"]))
                let seq = try admin.queryOne("SELECT seq FROM habit.sync_clocks WHERE user_id = \(user)").decode(Int64.self, at: 0)
                #expect(try subscriber.waitForChange(of: user, atLeast: seq).seq == seq)
                kill(pid, SIGCONT)
                _ = try admin.query("SELECT pg_terminate_backend(\(pid))")
            }
        }
    }

    /// The poll is one statement, so it goes through a transaction pooler too (false): no
    /// --listen-url is needed any more (before 0026 the LISTEN needed a session, true).
    @Test("database URL through pgbouncer in transaction mode, with a direct --listen-url and without one: changes are heard",
          arguments: [true, false])
    func pgBouncerTransactionMode(directListenURL: Bool) throws {
        try TestDatabase.with { database in
            try PgBouncer.with(poolSize: 2) { bouncer in
                let pooled = try bouncer.url(user: "habit_worker", database: database.name)
                let listen = directListenURL ? ["--listen-url", try database.workerURL()] : []
                try WorkerProcess.withServe(databaseURL: pooled, arguments: ["--pool-size", "2"] + listen) { worker in
                    let subscriber = ChangeSubscriber(worker)
                    let user = UUID()
                    _ = try subscriber.listen(to: user)
                    _ = try subscriber.call("habits.create", params(user, ["name": "Pooled"]))
                    let admin = try database.connect()
                    defer { admin.close() }
                    let seq = try admin.queryOne("SELECT seq FROM habit.sync_clocks WHERE user_id = \(user)").decode(Int64.self, at: 0)
                    #expect(try subscriber.waitForChange(of: user, atLeast: seq).seq == seq)
                }
            }
        }
    }
}

extension ChangeNotificationTests {
    /// The health socket's `listen` member.
    static func listenStatus(_ path: String) throws -> [String: Any]? {
        try HealthSocketTests.probe(path).line?["listen"] as? [String: Any]
    }
}

/// One worker's stdout read line by line, responses and `changes` notifications apart: a test
/// calls through it and waits for notifications, which may arrive between any two responses.
final class ChangeSubscriber {
    struct Change: CustomStringConvertible {
        let user: UUID
        let cursor: String
        /// The change number inside the cursor (-1 if it is not one).
        var seq: Int64 { (try? SyncCursor(text: cursor))?.seq ?? -1 }
        var description: String { "changes(\(user), seq \(seq))" }
    }

    let worker: WorkerProcess
    private var changes: [Change] = []
    /// Notifications read while waiting for an answer, not yet taken by `nextChange`.
    var buffered: [Change] { changes }
    private var calls = 0

    init(_ worker: WorkerProcess) {
        self.worker = worker
    }

    /// The result of a successful call; notifications read meanwhile are kept for `nextChange`.
    func call(_ method: String, _ params: WireJSON? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws -> WireJSON {
        calls += 1
        let id = WireJSON.string("subscriber-\(calls)")
        try worker.sendRequest(method, params: params, id: id)
        while true {
            let line = try nextLine()
            if let change = try Self.change(in: line) {
                changes.append(change)
                continue
            }
            let response = try WorkerResponse(line: Array(line.utf8))
            guard response.id == id else { throw ChangeSubscriberError.unexpected(line) }
            return try #require(response.result, "\(method): \(response)", sourceLocation: sourceLocation)
        }
    }

    /// Subscribes `user` as the first subscriber and waits for the notification every
    /// subscribed user gets once the worker listens: from then on, changes are heard.
    func listen(to user: UUID) throws -> Change {
        #expect(try call("changes.subscribe", params(user))["subscribed"] == true)
        return try nextChange()
    }

    /// The next notification (kept or read now); any other line is an error.
    func nextChange() throws -> Change {
        if !changes.isEmpty { return changes.removeFirst() }
        let line = try nextLine()
        guard let change = try Self.change(in: line) else { throw ChangeSubscriberError.unexpected(line) }
        return change
    }

    /// Notifications of `user` until one with at least `seq` (folded notifications may skip seqs).
    func waitForChange(of user: UUID, atLeast seq: Int64) throws -> Change {
        while true {
            let change = try nextChange()
            if change.user == user && change.seq >= seq { return change }
        }
    }

    private func nextLine() throws -> String {
        switch worker.nextOutput(timeout: 30) {
        case .line(let bytes): return String(decoding: bytes, as: UTF8.self)
        case .endOfOutput: throw ChangeSubscriberError.endOfOutput(worker.stderrText.suffix(2_000).description)
        case .timedOut: throw ChangeSubscriberError.timedOut(worker.stderrText.suffix(2_000).description)
        }
    }

    /// The line as a `changes` notification, or nil for a response.
    static func change(in line: String) throws -> Change? {
        let json = try WireJSON.parse(line)
        guard json["method"]?.stringValue == "changes" else { return nil }
        #expect(json["id"] == nil && json["jsonrpc"]?.stringValue == "2.0" && json["params"]?.keys == ["user_id", "cursor"], "\(line)")
        guard let user = json["params"]?["user_id"]?.stringValue.flatMap(UUID.init(uuidString:)),
              let cursor = json["params"]?["cursor"]?.stringValue else { throw ChangeSubscriberError.unexpected(line) }
        return Change(user: user, cursor: cursor)
    }
}

enum ChangeSubscriberError: Error {
    case unexpected(String)
    case endOfOutput(String)
    case timedOut(String)
}

extension WorkerSession {
    /// The user's change clock (`habit.sync_clocks.seq`): the number of their last change.
    func changeSeq(of user: UUID) throws -> Int64 {
        try admin.queryOne("SELECT coalesce((SELECT seq FROM habit.sync_clocks WHERE user_id = \(user)), 0)").decode(Int64.self, at: 0)
    }

    /// The change listeners' backends in this session's database.
    func listenBackends() throws -> Int {
        try admin.queryOne("""
            SELECT count(*)::int FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'habit-listen'
            """).decode(Int.self, at: 0)
    }
}

/// Polls `condition` every 20 ms until it holds (true) or 30 s passed (false): for a state the
/// worker reaches on a thread of its own, after the answer or event that caused it.
private func waitUntil(_ condition: () throws -> Bool) throws -> Bool {
    let deadline = Date(timeIntervalSinceNow: 30)
    while Date() < deadline {
        if try condition() { return true }
        usleep(20_000)
    }
    return false
}
