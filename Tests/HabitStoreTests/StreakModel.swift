import Foundation
import PostgresClient

// The model of issue 17's streaks, rates, totals and calendar, in plain Swift, written from
// the definitions (docs/protocol.md, "Streaks and rates"), not from sql/0011: the property
// tests (StreakPropertyTests, and through the worker StreakCasesTests) compare
// habit.habit_stats, habit.current_streaks and habit.stats_calendar with it. Which days a habit
// is on and due, and the schedule in force, are issue 16's HistoryModel's (with the REAL
// today of the user's zone), so this file only adds slots, runs and counting.
//
// This file is also compiled into HabitWorkerTests (a symlink there), so it needs nothing but
// HistoryModel.swift, Foundation and PostgresClient.

/// How a habit's streaks and rates count: `weeks` when the habit's CURRENT schedule
/// (habit_templates.schedule) is times_per_week, else `days`; one unit for all its history.
enum StreakUnit: String, Hashable, Sendable {
    case days, weeks
}

/// What one slot (a day, or a user week) is for streaks and rates.
enum SlotState: Hashable, Sendable {
    /// Neither extends nor breaks a run: the habit is not on or not due (days), on no day
    /// of the week (weeks), or the slot of R when it is not kept (not over yet).
    case neutral
    case kept
    /// Skipped due day (days unit only): passed over like neutral, never counted.
    case excused
    case missed
}

/// One slot: its first and last day (equal for a day; first + 6 for a week) and its state.
struct StreakSlot: Hashable, Sendable {
    var first: CalendarDate
    var last: CalendarDate
    var state: SlotState
}

/// A run of kept slots: `length` kept slots, from the first day of the first to the last day
/// of the last. Length 0 has no dates.
struct StreakRun: Hashable, Sendable, CustomStringConvertible {
    var length = 0
    var start: CalendarDate?
    var end: CalendarDate?

    var description: String { "\(length) \(start.map(\.description) ?? "null")…\(end.map(\.description) ?? "null")" }
}

/// One row of habit.habit_stats (and, for the current streak only, habit.current_streaks):
/// the habit by its index in the case.
struct HabitStats: Hashable, Sendable, CustomStringConvertible {
    var habit: Int
    var unit: StreakUnit
    var currentLength: Int
    var currentStart: CalendarDate?
    var longestLength: Int
    var longestStart: CalendarDate?
    var longestEnd: CalendarDate?
    var rate7: Double?
    var rate30: Double?
    var rate365: Double?
    var rateAll: Double?
    var totalDone: Int
    var lastDone: CalendarDate?

    var description: String {
        func show(_ date: CalendarDate?) -> String { date.map(\.description) ?? "null" }
        func show(_ rate: Double?) -> String { rate.map { String($0) } ?? "null" }
        return "habit \(habit) \(unit.rawValue): current \(currentLength) from \(show(currentStart)), "
            + "longest \(longestLength) \(show(longestStart))…\(show(longestEnd)), "
            + "rates \(show(rate7)) \(show(rate30)) \(show(rate365)) \(show(rateAll)), done \(totalDone) last \(show(lastDone))"
    }
}

/// One row of habit.stats_calendar.
struct CalendarDay: Hashable, Sendable, CustomStringConvertible {
    var date: CalendarDate
    var due: Int
    var done: Int
    var skipped: Int
    var level: Int

    var description: String { "\(date) due \(due) done \(done) skipped \(skipped) level \(level)" }
}

/// The definitions for one user: `history` (zone, the REAL today of the zone, week start,
/// completions and skips), each habit's periods, and each habit's current schedule.
struct StreakModel: Sendable {
    let history: HistoryModel
    let habits: [[HistoryPeriod]]
    /// habit_templates.schedule per habit (decides the unit).
    let schedules: [HistorySchedule]

    func unit(_ habit: Int) -> StreakUnit {
        if case .timesPerWeek = schedules[habit] { return .weeks }
        return .days
    }

    /// Issue 16's answer for one habit and day: nil when the habit is not on, else its
    /// due/done/skipped flags and the schedule in force.
    func habitDay(_ habit: Int, _ day: CalendarDate) -> HabitDay? {
        guard let period = history.periodInForce(habits[habit], on: day) else { return nil }
        return HabitDay(habit: habit, day: day, due: history.isDue(period, habit: habit, on: day), schedule: period.schedule,
                        done: history.completions(of: habit).contains(day), skipped: history.skips(of: habit).contains(day))
    }

    /// No day before the earliest local start date of a habit's periods can be on.
    func firstPossibleDay(_ habit: Int) -> CalendarDate? {
        habits[habit].map { history.clock.localDate($0.start) }.min()
    }

    /// Days unit: neutral when not on or not due; else kept (done), excused (skipped), missed.
    func dayState(_ habit: Int, _ day: CalendarDate) -> SlotState {
        guard let info = habitDay(habit, day), info.due else { return .neutral }
        if info.done { return .kept }
        if info.skipped { return .excused }
        return .missed
    }

    /// Weeks unit, for the user week starting `week`: neutral when the habit is on no day of
    /// it or its target is 0; else kept when done ≥ target − skipped, counting only on-days,
    /// where target is `times` of the schedule in force on the last on-day when that is
    /// times_per_week, else the number of due days of the week; missed otherwise.
    ///
    /// A week whose target is 0 (on some days, none of them due: a partial week of a weekdays
    /// period, a week between two days of every 10 days) asks for nothing, as a day that is not
    /// due: it is neutral (issue 29). It used to be kept, which made a habit's kept weeks, and so
    /// its runs, grow with the calendar instead of with its completions and skips.
    func weekState(_ habit: Int, _ week: CalendarDate) -> SlotState {
        let onDays = (0..<7).compactMap { habitDay(habit, week.adding(days: $0)) }
        guard let lastOnDay = onDays.last else { return .neutral }
        let done = onDays.filter(\.done).count
        let skipped = onDays.filter(\.skipped).count
        let target: Int
        if case .timesPerWeek(let times) = lastOnDay.schedule { target = times } else { target = onDays.filter(\.due).count }
        if target == 0 { return .neutral }
        return done >= target - skipped ? .kept : .missed
    }

    /// The habit's slots from the first that can be non-neutral up to and including the slot
    /// of `reference`, oldest first; the slot of R counts as neutral unless it is kept (it is
    /// not over). Slots after R are not there at all.
    func slots(_ habit: Int, through reference: CalendarDate) -> [StreakSlot] {
        guard let first = firstPossibleDay(habit) else { return [] }
        var result: [StreakSlot] = []
        switch unit(habit) {
        case .days:
            var day = first
            while day <= reference {
                result.append(StreakSlot(first: day, last: day, state: dayState(habit, day)))
                day = day.adding(days: 1)
            }
        case .weeks:
            let last = history.userWeek(containing: reference)
            var week = history.userWeek(containing: first)
            while week <= last {
                result.append(StreakSlot(first: week, last: week.adding(days: 6), state: weekState(habit, week)))
                week = week.adding(days: 7)
            }
        }
        if let index = result.indices.last, result[index].last >= reference, result[index].state != .kept {
            result[index].state = .neutral
        }
        return result
    }

    /// The runs of `slots` (maximal sequences of kept slots with no missed slot between), and
    /// the run still open after the last slot (none when a missed slot came after the last
    /// kept one, or nothing was kept).
    static func runs(_ slots: [StreakSlot]) -> (all: [StreakRun], open: StreakRun?) {
        var all: [StreakRun] = []
        var open: StreakRun?
        for slot in slots {
            switch slot.state {
            case .kept:
                if open == nil { open = StreakRun(length: 0, start: slot.first, end: nil) }
                open!.length += 1
                open!.end = slot.last
            case .missed:
                if let run = open { all.append(run) }
                open = nil
            case .neutral, .excused:
                break
            }
        }
        if let run = open { all.append(run) }
        return (all, open)
    }

    /// kept ÷ (kept + missed) over the slots whose last day is on or after `since` (all
    /// slots when nil); nil when there are none. For days this is kept ÷ (due − excused) over
    /// [since, R] with R left out unless kept or excused (an excused R adds one to both due and
    /// excused); for weeks, kept ÷ non-neutral weeks over the weeks overlapping [since, R],
    /// R's week only when kept.
    static func rate(_ slots: [StreakSlot], since: CalendarDate?) -> Double? {
        let counted = slots.filter { slot in since.map { slot.last >= $0 } ?? true }
        let kept = counted.filter { $0.state == .kept }.count
        let missed = counted.filter { $0.state == .missed }.count
        return kept + missed == 0 ? nil : Double(kept) / Double(kept + missed)
    }

    /// Everything habit.habit_stats says about one habit at reference date R.
    func stats(_ habit: Int, at reference: CalendarDate) -> HabitStats {
        let slots = slots(habit, through: reference)
        let (runs, open) = Self.runs(slots)
        // Longest: strictly longer replaces, so ties keep the earliest.
        var longest = StreakRun()
        for run in runs where run.length > longest.length { longest = run }
        let current = open ?? StreakRun()
        let done = history.completions(of: habit).filter { $0 <= reference }
        return HabitStats(habit: habit, unit: unit(habit),
                          currentLength: current.length, currentStart: current.start,
                          longestLength: longest.length, longestStart: longest.start, longestEnd: longest.end,
                          rate7: Self.rate(slots, since: reference.adding(days: -6)),
                          rate30: Self.rate(slots, since: reference.adding(days: -29)),
                          rate365: Self.rate(slots, since: reference.adding(days: -364)),
                          rateAll: Self.rate(slots, since: nil),
                          totalDone: done.count, lastDone: done.max())
    }

    /// Whether the habit is on R (habit_stats without a habit and current_streaks list only these).
    func isOn(_ habit: Int, _ day: CalendarDate) -> Bool {
        history.periodInForce(habits[habit], on: day) != nil
    }

    /// habit.habit_stats(user, NULL, R): every habit on R, in `order` (the caller's
    /// day.get order of habit indices).
    func stats(at reference: CalendarDate, order: [Int]) -> [HabitStats] {
        order.filter { isOn($0, reference) }.map { stats($0, at: reference) }
    }

    /// habit.stats_calendar: per day of [from, to], over the (habit, day) pairs where the habit
    /// is on and due (all habits, or only `habit`): how many, how many done, how many
    /// skipped, and the level: 0 when nothing is done or everything due is skipped, else
    /// ceil(4 × done ÷ (due − skipped)) within 1…4.
    func calendar(from: CalendarDate, to: CalendarDate, habit: Int? = nil) -> [CalendarDay] {
        var result: [CalendarDay] = []
        var day = from
        while day <= to {
            var entry = CalendarDay(date: day, due: 0, done: 0, skipped: 0, level: 0)
            for index in habits.indices where habit == nil || habit == index {
                guard let info = habitDay(index, day), info.due else { continue }
                entry.due += 1
                if info.done { entry.done += 1 }
                if info.skipped { entry.skipped += 1 }
            }
            let base = entry.due - entry.skipped
            if entry.done > 0 && base > 0 { entry.level = min(4, max(1, (4 * entry.done + base - 1) / base)) }
            result.append(entry)
            day = day.adding(days: 1)
        }
        return result
    }
}
