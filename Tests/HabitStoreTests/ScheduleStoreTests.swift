import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Schedules through the repository (issue 16, "Schedules"): creating with one (sql/0010 section
/// 9's `habit.create_habit` and its retry rule), changing it (the history trigger), reading the
/// periods back (`history`), and the CHECK that stays the wall for writers that skip Swift.
@Suite struct ScheduleStoreTests {
    static let shapes: [HabitSchedule] = [.daily, .weekdays([1, 3, 5]), .everyNDays(2), .timesPerWeek(3),
                                          .weekdays([7]), .everyNDays(365), .timesPerWeek(7),
                                          .timesInDays(times: 2, days: 3), .timesInDays(times: 364, days: 365), .timesInDays(times: 1, days: 2)]

    @Test("create with each shape: the habit and its first period carry it")
    func createRoundTrips() throws {
        try HabitFixture.with { fixture in
            let user = UUID()
            for (index, shape) in Self.shapes.enumerated() {
                let habit = try fixture.repository.createHabit(user: user, HabitDraft(name: "H\(index)", activatedAt: instant("2026-01-01T00:00:00Z"),
                                                                                   schedule: shape))
                #expect(habit.schedule == shape)
                #expect(try fixture.repository.listHabits(user: user, includeInactive: true).items.last?.schedule == shape)
                let history = try fixture.repository.history(user: user, id: habit.id)
                #expect(history.periods == [HabitPeriod(startedAt: instant("2026-01-01T00:00:00Z"), endedAt: nil, schedule: shape)])
            }
            // Absent: daily. Weekdays in any order are stored ascending.
            #expect(try fixture.repository.createHabit(user: user, HabitDraft(name: "Plain")).schedule == .daily)
            let unordered = try fixture.repository.createHabit(user: user, HabitDraft(name: "Odd", schedule: .weekdays([5, 1, 3])))
            #expect(unordered.schedule == .weekdays([1, 3, 5]))
            #expect(try fixture.admin.queryOne("SELECT schedule::text FROM habit_templates WHERE id = \(unordered.id)").decode(String.self, at: 0)
                    == #"{"days": [1, 3, 5], "type": "weekdays"}"#)
        }
    }

    @Test("bad shapes are refused before the database, naming the member")
    func validation() throws {
        try HabitFixture.with { fixture in
            let user = UUID()
            let cases: [(HabitSchedule, String, InputFailure)] = [
                (.weekdays([]), "schedule.days", .outOfRange),
                (.weekdays([1, 8]), "schedule.days[1]", .outOfRange),
                (.weekdays([0]), "schedule.days[0]", .outOfRange),
                (.weekdays([2, 4, 2]), "schedule.days[2]", .duplicateValue),
                (.everyNDays(0), "schedule.n", .outOfRange),
                (.everyNDays(366), "schedule.n", .outOfRange),
                (.timesPerWeek(0), "schedule.times", .outOfRange),
                (.timesPerWeek(8), "schedule.times", .outOfRange),
                (.timesInDays(times: 1, days: 1), "schedule.days", .outOfRange),
                (.timesInDays(times: 1, days: 366), "schedule.days", .outOfRange),
                (.timesInDays(times: 3, days: 3), "schedule.times", .outOfRange),
                (.timesInDays(times: 0, days: 3), "schedule.times", .outOfRange),
            ]
            let habit = try fixture.repository.createHabit(user: user, HabitDraft(name: "Kept"))
            for (shape, field, reason) in cases {
                #expect { try fixture.repository.createHabit(user: user, HabitDraft(name: "Bad", schedule: shape)) } throws: { error in
                    guard case .invalidInput(field, reason, _)? = error as? StoreError else { return false }
                    return true
                }
                #expect { try fixture.repository.updateHabit(user: user, id: habit.id, HabitChanges(schedule: shape)) } throws: { error in
                    guard case .invalidInput(field, reason, _)? = error as? StoreError else { return false }
                    return true
                }
            }
            #expect(try fixture.repository.listHabits(user: user).items.map(\.name) == ["Kept"])
            #expect(try fixture.repository.history(user: user, id: habit.id).periods.count == 1)
        }
    }

    @Test("a retry with the id and the same schedule returns the row; another schedule is idConflict")
    func retryComparesTheSchedule() throws {
        try HabitFixture.with { fixture in
            let user = UUID(), id = UUID()
            let draft = HabitDraft(id: id, name: "Swim", schedule: .weekdays([2, 4]))
            let first = try fixture.repository.createHabit(user: user, draft)
            #expect(try fixture.repository.createHabit(user: user, draft) == first)
            // The same weekdays in another order are the same schedule (sorted before comparing).
            #expect(try fixture.repository.createHabit(user: user, HabitDraft(id: id, name: "Swim", schedule: .weekdays([4, 2]))) == first)
            for other: HabitSchedule? in [nil, .daily, .weekdays([2]), .everyNDays(2), .timesPerWeek(2)] {
                #expect(throws: StoreError.idConflict) { try fixture.repository.createHabit(user: user, HabitDraft(id: id, name: "Swim", schedule: other)) }
            }
            #expect(try fixture.repository.history(user: user, id: id).periods.count == 1)
        }
    }

    @Test("a schedule change ends the open period and starts one at the same instant; the same schedule changes nothing")
    func updateWritesHistory() throws {
        try HabitFixture.with { fixture in
            let user = UUID()
            let habit = try fixture.repository.createHabit(user: user, HabitDraft(name: "Read", activatedAt: instant("2026-01-01T00:00:00Z")))
            let changed = try fixture.repository.updateHabit(user: user, id: habit.id, HabitChanges(schedule: .everyNDays(3)))
            #expect(changed.schedule == .everyNDays(3))
            let periods = try fixture.repository.history(user: user, id: habit.id).periods
            #expect(periods.map(\.schedule) == [.daily, .everyNDays(3)])
            #expect(periods.count == 2 && periods[0].endedAt == periods[1].startedAt && periods[1].endedAt == nil)
            // Same schedule, or another field only: no new period.
            _ = try fixture.repository.updateHabit(user: user, id: habit.id, HabitChanges(name: "Read more", schedule: .everyNDays(3)))
            _ = try fixture.repository.updateHabit(user: user, id: habit.id, HabitChanges(name: "Read"))
            #expect(try fixture.repository.history(user: user, id: habit.id).periods == periods)
        }
    }

    @Test("history: deactivate closes, activate opens; a habit that never was active has none; another user's is notFound")
    func historyReadsPeriods() throws {
        try HabitFixture.with { fixture in
            let user = UUID(), stranger = UUID()
            let habit = try fixture.repository.createHabit(user: user, HabitDraft(name: "Walk", activatedAt: instant("2026-01-01T00:00:00Z"),
                                                                               schedule: .timesPerWeek(4)))
            let deactivated = try fixture.repository.deactivateHabit(user: user, id: habit.id)
            let closed = try fixture.repository.history(user: user, id: habit.id)
            #expect(closed.id == habit.id)
            #expect(closed.periods == [HabitPeriod(startedAt: instant("2026-01-01T00:00:00Z"), endedAt: deactivated.deactivatedAt, schedule: .timesPerWeek(4))])
            // While inactive, a new schedule waits for the next activation.
            _ = try fixture.repository.updateHabit(user: user, id: habit.id, HabitChanges(schedule: .daily))
            #expect(try fixture.repository.history(user: user, id: habit.id) == closed)
            _ = try fixture.repository.activateHabit(user: user, id: habit.id)
            let reopened = try fixture.repository.history(user: user, id: habit.id).periods
            #expect(reopened.count == 2 && reopened[0] == closed.periods[0] && reopened[1].endedAt == nil && reopened[1].schedule == .daily)

            #expect(throws: StoreError.notFound) { try fixture.repository.history(user: stranger, id: habit.id) }
            #expect(throws: StoreError.notFound) { try fixture.repository.history(user: user, id: UUID()) }
            // Inserted deactivated at its activation instant (scheduled, then cancelled): no period.
            let never = UUID()
            try fixture.admin.execute("""
                INSERT INTO habit_templates (id, user_id, name, is_active, activated_at, deactivated_at)
                VALUES (\(never), \(user), 'Never', false, '2026-02-01T00:00:00Z', '2026-02-01T00:00:00Z')
                """)
            #expect(try fixture.repository.history(user: user, id: never).periods == [])
        }
    }

    /// The CHECK is the wall for writers that skip Swift: an app through Supabase
    /// (`authenticated`), and a statement of the worker's own that would pass a bad shape,
    /// which maps to -32602 field `schedule` rather than -32603.
    @Test("the database refuses a bad shape from authenticated (23514), mapped to invalidInput(schedule)")
    func checkIsTheWall() throws {
        try HabitFixture.with { fixture in
            let user = UUID()
            let habit = try fixture.repository.createHabit(user: user, HabitDraft(name: "Run"))
            let inactive = try fixture.repository.deactivateHabit(user: user, id: try fixture.repository.createHabit(user: user, HabitDraft(name: "Rest")).id)
            let bad = [#"{"type":"weekdays","days":[1,1]}"#, #"{"type":"weekdays","days":[]}"#, #"{"type":"every_n_days","n":0}"#,
                       #"{"type":"times_per_week","times":8}"#, #"{"type":"daily","x":1}"#, #"{"type":"hourly"}"#, #"{"type":"every_n_days","n":"2"}"#,
                       #"{"type":"weekdays","days":[1.5]}"#, #"["daily"]"#,
                       #"{"type":"times_in_days","times":3,"days":3}"#, #"{"type":"times_in_days","times":1,"days":366}"#,
                       #"{"type":"times_in_days","times":1}"#, #"{"type":"times_in_days","times":1,"days":[3]}"#]
            let connection = try fixture.database.connect()
            for shape in bad {
                HistoryRulesTests.expectState("23514", comment: "\(shape)") {
                    try HistoryRulesTests.asUser(user, on: connection) { c throws in
                        _ = try c.execute("UPDATE public.habit_templates SET schedule = \(shape)::jsonb WHERE id = \(habit.id)")
                    }
                }
                HistoryRulesTests.expectState("23514", comment: "\(shape)") {
                    try HistoryRulesTests.asUser(user, on: connection) { c throws in
                        _ = try c.execute("INSERT INTO public.habit_templates (user_id, name, schedule) VALUES (\(user), 'X', \(shape)::jsonb)")
                    }
                }
                // Through the worker's scope: on the active habit the history trigger's new period
                // meets habit_periods' CHECK first, on an inactive one habit_templates'.
                let scope = UserScope(connection: fixture.workerConnection)
                for (target, constraint) in [(habit.id, "habit_periods_schedule_check"), (inactive.id, "habit_templates_schedule_check")] {
                    #expect(throws: StoreError.invalidInput(field: "schedule", reason: .invalidSchedule, message: "violates \(constraint)")) {
                        _ = try scope.query(as: user, "SELECT id FROM habit.set_schedule(\(target), \(shape)::jsonb)")
                    }
                }
            }
            #expect(try fixture.repository.history(user: user, id: habit.id).periods.map(\.schedule) == [.daily])
        }
    }
}
