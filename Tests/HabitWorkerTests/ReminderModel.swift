import Foundation
import PostgresClient

/// A model of reminders (issue 33, item 3), written from the rules in docs/protocol.md
/// ("Reminders") with Foundation's zone data, not PostgreSQL's: which firings fall in a window
/// of real time. Instants and wall-clock readings are whole seconds since 1970 (a wall-clock
/// reading counted as if it were UTC), days are days since 1970.
struct ReminderModel {
    enum Schedule: Equatable {
        case daily
        case weekdays(Set<Int>)
        case everyNDays(Int)
    }

    struct Reminder {
        var id: UUID
        /// Minutes after local midnight.
        var minute: Int
        /// nil: every due day.
        var weekdays: Set<Int>?
    }

    struct Habit {
        var id: UUID
        var name: String
        var schedule: Schedule
        /// The habit's period began here (habits.create's activated_at).
        var startedAt: Int
        var archived = false
        /// Deactivated (before the windows are asked): on only before the user's today.
        var deactivated = false
        var done: Set<Int> = []
        var skipped: Set<Int> = []
        var reminders: [Reminder] = []
    }

    struct User {
        var id: UUID
        var zone: String
        /// The day's start, minutes after local midnight.
        var dayStart: Int
        var habits: [Habit] = []
    }

    struct Firing: Hashable, Comparable, CustomStringConvertible {
        var firingID: String
        var reminderID: UUID
        var fireAt: Int
        var habitDay: Int

        static func < (a: Firing, b: Firing) -> Bool {
            (a.fireAt, a.reminderID.uuidString.lowercased(), a.firingID) < (b.fireAt, b.reminderID.uuidString.lowercased(), b.firingID)
        }
        var description: String { "\(firingID)@\(ReminderModel.rfc3339(fireAt))" }
    }

    var users: [User] = []

    // MARK: The wall clock

    static func offset(_ instant: Int, _ zone: TimeZone) -> Int {
        zone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(instant)))
    }

    static func wall(_ instant: Int, _ zone: TimeZone) -> Int { instant + offset(instant, zone) }

    /// The first instant whose wall-clock reading is at or past `wall`: the reading itself on a
    /// plain day, the earlier of two instants showing it, or, inside a gap, the gap's end.
    static func fireInstant(_ wall: Int, _ zone: TimeZone) -> Int {
        // The offsets in force around the reading: hours before and after any transition.
        let guess = wall - offset(wall, zone)
        let offsets = Set([-43_200, -21_600, -7_200, 0, 7_200, 21_600, 43_200].map { offset(guess + $0, zone) })
        let showing = offsets.map { wall - $0 }.filter { Self.wall($0, zone) == wall }
        if let first = showing.min() { return first }
        // A gap: walk by minutes from an instant showing an earlier reading, then by seconds.
        var instant = wall - offsets.max()!
        precondition(Self.wall(instant, zone) < wall, "no instant before the gap")
        while Self.wall(instant + 60, zone) < wall { instant += 60 }
        while Self.wall(instant, zone) < wall { instant += 1 }
        return instant
    }

    static func isoWeekday(_ day: Int) -> Int { ((day % 7) + 7 + 3) % 7 + 1 }

    static func floorDiv(_ a: Int, _ b: Int) -> Int { a >= 0 ? a / b : -((-a + b - 1) / b) }

    static func date(_ day: Int) -> String { CalendarDate(daysSinceUnixEpoch: day).description }

    static func rfc3339(_ instant: Int) -> String {
        PostgresTimestamp(microsecondsSinceUnixEpoch: Int64(instant) * 1_000_000).rfc3339
    }

    /// The user's day holding instant `instant`.
    static func habitDay(ofInstant instant: Int, _ user: User, _ zone: TimeZone) -> Int {
        floorDiv(wall(instant, zone) - user.dayStart * 60, 86_400)
    }

    // MARK: The rule

    /// The firings in [from, to), as of `now` (for deactivated habits: the user's today then).
    func firings(from: Int, to: Int, now: Int) -> [Firing] {
        var result: [Firing] = []
        for user in users {
            guard let zone = TimeZone(identifier: user.zone) else { preconditionFailure(user.zone) }
            let today = Self.habitDay(ofInstant: now, user, zone)
            let firstWallDay = Self.floorDiv(from - 16 * 3600, 86_400), lastWallDay = Self.floorDiv(to + 16 * 3600, 86_400)
            for habit in user.habits where !habit.archived {
                let firstDay = Self.habitDay(ofInstant: habit.startedAt, user, zone)
                for reminder in habit.reminders {
                    for localDate in firstWallDay...lastWallDay {
                        let reading = localDate * 86_400 + reminder.minute * 60
                        let fireAt = Self.fireInstant(reading, zone)
                        guard fireAt >= from, fireAt < to else { continue }
                        let day = Self.floorDiv(reading - user.dayStart * 60, 86_400)
                        guard day >= firstDay, !habit.deactivated || day < today else { continue }
                        let weekday = Self.isoWeekday(day)
                        if let weekdays = reminder.weekdays, !weekdays.contains(weekday) { continue }
                        switch habit.schedule {
                        case .daily: break
                        case .weekdays(let days): guard days.contains(weekday) else { continue }
                        case .everyNDays(let n): guard (day - firstDay) % n == 0 else { continue }
                        }
                        guard !habit.done.contains(day), !habit.skipped.contains(day) else { continue }
                        result.append(Firing(firingID: "\(reminder.id.uuidString.lowercased())/\(Self.date(localDate))",
                                             reminderID: reminder.id, fireAt: fireAt, habitDay: day))
                    }
                }
            }
        }
        return result.sorted()
    }

    /// The instants at which `zone`'s offset changes in [from, to).
    static func transitions(_ zone: TimeZone, from: Int, to: Int) -> [Int] {
        var found: [Int] = []
        var at = Date(timeIntervalSince1970: TimeInterval(from))
        while let next = zone.nextDaylightSavingTimeTransition(after: at), next.timeIntervalSince1970 < TimeInterval(to) {
            found.append(Int(next.timeIntervalSince1970))
            at = next
        }
        return found
    }
}
