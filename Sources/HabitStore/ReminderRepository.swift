import Foundation
import PostgresClient

// Reminders (issue 33, item 3; sql/functions/reminders.sql). A user's side (reminders.set,
// reminders.list) runs as the user like every other method; the push sender's side (the window,
// the claim, the acknowledgement) runs as the worker's login role through SECURITY DEFINER
// functions, because a window holds every user's reminders.

/// The days a reminder applies on: every due day of the habit, or the due days that fall on
/// chosen ISO weekdays (1 Monday … 7 Sunday) of the habit's day.
public enum ReminderDays: Equatable, Sendable {
    case due
    case weekdays([Int])

    /// The stored bit set (bit 0 Monday … bit 6 Sunday), NULL for `due`.
    var bits: Int? {
        switch self {
        case .due: nil
        case .weekdays(let days): days.reduce(0) { $0 | (1 << ($1 - 1)) }
        }
    }

    init(bits: Int?) {
        guard let bits else { self = .due; return }
        self = .weekdays((1...7).filter { bits & (1 << ($0 - 1)) != 0 })
    }
}

/// One reminder of a habit: a local time of day ("HH:MM") on its days.
public struct Reminder: Equatable, Sendable {
    public let id: UUID
    public let templateID: UUID
    public let time: String
    public let days: ReminderDays
    public let createdAt: PostgresTimestamp
    public let updatedAt: PostgresTimestamp

    public init(id: UUID, templateID: UUID, time: String, days: ReminderDays, createdAt: PostgresTimestamp, updatedAt: PostgresTimestamp) {
        self.id = id
        self.templateID = templateID
        self.time = time
        self.days = days
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    static let columns = "r.id, r.template_id, to_char(r.local_time, 'HH24:MI'), r.weekdays::integer, r.created_at, r.updated_at"

    static func decode(_ row: Row) throws -> Reminder {
        Reminder(id: try row.decode(UUID.self, at: 0), templateID: try row.decode(UUID.self, at: 1),
                 time: try row.decode(String.self, at: 2), days: ReminderDays(bits: try row.decode(Int32?.self, at: 3).map(Int.init)),
                 createdAt: try row.decode(PostgresTimestamp.self, at: 4), updatedAt: try row.decode(PostgresTimestamp.self, at: 5))
    }
}

/// What reminders.set asks for: a time and days.
public struct ReminderSpec: Equatable, Sendable {
    public let time: String
    public let days: ReminderDays
    public init(time: String, days: ReminderDays) {
        self.time = time
        self.days = days
    }
}

/// A reminder on a local date, as the sender sees it.
public struct ReminderFiring: Equatable, Sendable {
    /// "<reminder id>/<YYYY-MM-DD>", the local date it fires on.
    public let firingID: String
    public let userID: UUID
    public let templateID: UUID
    public let reminderID: UUID
    public let fireAt: PostgresTimestamp
    public let localDate: CalendarDate
    /// "HH:MM", the reminder's local time (a skipped time fires at the gap's end all the same).
    public let localTime: String
    /// The habit's day the firing belongs to (the local date less the user's day start).
    public let habitDay: CalendarDate
    public let name: String
    /// A claim's lease end; nil in a window's answer.
    public let leaseUntil: PostgresTimestamp?

    static let columns = "f.firing_id, f.user_id, f.template_id, f.reminder_id, f.fire_at, f.local_date, to_char(f.local_time, 'HH24:MI'), f.habit_day, f.name"

    static func decode(_ row: Row, lease: Bool) throws -> ReminderFiring {
        ReminderFiring(firingID: try row.decode(String.self, at: 0), userID: try row.decode(UUID.self, at: 1),
                       templateID: try row.decode(UUID.self, at: 2), reminderID: try row.decode(UUID.self, at: 3),
                       fireAt: try row.decode(PostgresTimestamp.self, at: 4), localDate: try row.decode(CalendarDate.self, at: 5),
                       localTime: try row.decode(String.self, at: 6), habitDay: try row.decode(CalendarDate.self, at: 7),
                       name: try row.decode(String.self, at: 8),
                       leaseUntil: lease ? try row.decode(PostgresTimestamp.self, at: 9) : nil)
    }
}

extension HabitRepository {
    /// The most reminders a habit has (the table's trigger keeps it for every writer: HB001).
    public static let maxRemindersPerHabit = 24

    /// Replaces the reminders of `template` (sql `habit.set_reminders`): unchanged ones keep
    /// their ids (their firings already sent are not sent again). `notFound` when the habit is
    /// not the user's.
    public func setReminders(user: UUID, template: UUID, reminders: [ReminderSpec]) throws -> [Reminder] {
        guard reminders.count <= Self.maxRemindersPerHabit else {
            throw StoreError.invalidInput(field: "reminders", reason: .tooMany, message: "at most \(Self.maxRemindersPerHabit) reminders a habit")
        }
        // Two parallel lists as text (arrays are not bound: PostgresCoding), split in SQL.
        let times = reminders.map(\.time).joined(separator: ",")
        let days = reminders.map { $0.days.bits.map(String.init) ?? "" }.joined(separator: ",")
        let rows = try scope.query(as: user, """
            SELECT \(unsafeSQL: Reminder.columns)
            FROM habit.set_reminders(\(user), \(template), string_to_array(\(times), ',')::time[],
                                     string_to_array(\(days), ',', '')::smallint[]) r
            """)
        if rows.isEmpty {
            // No reminder left: the habit is the user's with none, or not the user's at all.
            let owned = try scope.query(as: user, "SELECT 1 FROM public.habit_templates WHERE id = \(template) AND user_id = \(user)")
            guard !owned.isEmpty else { throw StoreError.notFound }
            return []
        }
        return try rows.map(Reminder.decode)
    }

    /// A page of the user's reminders (of one habit, when given), by habit, time, then days
    /// (every due day first). `notFound` for a habit that is not the user's.
    public func reminders(user: UUID, template: UUID?, page: PageRequest<ReminderSortKey> = PageRequest(limit: 1_000)) throws -> Page<Reminder> {
        let after = ReminderSortKey.bounds(page.after)
        // A plain range of the user's reminders: the same read with the habit's check joined in
        // (a LEFT JOIN LATERAL beside a one-row subquery) crashed the Citus 13.2 coordinator
        // (signal 11). A page without rows asks, for a habit, whether it is the user's.
        let rows = try scope.query(as: user, """
            SELECT \(unsafeSQL: Reminder.columns) FROM public.habit_reminders r
            WHERE r.user_id = \(user) AND (\(template)::uuid IS NULL OR r.template_id = \(template))
              AND (r.template_id, r.local_time, coalesce(r.weekdays, 0)) > (\(after.templateID), \(after.time)::time, \(after.weekdays))
            ORDER BY r.template_id, r.local_time, coalesce(r.weekdays, 0)
            LIMIT \(page.fetchLimit)
            """)
        if let template, rows.isEmpty {
            let owned = try scope.query(as: user, "SELECT 1 FROM public.habit_templates WHERE id = \(template) AND user_id = \(user)")
            guard !owned.isEmpty else { throw StoreError.notFound }
        }
        return Page(fetched: try rows.map(Reminder.decode), request: page)
    }
}

/// Where a reminder sorts in `reminders.list`: its habit, its local time, its days (every due day,
/// stored NULL, first; then the weekday bit set). Unique per user (habit_reminders_habit_time_key).
public struct ReminderSortKey: Sendable, Equatable {
    public var templateID: UUID
    /// "HH:MM".
    public var time: String
    /// The stored bit set, 0 for every due day.
    public var weekdays: Int

    public init(templateID: UUID, time: String, weekdays: Int) {
        self.templateID = templateID
        self.time = time
        self.weekdays = weekdays
    }

    public init(_ reminder: Reminder) {
        self.init(templateID: reminder.templateID, time: reminder.time, weekdays: reminder.days.bits ?? 0)
    }

    /// Whether `text` is a reminder's "HH:MM" (00:00–23:59), as a page cursor must carry it.
    public static func isTime(_ text: String) -> Bool {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isASCII) }),
              let hours = Int(parts[0]), let minutes = Int(parts[1]) else { return false }
        return (0...23).contains(hours) && (0...59).contains(minutes)
    }

    /// Before every reminder when nil.
    static func bounds(_ key: ReminderSortKey?) -> (templateID: UUID, time: String, weekdays: Int) {
        guard let key else { return (.zero, "00:00", -1) }
        return (key.templateID, key.time, key.weekdays)
    }
}

/// The push sender's side: not a user's, run as the login role (the functions are SECURITY
/// DEFINER, granted to habit_worker and service_role), one statement each under the store's
/// statement timeout.
public struct ReminderSender {
    public let connection: Connection
    public let settings: StoreSettings

    public init(connection: Connection, settings: StoreSettings = StoreSettings()) {
        self.connection = connection
        self.settings = settings
    }

    /// The firings in [from, to), earliest first; `more` when there are more than `limit`
    /// (claim these, and ask again: claimed and acknowledged firings are left out).
    public func due(from: PostgresTimestamp, to: PostgresTimestamp, limit: Int) throws -> (firings: [ReminderFiring], more: Bool) {
        let rows = try run("""
            SELECT \(unsafeSQL: ReminderFiring.columns) FROM habit.reminders_due(\(from), \(to), \(limit + 1)::integer) f
            """)
        let firings = try rows.prefix(limit).map { try ReminderFiring.decode($0, lease: false) }
        return (firings, rows.count > limit)
    }

    /// Claims the firings for `leaseMilliseconds`; returns those now held by `sender`.
    public func claim(firingIDs: [String], leaseMilliseconds: Int, sender: String?) throws -> [ReminderFiring] {
        let rows = try run("""
            SELECT \(unsafeSQL: ReminderFiring.columns), f.lease_until
            FROM habit.claim_reminder_firings(string_to_array(\(Self.idList(firingIDs)), ','),
                                              \(leaseMilliseconds) * interval '1 millisecond', \(sender)) f
            """)
        return try rows.map { try ReminderFiring.decode($0, lease: true) }
    }

    /// Acknowledges firings as sent; returns those this call acknowledged.
    public func ack(firingIDs: [String]) throws -> [String] {
        try run("""
            SELECT f.firing_id FROM habit.ack_reminder_firings(string_to_array(\(Self.idList(firingIDs)), ',')) f
            """).map { try $0.decode(String.self, at: 0) }
    }

    /// The ids as one text bound once, split in SQL (arrays are not bound: PostgresCoding); a
    /// firing id holds no comma (the worker checks its shape first).
    static func idList(_ ids: [String]) -> String { ids.joined(separator: ",") }

    private func run(_ statement: Query) throws -> [Row] {
        do {
            return try connection.withTransaction(prelude: [
                "SELECT set_config('statement_timeout', \(String(settings.statementTimeoutMilliseconds)), true)",
            ]) { connection in
                try connection.query(statement)
            }
        } catch {
            throw StoreError.mapping(error)
        }
    }
}
