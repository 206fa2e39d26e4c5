import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Issue 32 (sql/0033): weekly targets under every writer at once, against a model. Random
/// sequences of the worker's functions (habit.add_checkin, remove_checkin, set_day_value,
/// set_day_state), a direct writer's INSERTs and DELETEs, target and type changes and the
/// user's week start flipping between Monday and Sunday run as the user over two to three weeks
/// of past days; after every step each day's check-ins, completion and skip must be the model's,
/// and each refusal the model's. The model states the rules of a week W once:
///
/// - at least: W holds one completion, on the first day its running sum reaches the target, or
///   none; a toggle on D (done) is refused when W was met before D (HB008), else adds a check-in
///   of the rest (the target less W's sum up to D) and W's later completion goes;
/// - at most: over the target, W holds no completion (a toggle is refused, HB007); within it,
///   the first day with check-ins holds one, and so does each day kept without check-ins (a
///   toggle, a value of 0), unless its own check-ins just changed;
/// - un-doing a day's completion (a direct delete, set_day_state none) clears that day's check-ins
///   and W is decided again from the rest;
/// - a new target, type or week start decides every week again.
@Suite("Weekly targets: a week's check-ins and its completion against a model (property)")
struct WeeklyTargetPropertyTests {
    static let user = UUID(uuidString: "00000000-0000-0000-0000-0000000000c2")!
    static let habit = UUID(uuidString: "10000000-0000-0000-0000-0000000000c2")!
    /// Cases per kind (each of `steps` steps): 10 in the suite, HABIT_CHECKIN_ROUNDS for longer runs
    /// (scripts/reliability.sh checkins).
    static let rounds = ProcessInfo.processInfo.environment["HABIT_CHECKIN_ROUNDS"].flatMap(Int.init) ?? 10
    static let steps = 50

    typealias Day = CheckinPropertyTests.Day

    struct Model {
        var target: Int64
        var atMost: Bool
        var sunday = false
        var dates: [CalendarDate]
        var days: [Day]

        func weekStart(_ date: CalendarDate) -> CalendarDate {
            date.adding(days: -((date.isoWeekday - (sunday ? 7 : 1) + 7) % 7))
        }
        /// The indices of the days of `day`'s week (dates ascend, so do they).
        func week(_ day: Int) -> [Int] {
            let start = weekStart(dates[day])
            return dates.indices.filter { weekStart(dates[$0]) == start }
        }
        func sum(_ week: [Int]) -> Int64 { week.reduce(0) { $0 + days[$1].sum } }
        /// The day the week's check-ins meet the target (habit.week_value_met_on).
        func metOn(_ week: [Int]) -> Int? {
            if atMost { return sum(week) <= target ? week.first { !days[$0].checkins.isEmpty } : nil }
            var running: Int64 = 0
            for day in week {
                running += days[day].sum
                if running >= target { return day }
            }
            return nil
        }
        /// habit.week_follow: `changed` is the day whose check-ins changed (its completion is no
        /// kept toggle).
        mutating func follow(_ day: Int, changed: Int?) {
            let week = week(day)
            let want = metOn(week)
            let over = atMost && sum(week) > target
            for other in week {
                let kept = atMost && !over && days[other].done && days[other].checkins.isEmpty && other != changed
                days[other].done = other == want || kept
            }
        }
        mutating func added(_ day: Int, _ value: Int64) {
            days[day].checkins.append((nil, value))
            follow(day, changed: day)
        }
        mutating func removed(_ day: Int, at index: Int) {
            days[day].checkins.remove(at: index)
            follow(day, changed: day)
        }
        /// A day's check-ins removed one by one (each one's trigger follows the week).
        mutating func clearCheckins(_ day: Int) {
            while !days[day].checkins.isEmpty { removed(day, at: 0) }
        }
        /// A completion written on the day: the refusal's SQLSTATE, or nil.
        mutating func markDone(_ day: Int) -> String? {
            if days[day].done { return nil }
            if days[day].skipped { return "HB005" }
            let week = week(day)
            if atMost {
                if sum(week) > target { return "HB007" }
                days[day].done = true
                return nil
            }
            let first = ([metOn(week)] + week.filter { $0 != day && days[$0].done }.map(Optional.some)).compactMap { $0 }.min()
            if let first, first < day { return "HB008" }
            let upTo = week.filter { $0 <= day }.reduce(Int64(0)) { $0 + days[$1].sum }
            if upTo < target { days[day].checkins.append((nil, target - upTo)) }
            for other in week { days[other].done = other == day }
            return nil
        }
        /// A completion deleted by a writer (not by the week's own bookkeeping).
        mutating func unmark(_ day: Int) {
            guard days[day].done else { return }
            days[day].checkins = []
            days[day].done = false
            follow(day, changed: day)
        }
        mutating func redecideAll() {
            for day in dates.indices { follow(day, changed: nil) }
        }
        var dayValueOf: (Int) -> (value: Int64, checkins: Int, state: String) {
            { day in
                let d = days[day]
                let value = d.checkins.isEmpty && d.done ? (atMost ? 0 : target) : d.sum
                return (value, d.checkins.count, d.done ? "done" : d.skipped ? "skipped" : "none")
            }
        }
    }

    static let decimal = CheckinPropertyTests.decimal

    static func observed(_ admin: Connection, dates: [CalendarDate]) throws -> [Day] {
        try CheckinPropertyTests.observed(admin, dates: dates, user: user, habit: habit)
    }

    static func run(_ connection: Connection, _ statement: Query) -> String? {
        CheckinPropertyTests.run(connection, statement, as: user)
    }

    @Test("random writers keep each week's check-ins and completion as the model says", arguments: [false, true], [false, true])
    func againstTheModel(measurable: Bool, atMost: Bool) throws {
        try TestDatabase.with { database in
            let admin = try database.connect()
            defer { admin.close() }
            let connection = try database.connect()
            defer { connection.close() }
            let today = try admin.queryOne("SELECT habit.local_date(now(), 'UTC')").decode(CalendarDate.self, at: 0)
            let dates = (1...16).reversed().map { today.adding(days: -$0) }
            for round in 0..<Self.rounds {
                var random = SeededGenerator(seed: UInt64(round) &* 104_729 &+ (measurable ? 1 : 0) &+ (atMost ? 2 : 0))
                let targets: [Int64] = measurable ? [10_000, 2_500, 15_000, 5_500] : [2_000, 3_000, 5_000]
                var model = Model(target: targets.randomElement(using: &random)!, atMost: atMost, dates: dates,
                                  days: Array(repeating: Day(), count: dates.count))
                try admin.execute("DELETE FROM public.habit_templates WHERE user_id = \(Self.user)")
                try admin.execute("""
                    INSERT INTO public.profiles (user_id, timezone, week_start) VALUES (\(Self.user), 'UTC', 'monday')
                    ON CONFLICT (user_id) DO UPDATE SET week_start = 'monday'
                    """)
                try admin.execute("""
                    INSERT INTO public.habit_templates (id, user_id, name, kind, unit, target, target_type, target_period, schedule, activated_at)
                    VALUES (\(Self.habit), \(Self.user), 'Habit', \(measurable ? "measurable" : "boolean"), \(measurable ? "km" : nil),
                            \(Self.decimal(model.target))::numeric, \(atMost ? "at_most" : "at_least"), 'week',
                            '{"type": "times_per_week", "times": 1}', now() - interval '40 days')
                    """)
                var trace: [String] = []
                for _ in 0..<Self.steps {
                    let day = Int.random(in: 0..<dates.count, using: &random)
                    let date = dates[day]
                    let value: Int64 = measurable ? Int64.random(in: 1...6000, using: &random) : Int64.random(in: 1...3, using: &random) * 1000
                    let step = Int.random(in: 0..<12, using: &random)
                    var expected: String? = nil
                    let failure: String?
                    switch step {
                    case 0, 1, 2:
                        trace.append("add \(date) \(value)")
                        failure = Self.run(connection, "SELECT * FROM habit.add_checkin(\(Self.user), \(Self.habit), \(date), \(Self.decimal(value))::numeric, NULL, NULL)")
                        // The skip goes first (its trigger: nothing to follow), then the check-in.
                        model.days[day].skipped = false
                        model.added(day, value)
                    case 3:
                        let ids = try admin.query("SELECT id, (value * 1000)::bigint FROM public.habit_checkins WHERE template_id = \(Self.habit) AND checkin_date = \(date) ORDER BY id")
                        guard let pick = ids.randomElement(using: &random) else { continue }
                        let id = try pick.decode(UUID.self, at: 0), removedValue = try pick.decode(Int64.self, at: 1)
                        trace.append("remove \(date) \(removedValue)")
                        failure = Self.run(connection, "SELECT * FROM habit.remove_checkin(\(Self.user), \(id))")
                        let index = try #require(model.days[day].checkins.firstIndex { $0.value == removedValue }, "model lacks \(removedValue): \(trace)")
                        model.removed(day, at: index)
                    case 4:
                        let total = Int64.random(in: 0...2, using: &random) == 0 ? 0 : value
                        trace.append("set value \(date) \(total)")
                        failure = Self.run(connection, "SELECT * FROM habit.set_day_value(\(Self.user), \(Self.habit), \(date), \(Self.decimal(total))::numeric)")
                        let before = model.dayValueOf(day)
                        let unchanged = (before.checkins == 1 && before.value == total && before.state != "skipped")
                            || (total == 0 && before.checkins == 0 && before.state == (model.atMost ? "done" : "none"))
                        if !unchanged {
                            var next = model
                            next.days[day].skipped = false
                            next.clearCheckins(day)
                            if total > 0 {
                                next.added(day, total)
                            } else if next.atMost {
                                expected = next.markDone(day)
                            }
                            if expected == nil { model = next }
                        }
                    case 5:
                        let state = ["done", "none", "skipped"].randomElement(using: &random)!
                        trace.append("set state \(date) \(state)")
                        failure = Self.run(connection, "SELECT * FROM habit.set_day_state(\(Self.user), \(Self.habit), \(date), \(state))")
                        var next = model
                        switch state {
                        case "done":
                            next.days[day].skipped = false
                            expected = next.markDone(day)
                        default:
                            next.clearCheckins(day)
                            next.unmark(day)
                            next.days[day].skipped = state == "skipped"
                        }
                        if expected == nil { model = next }
                    case 6:
                        trace.append("direct toggle on \(date)")
                        failure = Self.run(connection, "INSERT INTO public.habit_completions (user_id, template_id, completed_date) VALUES (\(Self.user), \(Self.habit), \(date)) ON CONFLICT DO NOTHING")
                        var next = model
                        expected = next.markDone(day)
                        if expected == nil { model = next }
                    case 7:
                        trace.append("direct toggle off \(date)")
                        failure = Self.run(connection, "DELETE FROM public.habit_completions WHERE user_id = \(Self.user) AND template_id = \(Self.habit) AND completed_date = \(date)")
                        model.unmark(day)
                    case 8:
                        trace.append("direct check-in \(date) \(value)")
                        failure = Self.run(connection, "INSERT INTO public.habit_checkins (user_id, template_id, checkin_date, value) VALUES (\(Self.user), \(Self.habit), \(date), \(Self.decimal(value))::numeric)")
                        if model.days[day].skipped { expected = "HB005" } else { model.added(day, value) }
                    case 9:
                        trace.append("direct skip \(date)")
                        failure = Self.run(connection, "INSERT INTO public.habit_skips (user_id, template_id, skipped_date) VALUES (\(Self.user), \(Self.habit), \(date)) ON CONFLICT DO NOTHING")
                        if model.days[day].done || !model.days[day].checkins.isEmpty { expected = "HB005" } else { model.days[day].skipped = true }
                    case 10:
                        if Bool.random(using: &random) {
                            let target = targets.randomElement(using: &random)!
                            trace.append("target \(target)")
                            failure = Self.run(connection, "UPDATE public.habit_templates SET target = \(Self.decimal(target))::numeric WHERE id = \(Self.habit) AND user_id = \(Self.user)")
                            if target != model.target {
                                model.target = target
                                model.redecideAll()
                            }
                        } else {
                            model.atMost.toggle()
                            trace.append("target type \(model.atMost ? "at_most" : "at_least")")
                            failure = Self.run(connection, "UPDATE public.habit_templates SET target_type = \(model.atMost ? "at_most" : "at_least") WHERE id = \(Self.habit) AND user_id = \(Self.user)")
                            model.redecideAll()
                        }
                    default:
                        model.sunday.toggle()
                        trace.append("week start \(model.sunday ? "sunday" : "monday")")
                        failure = Self.run(connection, "UPDATE public.profiles SET week_start = \(model.sunday ? "sunday" : "monday") WHERE user_id = \(Self.user)")
                        model.redecideAll()
                    }
                    #expect(failure == expected, "round \(round): \(trace)")
                    let observed = try Self.observed(admin, dates: dates)
                    #expect(observed == model.days, "round \(round) after \(trace.last!): database \(observed), model \(model.days)\n\(trace)")
                    if observed != model.days || failure != expected { return }
                }
            }
        }
    }
}
