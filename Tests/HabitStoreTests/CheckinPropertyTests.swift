import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Issue 32 (sql/0029): a day's value, check-ins and state under every writer at once. Random
/// sequences of the worker's functions (habit.add_checkin, remove_checkin, set_day_value,
/// set_day_state) and of a direct writer's plain INSERTs and DELETEs (an app through Supabase:
/// a toggle, an un-toggle, a check-in row, a skip row) and target changes, on a boolean or a
/// measurable habit, are run as the user against a small model; after every step each day's
/// check-ins, completion row and skip row must be the model's. The model states the rules once:
///
/// - a day's value is its check-ins' sum; a day with check-ins is done exactly when the sum
///   meets the target — an added check-in can only make it done, a removed one only undo it;
/// - done without check-ins (a toggle) on a habit counted from check-ins (measurable, or a
///   target other than 1) adds a check-in of the rest; un-doing a day whose check-ins meet the
///   target clears them;
/// - a skip and check-ins (or a completion) never share a day (HB005); the worker's writers
///   replace the other state, a direct writer's row is refused;
/// - a new target re-decides the days with check-ins; days without keep their state;
/// - at most (sql/0031): a day is done exactly when it was entered within the target — check-ins
///   whose sum is at most the target, or kept without any (a toggle, a value of 0); the last
///   check-in removed, the day is not entered; marking a day over the target done is refused
///   (HB007); un-doing a day within it clears its check-ins; a change of the target's type
///   re-decides the days with check-ins.
@Suite("Check-ins: a day's value and state against a model (property)")
struct CheckinPropertyTests {
    static let user = UUID(uuidString: "00000000-0000-0000-0000-0000000000c1")!
    static let habit = UUID(uuidString: "10000000-0000-0000-0000-0000000000c1")!
    /// Cases per kind of habit (each of `steps` steps): 12 in the suite, HABIT_CHECKIN_ROUNDS for
    /// longer runs (scripts/reliability.sh checkins).
    static let rounds = ProcessInfo.processInfo.environment["HABIT_CHECKIN_ROUNDS"].flatMap(Int.init) ?? 12
    static let steps = 40

    /// One day of the model, values in thousandths.
    struct Day: Equatable, CustomStringConvertible {
        var checkins: [(id: UUID?, value: Int64)] = []
        var done = false
        var skipped = false
        var sum: Int64 { checkins.reduce(0) { $0 + $1.value } }
        static func == (a: Day, b: Day) -> Bool {
            a.checkins.map(\.value).sorted() == b.checkins.map(\.value).sorted() && a.done == b.done && a.skipped == b.skipped
        }
        var description: String { "values \(checkins.map(\.value).sorted()) done \(done) skipped \(skipped)" }
    }

    struct Model {
        var measurable: Bool
        var target: Int64
        var atMost = false
        var days: [Day]
        var counted: Bool { measurable || target != 1000 || atMost }

        func meets(_ sum: Int64) -> Bool { atMost ? sum <= target : sum >= target }
        /// An at-most day: done exactly when entered within the target.
        mutating func follow(_ day: Int) { days[day].done = !days[day].checkins.isEmpty && meets(days[day].sum) }

        mutating func added(_ day: Int, _ value: Int64, id: UUID?) {
            days[day].checkins.append((id, value))
            if atMost { follow(day) } else if days[day].sum >= target { days[day].done = true }
        }
        mutating func removed(_ day: Int, at index: Int) {
            days[day].checkins.remove(at: index)
            if atMost { follow(day) } else if days[day].sum < target { days[day].done = false }
        }
        /// Marking the day done: false when refused (over an at-most target, HB007).
        mutating func markDone(_ day: Int) -> Bool {
            guard !days[day].done else { return true }
            if atMost {
                if !days[day].checkins.isEmpty && !meets(days[day].sum) { return false }
            } else if counted, days[day].sum < target {
                days[day].checkins.append((nil, target - days[day].sum))
            }
            days[day].done = true
            return true
        }
        mutating func unmark(_ day: Int) {
            guard days[day].done else { return }
            if !days[day].checkins.isEmpty && meets(days[day].sum) { days[day].checkins = [] }
            days[day].done = false
        }
        mutating func clear(_ day: Int) { days[day] = Day() }
        mutating func retarget() {
            for index in days.indices where !days[index].checkins.isEmpty { days[index].done = meets(days[index].sum) }
        }
    }

    static func decimal(_ thousandths: Int64) -> String { DecimalValue(thousandths: thousandths).text }

    /// The days of `habit` (this suite's, unless given) as the database holds them.
    static func observed(_ admin: Connection, dates: [CalendarDate], user: UUID = Self.user, habit: UUID = Self.habit) throws -> [Day] {
        try dates.map { date in
            let values = try admin.query("""
                SELECT (value * 1000)::bigint FROM public.habit_checkins WHERE user_id = \(user) AND template_id = \(habit) AND checkin_date = \(date)
                """).map { try $0.decode(Int64.self, at: 0) }
            let row = try admin.queryOne("""
                SELECT EXISTS (SELECT 1 FROM public.habit_completions WHERE user_id = \(user) AND template_id = \(habit) AND completed_date = \(date)),
                       EXISTS (SELECT 1 FROM public.habit_skips WHERE user_id = \(user) AND template_id = \(habit) AND skipped_date = \(date))
                """)
            return Day(checkins: values.map { (nil, $0) }, done: try row.decode(Bool.self, at: 0), skipped: try row.decode(Bool.self, at: 1))
        }
    }

    /// Runs one statement as `user` (this suite's, unless given); returns its SQLSTATE when it fails.
    static func run(_ connection: Connection, _ statement: Query, as user: UUID = Self.user) -> String? {
        do {
            try RuleFunctionsTests.asUser(user, on: connection) { c in _ = try c.query(statement) }
            return nil
        } catch let error as PostgresError {
            return error.sqlState?.rawValue ?? "\(error)"
        } catch {
            return "\(error)"
        }
    }

    @Test("random writers keep each day's check-ins, completion and skip as the model says", arguments: [false, true], [false, true])
    func againstTheModel(measurable: Bool, atMost: Bool) throws {
        try TestDatabase.with { database in
            let admin = try database.connect()
            defer { admin.close() }
            let connection = try database.connect()
            defer { connection.close() }
            let today = try admin.queryOne("SELECT habit.local_date(now(), 'UTC')").decode(CalendarDate.self, at: 0)
            let dates = (1...3).map { today.adding(days: -$0) }
            for round in 0..<Self.rounds {
                var random = SeededGenerator(seed: UInt64(round) &* 7919 &+ (measurable ? 1 : 0) &+ (atMost ? 2 : 0))
                let targets: [Int64] = measurable ? [1000, 2500, 5000, 750] : [1000, 2000, 3000]
                var model = Model(measurable: measurable, target: targets.randomElement(using: &random)!, atMost: atMost,
                                  days: Array(repeating: Day(), count: dates.count))
                try admin.execute("DELETE FROM public.habit_templates WHERE user_id = \(Self.user)")
                try admin.execute("""
                    INSERT INTO public.habit_templates (id, user_id, name, kind, unit, target, target_type, activated_at)
                    VALUES (\(Self.habit), \(Self.user), 'Habit', \(measurable ? "measurable" : "boolean"), \(measurable ? "km" : nil),
                            \(Self.decimal(model.target))::numeric, \(atMost ? "at_most" : "at_least"), now() - interval '30 days')
                    """)
                var trace: [String] = []
                for _ in 0..<Self.steps {
                    let day = Int.random(in: 0..<dates.count, using: &random)
                    let date = dates[day]
                    let value: Int64 = measurable ? Int64.random(in: 1...6000, using: &random) : Int64.random(in: 1...3, using: &random) * 1000
                    let step = Int.random(in: 0..<11, using: &random)
                    var expectedState: String? = nil
                    let failure: String?
                    switch step {
                    case 0, 1:
                        trace.append("add \(date) \(value)")
                        failure = Self.run(connection, "SELECT * FROM habit.add_checkin(\(Self.user), \(Self.habit), \(date), \(Self.decimal(value))::numeric, NULL, NULL)")
                        model.days[day].skipped = false
                        model.added(day, value, id: nil)
                    case 2:
                        let ids = try admin.query("SELECT id, (value * 1000)::bigint FROM public.habit_checkins WHERE template_id = \(Self.habit) AND checkin_date = \(date) ORDER BY id")
                        guard let pick = ids.randomElement(using: &random) else { continue }
                        let id = try pick.decode(UUID.self, at: 0), removedValue = try pick.decode(Int64.self, at: 1)
                        trace.append("remove \(date) \(removedValue)")
                        failure = Self.run(connection, "SELECT * FROM habit.remove_checkin(\(Self.user), \(id))")
                        let index = try #require(model.days[day].checkins.firstIndex { $0.value == removedValue }, "model lacks \(removedValue): \(trace)")
                        model.removed(day, at: index)
                    case 3:
                        let total = Int64.random(in: 0...2, using: &random) == 0 ? 0 : value
                        trace.append("set value \(date) \(total)")
                        failure = Self.run(connection, "SELECT * FROM habit.set_day_value(\(Self.user), \(Self.habit), \(date), \(Self.decimal(total))::numeric)")
                        let before = model.days[day]
                        // 0 clears an at-least day and keeps an at-most one (entered, nothing taken).
                        let unchanged = (before.checkins.count == 1 && before.sum == total && !before.skipped)
                            || (total == 0 && before.checkins.isEmpty && before.done == model.atMost && !before.skipped)
                        if !unchanged {
                            model.clear(day)
                            if total > 0 { model.added(day, total, id: nil) } else if model.atMost { model.days[day].done = true }
                        }
                    case 4:
                        let state = ["done", "none", "skipped"].randomElement(using: &random)!
                        trace.append("set state \(date) \(state)")
                        failure = Self.run(connection, "SELECT * FROM habit.set_day_state(\(Self.user), \(Self.habit), \(date), \(state))")
                        switch state {
                        case "done":
                            var next = model
                            next.days[day].skipped = false
                            if next.markDone(day) { model = next } else { expectedState = "HB007" }
                        case "none": model.clear(day)
                        default: model.clear(day); model.days[day].skipped = true
                        }
                    case 5:
                        trace.append("direct toggle on \(date)")
                        failure = Self.run(connection, "INSERT INTO public.habit_completions (user_id, template_id, completed_date) VALUES (\(Self.user), \(Self.habit), \(date)) ON CONFLICT DO NOTHING")
                        if model.days[day].skipped { expectedState = "HB005" } else if !model.markDone(day) { expectedState = "HB007" }
                    case 6:
                        trace.append("direct toggle off \(date)")
                        failure = Self.run(connection, "DELETE FROM public.habit_completions WHERE user_id = \(Self.user) AND template_id = \(Self.habit) AND completed_date = \(date)")
                        model.unmark(day)
                    case 7:
                        trace.append("direct check-in \(date) \(value)")
                        failure = Self.run(connection, "INSERT INTO public.habit_checkins (user_id, template_id, checkin_date, value) VALUES (\(Self.user), \(Self.habit), \(date), \(Self.decimal(value))::numeric)")
                        if model.days[day].skipped { expectedState = "HB005" } else { model.added(day, value, id: nil) }
                    case 8:
                        trace.append("direct skip \(date)")
                        failure = Self.run(connection, "INSERT INTO public.habit_skips (user_id, template_id, skipped_date) VALUES (\(Self.user), \(Self.habit), \(date)) ON CONFLICT DO NOTHING")
                        if model.days[day].done || !model.days[day].checkins.isEmpty { expectedState = "HB005" } else { model.days[day].skipped = true }
                    case 9:
                        let target = targets.randomElement(using: &random)!
                        trace.append("target \(target)")
                        failure = Self.run(connection, "UPDATE public.habit_templates SET target = \(Self.decimal(target))::numeric WHERE id = \(Self.habit) AND user_id = \(Self.user)")
                        if target != model.target {
                            model.target = target
                            model.retarget()
                        }
                    default:
                        // The target's type flips (sql/0031): the days with check-ins re-decided.
                        let atMost = !model.atMost
                        trace.append("target type \(atMost ? "at_most" : "at_least")")
                        failure = Self.run(connection, "UPDATE public.habit_templates SET target_type = \(atMost ? "at_most" : "at_least") WHERE id = \(Self.habit) AND user_id = \(Self.user)")
                        model.atMost = atMost
                        model.retarget()
                    }
                    #expect(failure == expectedState, "round \(round): \(trace)")
                    let observed = try Self.observed(admin, dates: dates)
                    #expect(observed == model.days, "round \(round) after \(trace.last!): database \(observed), model \(model.days)\n\(trace)")
                    if observed != model.days || failure != expectedState { return }
                }
            }
        }
    }
}
