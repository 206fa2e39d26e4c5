import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// The issue's two-devices property, over the pipes of one worker: two simulated devices with
/// their own copies of a user's rows make random edits offline (creates with client ids and
/// without, toggles, skips, task cycles, deletes, renames), push them with answers that get
/// lost and are retried, and pull in random interleavings and page sizes. After each round both
/// devices push what is left and pull to the end; then
///   - each device's copy (built from pulls alone) equals the server's rows read with psql, and
///   - the server's rows equal a model that applied every mutation exactly once, in the order
///     the server first received it (a toggle, a cycle or an id-less create applied twice, or
///     not at all, differs).
/// Seeded and replayable: HABIT_SYNC_SEED=<seed> HABIT_SYNC_ROUNDS=<n>; the suite runs 1,000
/// rounds, `scripts/reliability.sh sync [N]` as many as asked.
@Suite("habit serve: two devices syncing (property)")
struct SyncDevicesPropertyTests {
    static var rounds: Int { ProcessInfo.processInfo.environment["HABIT_SYNC_ROUNDS"].flatMap(Int.init) ?? 1_000 }
    static var seed: UInt64 { ProcessInfo.processInfo.environment["HABIT_SYNC_SEED"].flatMap(UInt64.init) ?? 18_2026 }

    @Test("two devices, offline edits, lost and retried pushes, random pulls: both converge on the server's state, each mutation applied once")
    func twoDevicesConverge() throws {
        try WorkerSession.with { session in
            let today = try session.today()
            let dates = (0..<4).map { today.adding(days: -$0).description }
            // Ten days back: every habit is on for all four dates in any zone, and a create
            // keeps the habit's history short (the 100,000-round run's cost).
            let activatedAt = WireJSON.string("\(today.adding(days: -10))T00:00:00Z")
            var random = SeededGenerator(seed: Self.seed)
            let started = Date()
            var totals = Totals()
            for round in 0..<Self.rounds {
                var simulation = Simulation(user: UUID(seed: &random), dates: dates, activatedAt: activatedAt)
                do {
                    try simulation.play(steps: Int.random(in: 4...10, using: &random), worker: session.worker, admin: session.admin, random: &random)
                } catch {
                    Issue.record("round \(round) (HABIT_SYNC_SEED=\(Self.seed)): \(error)\n\(simulation.log.suffix(40).joined(separator: "\n"))")
                    return
                }
                totals.add(simulation)
            }
            print("reliability figure: {\"test\":\"sync-two-devices\",\"seed\":\(Self.seed),\"rounds\":\(Self.rounds),\"mutations\":\(totals.mutations),"
                  + "\"pushes\":\(totals.pushes),\"lost_answers\":\(totals.lost),\"pulls\":\(totals.pulls),\"seconds\":\(Int(Date().timeIntervalSince(started)))}")
        }
    }

    struct Totals {
        var mutations = 0, pushes = 0, lost = 0, pulls = 0
        mutating func add(_ simulation: Simulation) {
            mutations += simulation.mutationCount
            pushes += simulation.pushes
            lost += simulation.lostAnswers
            pulls += simulation.pulls
        }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The state both the model and the checks compare: rows as sorted lines.
    struct Rows: Equatable {
        var habits: [UUID: String] = [:]           // id → name
        var periods: [UUID: UUID] = [:]            // id → habit
        var days: [String: String] = [:]           // "<habit>/<date>" → "done" | "skipped"
        var lists: [UUID: String] = [:]            // id → name
        var tasks: [UUID: Task] = [:]

        struct Task: Equatable {
            var title: String
            var state: String
            var list: UUID?
        }

        /// Lines naming every row; tasks by title when `tasksByTitle` (the model does not know
        /// the ids the server gives id-less creates; titles are unique).
        func lines(tasksByTitle: Bool, periods withPeriods: Bool) -> [String] {
            var lines = habits.map { "habit \($0.key) \($0.value)" } + days.map { "day \($0.key) \($0.value)" }
                + lists.map { "list \($0.key) \($0.value)" }
                + tasks.map { "task \(tasksByTitle ? "" : "\($0.key) ")\($0.value.title) \($0.value.state) \($0.value.list.map { "\($0)" } ?? "-")" }
            if withPeriods { lines += periods.map { "period \($0.key) \($0.value)" } }
            return lines.sorted()
        }
    }

    struct Mutation {
        let id: String
        let method: String
        let params: [String: WireJSON]

        var wire: WireJSON {
            .object([.init("mutation_id", .string(id)), .init("method", .string(method)),
                     .init("params", .object(params.sorted { $0.key < $1.key }.map { WireJSON.Member($0.key, $0.value) }))])
        }
    }

    struct Device {
        let client: String
        var queue: [Mutation] = []
        var copy = Rows()
        var cursor: String?
        /// Ids this device knows: its copy's and its own creates'.
        var habits: Set<UUID> = [], lists: Set<UUID> = [], tasks: Set<UUID> = []
        var counter = 0
    }

    struct Simulation {
        let user: UUID
        let dates: [String]
        let activatedAt: WireJSON
        var devices = [Device(client: "phone"), Device(client: "tablet")]
        /// What the server must hold: each mutation applied once, when first received.
        var model = Rows()
        var applied: Set<String> = []
        var log: [String] = []
        var mutationCount = 0, pushes = 0, lostAnswers = 0, pulls = 0
        var titles = 0

        init(user: UUID, dates: [String], activatedAt: WireJSON) {
            self.user = user
            self.dates = dates
            self.activatedAt = activatedAt
        }

        mutating func play<G: RandomNumberGenerator>(steps: Int, worker: WorkerProcess, admin: Connection, random: inout G) throws {
            for _ in 0..<steps {
                let device = Int.random(in: 0...1, using: &random)
                switch Int.random(in: 0..<10, using: &random) {
                case 0..<6: edit(device, random: &random)
                case 6..<8: try push(device, loseAnswer: Bool.random(using: &random), worker: worker)
                default: try pull(device, limit: Int.random(in: 1...6, using: &random), toTheEnd: Bool.random(using: &random), worker: worker)
                }
            }
            // Both devices come online for good: push until acknowledged, then pull to the end.
            for device in 0...1 where !devices[device].queue.isEmpty {
                if Bool.random(using: &random) { try push(device, loseAnswer: true, worker: worker) }
                try push(device, loseAnswer: false, worker: worker)
            }
            for device in 0...1 { try pull(device, limit: Int.random(in: 1...50, using: &random), toTheEnd: true, worker: worker) }
            let server = try Self.serverRows(user: user, admin: admin)
            for device in devices where device.copy != server {
                throw Failure(description: "\(device.client)'s copy differs from the server:\n  device: \(device.copy.lines(tasksByTitle: false, periods: true))\n  server: \(server.lines(tasksByTitle: false, periods: true))")
            }
            let expected = model.lines(tasksByTitle: true, periods: false), actual = server.lines(tasksByTitle: true, periods: false)
            guard expected == actual else {
                throw Failure(description: "the server differs from applying each mutation once:\n  model:  \(expected)\n  server: \(actual)")
            }
        }

        // MARK: Offline edits

        private mutating func edit<G: RandomNumberGenerator>(_ index: Int, random: inout G) {
            var device = devices[index]
            device.counter += 1
            let id = "\(device.client)-\(device.counter)"
            let habit = device.habits.randomElement(using: &random), list = device.lists.randomElement(using: &random)
            let task = device.tasks.randomElement(using: &random)
            let date = dates.randomElement(using: &random)!
            titles += 1
            let name = "N\(titles)"
            let mutation: Mutation
            switch Int.random(in: 0..<12, using: &random) {
            case 0 where device.habits.count < 3, 1 where habit == nil:
                let new = UUID(seed: &random)
                device.habits.insert(new)
                mutation = Mutation(id: id, method: "habits.create", params: ["id": .uuid(new), "name": .string(name), "activated_at": activatedAt])
            case 1 where habit != nil, 2 where habit != nil:
                mutation = Mutation(id: id, method: "completions.toggle", params: ["template_id": .uuid(habit!), "date": .string(date)])
            case 3 where habit != nil:
                let state = ["done", "skipped", "none"].randomElement(using: &random)!
                mutation = Mutation(id: id, method: "completions.set", params: ["template_id": .uuid(habit!), "date": .string(date), "state": .string(state)])
            case 4 where habit != nil:
                mutation = Mutation(id: id, method: "habits.update", params: ["id": .uuid(habit!), "name": .string(name)])
            case 5 where habit != nil && Int.random(in: 0..<3, using: &random) == 0:
                mutation = Mutation(id: id, method: "habits.delete", params: ["id": .uuid(habit!)])
            case 6 where list == nil || device.lists.count < 2:
                let new = UUID(seed: &random)
                device.lists.insert(new)
                mutation = Mutation(id: id, method: "lists.create", params: ["id": .uuid(new), "name": .string(name)])
            case 7 where list != nil:
                mutation = Mutation(id: id, method: Bool.random(using: &random) ? "lists.update" : "lists.delete",
                                    params: ["id": .uuid(list!), "name": .string(name)])
            case 8:
                // With a client id, in a list or not; or without one (its effect is counted by title).
                var params: [String: WireJSON] = ["title": .string(name)]
                if let list, Bool.random(using: &random) { params["list_id"] = .uuid(list) }
                if Bool.random(using: &random) {
                    let new = UUID(seed: &random)
                    device.tasks.insert(new)
                    params["id"] = .uuid(new)
                }
                mutation = Mutation(id: id, method: "tasks.create", params: params)
            case 9 where task != nil, 10 where task != nil:
                mutation = Mutation(id: id, method: "tasks.cycle", params: ["id": .uuid(task!)])
            case 11 where task != nil:
                mutation = Mutation(id: id, method: Bool.random(using: &random) ? "tasks.update" : "tasks.delete",
                                    params: ["id": .uuid(task!), "title": .string(name)])
            default:
                let new = UUID(seed: &random)
                device.habits.insert(new)
                mutation = Mutation(id: id, method: "habits.create", params: ["id": .uuid(new), "name": .string(name), "activated_at": activatedAt])
            }
            var fixed = mutation
            if fixed.method.hasSuffix(".delete") {
                fixed = Mutation(id: id, method: fixed.method, params: fixed.params.filter { $0.key == "id" })
            }
            device.queue.append(fixed)
            devices[index] = device
            mutationCount += 1
            log.append("\(device.client) queues \(fixed.wire.encoded)")
        }

        // MARK: Push and pull

        private mutating func push(_ index: Int, loseAnswer: Bool, worker: WorkerProcess) throws {
            let queue = devices[index].queue
            guard !queue.isEmpty else { return }
            pushes += 1
            let answer = try worker.call("sync.push", params(user, ["client_id": .string(devices[index].client), "mutations": .array(queue.map(\.wire))]))
            guard let results = answer["results"]?.arrayValue, results.count == queue.count else {
                throw Failure(description: "push answered \(answer)")
            }
            // The server applied each mutation it had not seen, in order. (The answer, lost
            // or not, says which id an id-less create got: the model learns it from there.)
            for (mutation, result) in zip(queue, results) where applied.insert("\(devices[index].client)/\(mutation.id)").inserted {
                model.apply(mutation, createdID: result["result"]?["id"]?.stringValue.flatMap(UUID.init(uuidString:)))
            }
            if loseAnswer {
                lostAnswers += 1
                log.append("\(devices[index].client) pushes \(queue.count), answer lost")
                return
            }
            for (mutation, result) in zip(queue, results) where result["mutation_id"]?.stringValue != mutation.id {
                throw Failure(description: "push answered \(result) for \(mutation.id)")
            }
            log.append("\(devices[index].client) pushes \(queue.count): \(results.map { $0["error"]?["data"]?["reason"]?.stringValue ?? "ok" })")
            devices[index].queue.removeAll()
        }

        private mutating func pull(_ index: Int, limit: Int, toTheEnd: Bool, worker: WorkerProcess) throws {
            var device = devices[index]
            defer { devices[index] = device }
            while true {
                pulls += 1
                var members: [String: WireJSON] = ["limit": .int(limit)]
                if let cursor = device.cursor { members["cursor"] = .string(cursor) }
                let page = try worker.call("sync.pull", params(user, members))
                try device.copy.apply(page: page)
                device.cursor = page["cursor"]?.stringValue
                device.habits.formUnion(device.copy.habits.keys)
                device.lists.formUnion(device.copy.lists.keys)
                device.tasks.formUnion(device.copy.tasks.keys)
                log.append("\(device.client) pulls \(limit): has_more \(page["has_more"]?.boolValue ?? false)")
                guard page["has_more"] == true, toTheEnd else { return }
            }
        }

        /// The user's rows as psql sees them (superuser: past row-level security), in one query.
        static func serverRows(user: UUID, admin: Connection) throws -> Rows {
            var rows = Rows()
            for row in try admin.query("""
                SELECT 'habit', id::text, name, NULL, NULL FROM habit_templates WHERE user_id = \(user)
                UNION ALL SELECT 'period', id::text, template_id::text, NULL, NULL FROM habit_periods WHERE user_id = \(user)
                UNION ALL SELECT 'day', template_id::text || '/' || completed_date, 'done', NULL, NULL FROM habit_completions WHERE user_id = \(user)
                UNION ALL SELECT 'day', template_id::text || '/' || skipped_date, 'skipped', NULL, NULL FROM habit_skips WHERE user_id = \(user)
                UNION ALL SELECT 'list', id::text, name, NULL, NULL FROM task_lists WHERE user_id = \(user)
                UNION ALL SELECT 'task', id::text, title, state::text, list_id::text FROM tasks WHERE user_id = \(user)
                """) {
                let key = try row.decode(String.self, at: 1), value = try row.decode(String.self, at: 2)
                switch try row.decode(String.self, at: 0) {
                case "habit": rows.habits[UUID(uuidString: key)!] = value
                case "period": rows.periods[UUID(uuidString: key)!] = UUID(uuidString: value)!
                case "day": rows.days[key] = value
                case "list": rows.lists[UUID(uuidString: key)!] = value
                default:
                    rows.tasks[UUID(uuidString: key)!] = Rows.Task(title: value, state: try row.decode(String.self, at: 3),
                                                                   list: try row.decode(String?.self, at: 4).flatMap(UUID.init(uuidString:)))
                }
            }
            return rows
        }
    }
}

extension SyncDevicesPropertyTests.Rows {
    /// The model: what one mutation does when the server applies it (errors change nothing).
    mutating func apply(_ mutation: SyncDevicesPropertyTests.Mutation, createdID: UUID?) {
        let id = mutation.params["id"]?.stringValue.flatMap(UUID.init(uuidString:))
        let habit = mutation.params["template_id"]?.stringValue.flatMap(UUID.init(uuidString:))
        let name = mutation.params["name"]?.stringValue ?? mutation.params["title"]?.stringValue ?? ""
        let dayKey = habit.map { "\($0.uuidString.lowercased())/\(mutation.params["date"]?.stringValue ?? "")" } ?? ""
        switch mutation.method {
        case "habits.create":
            habits[id!] = name
        case "habits.update":
            if let id, habits[id] != nil { habits[id] = name }
        case "habits.delete":
            if let id, habits.removeValue(forKey: id) != nil {
                days = days.filter { !$0.key.hasPrefix(id.uuidString.lowercased() + "/") }
            }
        case "completions.toggle":
            guard let habit, habits[habit] != nil else { return }
            days[dayKey] = days[dayKey] == "done" ? nil : "done"
        case "completions.set":
            guard let habit, habits[habit] != nil else { return }
            let state = mutation.params["state"]?.stringValue
            days[dayKey] = state == "none" ? nil : state
        case "lists.create":
            lists[id!] = name
        case "lists.update":
            if let id, lists[id] != nil { lists[id] = name }
        case "lists.delete":
            if let id, lists.removeValue(forKey: id) != nil {
                for (task, value) in tasks where value.list == id { tasks[task]?.list = nil }
            }
        case "tasks.create":
            let list = mutation.params["list_id"]?.stringValue.flatMap(UUID.init(uuidString:))
            if let list, lists[list] == nil { return } // not_found
            guard let created = id ?? createdID else { return }
            tasks[created] = Task(title: name, state: "not_started", list: list)
        case "tasks.cycle":
            guard let id, let task = tasks[id] else { return }
            tasks[id]?.state = ["not_started": "active", "active": "completed", "completed": "not_started"][task.state]!
        case "tasks.update":
            if let id, tasks[id] != nil { tasks[id]?.title = name }
        case "tasks.delete":
            if let id { tasks[id] = nil }
        default:
            break
        }
    }

    /// A pulled page: rows replace the local ones by key, deleted keys go.
    mutating func apply(page: WireJSON) throws {
        guard let changes = page["changes"], let deleted = page["deleted"] else {
            throw SyncDevicesPropertyTests.Failure(description: "not a sync page: \(page)")
        }
        func uuid(_ value: WireJSON?) throws -> UUID {
            guard let text = value?.stringValue, let id = UUID(uuidString: text) else {
                throw SyncDevicesPropertyTests.Failure(description: "expected a UUID, got \(String(describing: value))")
            }
            return id
        }
        func key(_ value: WireJSON) throws -> String {
            "\(try uuid(value["template_id"]).uuidString.lowercased())/\(value["date"]?.stringValue ?? "?")"
        }
        for habit in changes["habits"]?.arrayValue ?? [] { habits[try uuid(habit["id"])] = habit["name"]?.stringValue }
        for period in changes["periods"]?.arrayValue ?? [] { periods[try uuid(period["id"])] = try uuid(period["template_id"]) }
        for completion in changes["completions"]?.arrayValue ?? [] { days[try key(completion)] = "done" }
        for skip in changes["skips"]?.arrayValue ?? [] { days[try key(skip)] = "skipped" }
        for list in changes["lists"]?.arrayValue ?? [] { lists[try uuid(list["id"])] = list["name"]?.stringValue }
        for task in changes["tasks"]?.arrayValue ?? [] {
            tasks[try uuid(task["id"])] = Task(title: task["title"]?.stringValue ?? "", state: task["state"]?.stringValue ?? "",
                                               list: task["list_id"]?.isNull == false ? try uuid(task["list_id"]) : nil)
        }
        for id in deleted["habits"]?.arrayValue ?? [] { habits[try uuid(id)] = nil }
        for id in deleted["periods"]?.arrayValue ?? [] { periods[try uuid(id)] = nil }
        // A day is done or skipped, never both: a deletion removes only its own kind.
        for completion in deleted["completions"]?.arrayValue ?? [] where days[try key(completion)] == "done" { days[try key(completion)] = nil }
        for skip in deleted["skips"]?.arrayValue ?? [] where days[try key(skip)] == "skipped" { days[try key(skip)] = nil }
        for id in deleted["lists"]?.arrayValue ?? [] { lists[try uuid(id)] = nil }
        for id in deleted["tasks"]?.arrayValue ?? [] { tasks[try uuid(id)] = nil }
    }
}

extension UUID {
    /// A UUID from the seeded generator, so a round replays with the same ids.
    init<G: RandomNumberGenerator>(seed random: inout G) {
        let high = random.next(), low = random.next()
        var bytes = (0..<8).map { UInt8(truncatingIfNeeded: high >> ($0 * 8)) } + (0..<8).map { UInt8(truncatingIfNeeded: low >> ($0 * 8)) }
        bytes[6] = bytes[6] & 0x0F | 0x40
        bytes[8] = bytes[8] & 0x3F | 0x80
        self = UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }
}
