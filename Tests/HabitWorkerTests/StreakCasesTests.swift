import Foundation
import HabitStore
import PostgresClient
import Testing
import TestSupport

fileprivate func date(_ text: String) -> CalendarDate { CalendarDate(iso8601: text)! }
fileprivate func seconds(_ rfc3339: String) -> Int64 { PostgresTimestamp(rfc3339: rfc3339)!.microsecondsSinceUnixEpoch / 1_000_000 }

/// The issue's hand-written streak cases, each a test, through the spawned worker's
/// habits.stats (and day.get's include ["streaks"] and stats.calendar where they say something
/// of their own). Each case is checked against the answer written out here AND against
/// StreakModel (HistoryModel.swift, StreakModel.swift and StreakCase.swift are symlinks to
/// HabitStoreTests' files), so the model is pinned on them too. Then a worker-level property
/// test: random histories, habits.stats and stats.calendar against the model.
@Suite("habit serve: the issue's streak cases, and habits.stats against the model")
struct StreakCasesTests {
    /// An instant given as a local date and time in `zone` (on days without a DST change).
    static func local(_ day: String, _ hour: Int, _ minute: Int = 0, in zone: String) -> Int64 {
        ZoneClock(zone).midnight(date(day)) + Int64(hour * 3_600 + minute * 60)
    }

    static func period(_ start: Int64, _ end: Int64?, _ schedule: HistorySchedule = .daily) -> HistoryPeriod {
        HistoryPeriod(start: start, end: end, schedule: schedule)
    }

    static func days(_ dates: String...) -> Set<CalendarDate> { Set(dates.map(date)) }

    /// A one-user case with the given habits (no references of its own: the tests ask).
    static func streakCase(zone: String, weekStart: Int = 1, habits: [[HistoryPeriod]], schedules: [HistorySchedule]? = nil,
                           completions: [Set<CalendarDate>] = [], skips: [Set<CalendarDate>] = []) -> StreakCase {
        StreakCase(zone: zone, today: ZoneClock(zone).localDate(Int64(Date().timeIntervalSince1970)), weekStart: weekStart,
                   habits: habits, schedules: schedules ?? habits.map { $0.last?.schedule ?? .daily },
                   sortOrders: habits.indices.map { $0 },
                   completions: habits.indices.map { $0 < completions.count ? completions[$0] : [] },
                   skips: habits.indices.map { $0 < skips.count ? skips[$0] : [] },
                   references: [], picked: 0, calendarFrom: date("2000-01-01"), calendarTo: date("2000-01-01"))
    }

    /// One element of habits.stats as the model's value (habit by its index in `ids`).
    static func stats(_ json: WireJSON, ids: [UUID]) -> HabitStats? {
        guard let id = json.habitID, let habit = ids.firstIndex(of: id),
              let unit = json["unit"]?.stringValue.flatMap(StreakUnit.init(rawValue:)),
              let current = json["current_streak"], let longest = json["longest_streak"],
              let currentLength = current["length"]?.intValue, let longestLength = longest["length"]?.intValue,
              let total = json["total_done"]?.intValue else { return nil }
        func day(_ value: WireJSON?) -> CalendarDate? { value?.stringValue.flatMap(CalendarDate.init(iso8601:)) }
        func rate(_ value: WireJSON?) -> Double? { value?.numberLiteral.flatMap(Double.init) }
        return HabitStats(habit: habit, unit: unit, currentLength: currentLength, currentStart: day(current["start"]),
                          longestLength: longestLength, longestStart: day(longest["start"]), longestEnd: day(longest["end"]),
                          rate7: rate(json["rate_7"]), rate30: rate(json["rate_30"]), rate365: rate(json["rate_365"]),
                          rateAll: rate(json["rate_all"]), totalDone: total, lastDone: day(json["last_done"]))
    }

    /// Equal, rates to within 1e-12 (JSON carries them in decimal).
    static func same(_ actual: [HabitStats], _ expected: [HabitStats]) -> Bool {
        guard actual.count == expected.count else { return false }
        func close(_ a: Double?, _ b: Double?) -> Bool {
            switch (a, b) {
            case (nil, nil): true
            case let (a?, b?): abs(a - b) <= 1e-12
            default: false
            }
        }
        return zip(actual, expected).allSatisfy { a, b in
            var left = a, right = b
            guard close(a.rate7, b.rate7), close(a.rate30, b.rate30), close(a.rate365, b.rate365), close(a.rateAll, b.rateAll) else { return false }
            (left.rate7, left.rate30, left.rate365, left.rateAll) = (nil, nil, nil, nil)
            (right.rate7, right.rate30, right.rate365, right.rateAll) = (nil, nil, nil, nil)
            return left == right
        }
    }

    /// A written case: the user, the habits' ids, and the session.
    struct Written {
        let session: WorkerSession
        let streakCase: StreakCase
        let user: UUID
        let ids: [UUID]

        /// habits.stats at `reference` (nil: no date, today) and the model's answer, habit by index.
        func statsAndModel(at reference: CalendarDate?, id: Int? = nil) throws -> (actual: [HabitStats], expected: [HabitStats], raw: WireJSON) {
            var members: [String: WireJSON] = [:]
            if let reference { members["date"] = .string(reference.description) }
            if let id { members["id"] = .uuid(ids[id]) }
            let today = try session.today(in: streakCase.zone, dayStart: streakCase.dayStartText)
            let result = try session.worker.call("habits.stats", params(user, members))
            let elements = result["habits"]?.arrayValue ?? []
            let actual = elements.compactMap { StreakCasesTests.stats($0, ids: ids) }
            let model = streakCase.model(today: today)
            let day = reference ?? today
            let expected = id.map { [model.stats($0, at: day)] } ?? model.stats(at: day, order: streakCase.order(ids: ids))
            let readable = actual.count == elements.count && result["date"] == .string(day.description)
            return (readable ? actual : [], expected, result)
        }

        /// habits.stats at `reference` (nil: no date, today), checked against the model.
        func stats(at reference: CalendarDate?, id: Int? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws -> [HabitStats] {
            let (actual, expected, raw) = try statsAndModel(at: reference, id: id)
            #expect(StreakCasesTests.same(actual, expected), "habits.stats disagrees with the model:\n  worker \(raw)\n  as    \(actual)\n  model  \(expected)",
                    sourceLocation: sourceLocation)
            return actual
        }

        /// stats.calendar over [from, to] (all habits, or one) and the model's answer.
        func calendarAndModel(_ from: String, _ to: String, id: Int? = nil) throws -> (actual: [CalendarDay], expected: [CalendarDay]) {
            var members: [String: WireJSON] = ["from": .string(from), "to": .string(to)]
            if let id { members["id"] = .uuid(ids[id]) }
            let today = try session.today(in: streakCase.zone, dayStart: streakCase.dayStartText)
            let result = try session.worker.call("stats.calendar", params(user, members))
            var actual: [CalendarDay] = []
            for day in result["days"]?.arrayValue ?? [] {
                guard let text = day["date"]?.stringValue, let when = CalendarDate(iso8601: text), let due = day["due"]?.intValue,
                      let done = day["done"]?.intValue, let skipped = day["skipped"]?.intValue, let level = day["level"]?.intValue else {
                    return ([], [CalendarDay(date: date(from), due: -1, done: -1, skipped: -1, level: -1)])
                }
                actual.append(CalendarDay(date: when, due: due, done: done, skipped: skipped, level: level))
            }
            return (actual, streakCase.model(today: today).calendar(from: date(from), to: date(to), habit: id))
        }

        /// stats.calendar over [from, to] (all habits, or one), checked against the model, as
        /// "YYYY-MM-DD" → "due/done/skipped/level".
        func calendar(_ from: String, _ to: String, id: Int? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: String] {
            let (actual, expected) = try calendarAndModel(from, to, id: id)
            #expect(actual == expected, "stats.calendar disagrees with the model:\n  worker \(actual)\n  model  \(expected)", sourceLocation: sourceLocation)
            return Dictionary(uniqueKeysWithValues: actual.map { ($0.date.description, "\($0.due)/\($0.done)/\($0.skipped)/\($0.level)") })
        }

        /// day.get with include ["streaks"]: each habit's current_streak as "length start".
        func dayStreaks(_ day: CalendarDate) throws -> [String] {
            let view = try session.worker.call("day.get", params(user, ["date": .string(day.description), "include": ["streaks"]]))
            return (view["habits"]?.arrayValue ?? []).map { habit in
                "\(habit["current_streak"]?["length"]?.intValue.map(String.init) ?? "?") \(habit["current_streak"]?["start"]?.stringValue ?? "null")"
            }
        }
    }

    static func with(_ streakCase: StreakCase, _ body: (Written) throws -> Void) throws {
        try WorkerSession.with { session in
            let (user, ids) = try streakCase.write(on: session.admin)
            try body(Written(session: session, streakCase: streakCase, user: user, ids: ids))
        }
    }

    /// "longest L start…end" / "current L start" of one answer, for short expectations.
    static func streaks(_ stats: HabitStats) -> String {
        "current \(stats.currentLength) \(stats.currentStart.map(\.description) ?? "null"), "
            + "longest \(stats.longestLength) \(stats.longestStart.map(\.description) ?? "null")…\(stats.longestEnd.map(\.description) ?? "null")"
    }

    @Test("a streak runs across a deactivated span: the days the habit is not on are neutral")
    func acrossADeactivatedSpan() throws {
        let zone = "UTC"
        // On 03-02…03-05 (deactivated 03-05 15:00, so on that day), off 03-06…03-08, on again from 03-09.
        let history = Self.streakCase(zone: zone, habits: [[
            Self.period(Self.local("2026-03-02", 9, in: zone), Self.local("2026-03-05", 15, in: zone)),
            Self.period(Self.local("2026-03-09", 9, in: zone), nil),
        ]], completions: [Self.days("2026-03-02", "2026-03-03", "2026-03-04", "2026-03-05", "2026-03-09", "2026-03-10", "2026-03-11")])
        try Self.with(history) { (written: Written) throws in
            let stats = try written.stats(at: date("2026-03-12"))
            #expect(stats.map(Self.streaks) == ["current 7 2026-03-02, longest 7 2026-03-02…2026-03-11"])
            // 03-06…03-08 neutral, 03-12 (R) not done: not over; 3 of 3 counted days kept.
            #expect(stats.first?.rate7 == 1.0 && stats.first?.totalDone == 7 && stats.first?.lastDone == date("2026-03-11"))
            #expect(try written.dayStreaks(date("2026-03-12")) == ["7 2026-03-02"])
            // While it is off the habit is not listed (not on R), but asked by id it answers.
            #expect(try written.stats(at: date("2026-03-07")).isEmpty)
            #expect(try written.stats(at: date("2026-03-07"), id: 0).map(Self.streaks) == ["current 4 2026-03-02, longest 4 2026-03-02…2026-03-05"])
        }
    }

    @Test("a streak runs across a DST change (New York springs forward on 2026-03-08, a schedule change at that instant)")
    func acrossADSTChange() throws {
        let zone = "America/New_York"
        let transition = seconds("2026-03-08T07:00:00Z") // 02:00 EST → 03:00 EDT
        let history = Self.streakCase(zone: zone, habits: [[
            Self.period(Self.local("2026-03-05", 23, 30, in: zone), transition),
            Self.period(transition, nil, .weekdays([1, 2, 3, 4, 5, 6, 7])),
        ]], completions: [Self.days("2026-03-05", "2026-03-06", "2026-03-07", "2026-03-08", "2026-03-09", "2026-03-10")])
        try Self.with(history) { (written: Written) throws in
            #expect(try written.stats(at: date("2026-03-10")).map(Self.streaks) == ["current 6 2026-03-05, longest 6 2026-03-05…2026-03-10"])
            #expect(try written.calendar("2026-03-04", "2026-03-11") == [
                "2026-03-04": "0/0/0/0", "2026-03-05": "1/1/0/4", "2026-03-06": "1/1/0/4", "2026-03-07": "1/1/0/4",
                "2026-03-08": "1/1/0/4", "2026-03-09": "1/1/0/4", "2026-03-10": "1/1/0/4", "2026-03-11": "1/0/0/0",
            ])
        }
    }

    @Test("a skipped day inside a streak is passed over: it neither breaks nor lengthens it")
    func skippedDayInsideAStreak() throws {
        let zone = "Europe/London"
        let history = Self.streakCase(zone: zone, habits: [[Self.period(Self.local("2026-04-01", 8, in: zone), nil)]],
                                      completions: [Self.days("2026-04-01", "2026-04-02", "2026-04-04", "2026-04-05")],
                                      skips: [Self.days("2026-04-03")])
        try Self.with(history) { (written: Written) throws in
            let stats = try written.stats(at: date("2026-04-05"))
            #expect(stats.map(Self.streaks) == ["current 4 2026-04-01, longest 4 2026-04-01…2026-04-05"])
            #expect(stats.first?.rate7 == 1.0, "due 5 − excused 1 = 4, all kept")
            #expect(try written.calendar("2026-04-03", "2026-04-03") == ["2026-04-03": "1/0/1/0"])
        }
    }

    @Test("today not yet done does not break the streak; done, it lengthens it")
    func todayNotYetDone() throws {
        let zone = "UTC"
        let today = ZoneClock(zone).localDate(Int64(Date().timeIntervalSince1970))
        let first = today.adding(days: -5)
        let history = Self.streakCase(zone: zone, habits: [[Self.period(Self.local(first.description, 0, 1, in: zone), nil)]],
                                      completions: [Set((0..<5).map { first.adding(days: $0) })])
        try Self.with(history) { (written: Written) throws in
            guard try written.session.today(in: zone) == today else { return } // midnight passed meanwhile
            let before = try written.stats(at: nil)
            #expect(before.map(Self.streaks) == ["current 5 \(first), longest 5 \(first)…\(today.adding(days: -1))"])
            #expect(before.first?.rate7 == 1.0, "today is not counted until done")
            #expect(try written.dayStreaks(today) == ["5 \(first)"])
            try written.session.worker.call("completions.set", params(written.user, ["template_id": .uuid(written.ids[0]),
                                                                                     "date": .string(today.description), "completed": true]))
            var done = written.streakCase
            done.completions[0].insert(today)
            let after = try Written(session: written.session, streakCase: done, user: written.user, ids: written.ids).stats(at: nil)
            #expect(after.map(Self.streaks) == ["current 6 \(first), longest 6 \(first)…\(today)"])
        }
    }

    @Test("a weekday habit keeps its streak over a weekend (Saturday and Sunday are neutral)")
    func weekdayHabitOverAWeekend() throws {
        let zone = "Asia/Kolkata"
        let history = Self.streakCase(zone: zone, habits: [[Self.period(Self.local("2026-06-01", 7, in: zone), nil, .weekdays([1, 2, 3, 4, 5]))]],
                                      completions: [Self.days("2026-06-01", "2026-06-02", "2026-06-03", "2026-06-04", "2026-06-05", "2026-06-08")])
        try Self.with(history) { (written: Written) throws in
            let monday = try written.stats(at: date("2026-06-08"))
            #expect(monday.map(Self.streaks) == ["current 6 2026-06-01, longest 6 2026-06-01…2026-06-08"])
            #expect(monday.first?.rate7 == 1.0, "5 due days in 06-02…06-08, all kept")
            // Sunday: on (the habit is listed) but not due; the streak stands.
            #expect(try written.stats(at: date("2026-06-07")).map(Self.streaks) == ["current 5 2026-06-01, longest 5 2026-06-01…2026-06-05"])
        }
    }

    @Test("a times_per_week week with two skips is kept with one completion (3 − 2 skipped); one skip is not enough")
    func timesPerWeekWithTwoSkips() throws {
        let zone = "UTC"
        let start = Self.local("2026-06-01", 6, in: zone) // a Monday
        // Habit 0: week of 06-01 done Mon, skipped Tue and Wed → target 1, kept; week of 06-08
        // done three times → kept. Habit 1: week of 06-01 done Mon, skipped Tue only → missed.
        let history = Self.streakCase(zone: zone, habits: [[Self.period(start, nil, .timesPerWeek(3))], [Self.period(start, nil, .timesPerWeek(3))]],
                                      completions: [Self.days("2026-06-01", "2026-06-08", "2026-06-10", "2026-06-12", "2026-06-15"),
                                                    Self.days("2026-06-01", "2026-06-08", "2026-06-10", "2026-06-12")],
                                      skips: [Self.days("2026-06-02", "2026-06-03"), Self.days("2026-06-02")])
        try Self.with(history) { (written: Written) throws in
            // R = Wednesday 06-17: its week (one completion so far) is not over, so neutral.
            let stats = try written.stats(at: date("2026-06-17"))
            #expect(stats.map(Self.streaks) == ["current 2 2026-06-01, longest 2 2026-06-01…2026-06-14",
                                                "current 1 2026-06-08, longest 1 2026-06-08…2026-06-14"])
            #expect(stats.map(\.unit) == [.weeks, .weeks])
            #expect(stats.map(\.rateAll) == [1.0, 0.5])
        }
    }

    @Test("a habit activated today: no streak yet, rates null until today is done, then a streak of 1 from today")
    func habitActivatedToday() throws {
        try WorkerSession.with { session in
            let user = UUID()
            try session.worker.call("profile.set", params(user, ["timezone": "Pacific/Kiritimati"]))
            let habit = try session.worker.createHabit(user: user, name: "new")
            let weekly = try session.worker.createHabit(user: user, name: "weekly", extra: [
                .init("schedule", ["type": "times_per_week", "times": 1]),
            ])
            guard let id = habit.habitID, let weeklyID = weekly.habitID else { Issue.record("\(habit) \(weekly)"); return }
            let today = try session.today(in: "Pacific/Kiritimati")
            let before = try session.worker.call("habits.stats", params(user))
            guard try session.today(in: "Pacific/Kiritimati") == today else { return } // midnight passed meanwhile
            let fresh: WireJSON = [
                "current_streak": ["length": 0, "start": .null], "longest_streak": ["length": 0, "start": .null, "end": .null],
                "rate_7": .null, "rate_30": .null, "rate_365": .null, "rate_all": .null, "total_done": 0, "last_done": .null,
            ]
            for (element, unit) in zip(before["habits"]?.arrayValue ?? [], ["days", "weeks"]) {
                #expect(element["unit"] == .string(unit))
                for key in fresh.keys ?? [] { #expect(element[key] == fresh[key], "\(key) of \(element)") }
            }
            #expect(before["habits"]?.arrayValue?.count == 2)
            for target in [id, weeklyID] {
                try session.worker.call("completions.set", params(user, ["template_id": .uuid(target), "date": .string(today.description), "completed": true]))
            }
            let after = try session.worker.call("habits.stats", params(user))
            guard try session.today(in: "Pacific/Kiritimati") == today else { return }
            let habits = after["habits"]?.arrayValue ?? []
            #expect(habits.first?["current_streak"] == ["length": 1, "start": .string(today.description)])
            #expect(habits.first?["rate_7"]?.numberLiteral.flatMap(Double.init) == 1.0 && habits.first?["total_done"] == 1)
            // The week is kept (1 of 1): a weekly streak starts on the first day of the week.
            let monday = today.adding(days: -((today.isoWeekday + 6) % 7))
            #expect(habits.last?["current_streak"] == ["length": 1, "start": .string(monday.description)])
        }
    }

    // MARK: - Property test through the worker

    /// Cases per run: 25 in the suite (each spawns no worker of its own but writes a user);
    /// HABIT_STREAK_WORKER_ROUNDS for longer runs. HABIT_STREAK_WORKER_SEED replays a run.
    static let rounds = ProcessInfo.processInfo.environment["HABIT_STREAK_WORKER_ROUNDS"].flatMap(Int.init) ?? 25

    @Test("habits.stats and stats.calendar answer what the model does for random histories (seeded; the seed is printed on failure)")
    func workerMatchesTheModel() throws {
        let seed = ProcessInfo.processInfo.environment["HABIT_STREAK_WORKER_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0...UInt64.max)
        try WorkerSession.with { session in
            var random = SeededGenerator(seed: seed)
            var failures = 0
            for round in 0..<Self.rounds where failures == 0 {
                let streakCase = StreakGenerator.generate(using: &random)
                let (user, ids) = try streakCase.write(on: session.admin)
                let written = Written(session: session, streakCase: streakCase, user: user, ids: ids)
                let before = try session.today(in: streakCase.zone, dayStart: streakCase.dayStartText)
                var differences: [String] = []
                for reference in [nil] + streakCase.references.map(Optional.some) {
                    for id in [nil, streakCase.picked] {
                        let (actual, expected, raw) = try written.statsAndModel(at: reference, id: id)
                        if !Self.same(actual, expected) {
                            differences.append("habits.stats date \(reference.map(\.description) ?? "absent") id \(id.map { "habit \($0)" } ?? "absent"):\n  worker \(raw)\n  model  \(expected)")
                        }
                    }
                }
                let (actual, expected) = try written.calendarAndModel(streakCase.calendarFrom.description, streakCase.calendarTo.description)
                if actual != expected { differences.append("stats.calendar:\n  worker \(actual)\n  model  \(expected)") }
                // A case that straddled the user's day start is not evidence either way.
                if !differences.isEmpty, try session.today(in: streakCase.zone, dayStart: streakCase.dayStartText) == before {
                    failures += 1
                    Issue.record("""
                        round \(round) of HABIT_STREAK_WORKER_SEED=\(seed) (set it to replay the run): the worker disagrees with the model for
                        \(streakCase)
                        \(differences.joined(separator: "\n"))
                        """)
                }
            }
        }
    }
}
