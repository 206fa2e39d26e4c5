import Foundation
import PostgresClient

/// A habit as the account document holds it: the fields the user sets and its periods, oldest
/// first (is_active, activated_at, deactivated_at and schedule follow from the periods).
public struct AccountHabit: Sendable, Equatable {
    public var id: UUID
    public var name: String
    public var icon: String?
    public var color: String?
    public var sortOrder: Int?
    public var createdAt: PostgresTimestamp
    public var updatedAt: PostgresTimestamp
    public var periods: [HabitPeriod]
    /// Kind and target (sql/0029).
    public var measure: HabitMeasure = .boolean
    /// When it was archived (sql/0035); nil while not.
    public var archivedAt: PostgresTimestamp? = nil
    /// Its area (sql/0037): one of the document's areas, or nil for none.
    public var areaID: UUID? = nil
}

/// An area as the account document holds it (sql/0037): its id, name and place in the order.
public struct AccountArea: Sendable, Equatable {
    public var id: UUID
    public var name: String
    public var sortOrder: Int?
}

/// A check-in as the account document holds it (its client id, a device's retry key, is not
/// content and stays out).
public struct AccountCheckin: Sendable, Equatable {
    public var id: UUID
    public var templateID: UUID
    public var date: CalendarDate
    public var value: DecimalValue
    public var time: String?
}

/// A note of a habit's day as the account document holds it.
public struct AccountNote: Sendable, Equatable {
    public var templateID: UUID
    public var date: CalendarDate
    public var note: String
}

/// A reminder as the account document holds it (sql/0036): its id, habit, time and days.
public struct AccountReminder: Sendable, Equatable {
    public var id: UUID
    public var templateID: UUID
    public var time: String
    public var days: ReminderDays
}

/// The sections of the account document after the header. An export cursor names the section
/// it stopped in by its raw value, which never changes (check-ins and notes came last, sql/0029,
/// then reminders, sql/0036, then areas, sql/0037: earlier cursors keep their meaning); the
/// document's order is `documentOrder`, where areas come before the habits that name them.
public enum AccountSection: Int, CaseIterable, Sendable {
    case profile, habits, completions, skips, lists, tasks, checkins, notes, reminders, areas

    /// The sections in the order the document holds them.
    public static let documentOrder: [AccountSection] = [.profile, .areas, .habits, .completions, .skips, .lists, .tasks, .checkins, .notes, .reminders]

    /// The section after this one in the document; nil after the last.
    public var next: AccountSection? {
        guard let index = Self.documentOrder.firstIndex(of: self), index + 1 < Self.documentOrder.count else { return nil }
        return Self.documentOrder[index + 1]
    }
}

/// Where a paged export stopped: the section, the last key written in it (a uuid, or
/// `<uuid>/<YYYY-MM-DD>` for completions and skips; "" before the first), the user's sync clock
/// when the walk began (a page taken after any write of the user refuses to continue:
/// `StoreError.exportChanged`) and the walk's `exported_at`. Opaque to clients:
/// `e1.<section>.<clock>.<exported_at µs>.<key>`.
public struct ExportCursor: Sendable, Equatable {
    public var section: AccountSection
    public var key: String
    public var clock: Int64
    public var exportedAt: PostgresTimestamp

    public init(section: AccountSection, key: String, clock: Int64, exportedAt: PostgresTimestamp) {
        self.section = section
        self.key = key
        self.clock = clock
        self.exportedAt = exportedAt
    }

    public var text: String {
        "e1.\(section.rawValue).\(clock).\(exportedAt.microsecondsSincePostgresEpoch).\(key)"
    }

    public init(text: String) throws {
        let parts = text.split(separator: ".", maxSplits: 4, omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0] == "e1", let rank = Int(parts[1]), let section = AccountSection(rawValue: rank),
              let clock = Int64(parts[2]), clock >= 0, let micros = Int64(parts[3]) else { throw StoreError.invalidCursor }
        let key = String(parts[4])
        switch section {
        case .profile: guard key.isEmpty else { throw StoreError.invalidCursor }
        case .completions, .skips, .notes: guard key.isEmpty || DayKey(key: key) != nil else { throw StoreError.invalidCursor }
        case .habits, .lists, .tasks, .checkins, .reminders, .areas: guard key.isEmpty || UUID(uuidString: key) != nil else { throw StoreError.invalidCursor }
        }
        self.init(section: section, key: key, clock: clock, exportedAt: PostgresTimestamp(microsecondsSincePostgresEpoch: micros))
    }
}

/// One page of an export: the document's header (`exported_at`, and the profile on the first
/// page only) and the next slice of each array. Concatenating the pages' arrays gives the
/// whole document.
public struct AccountExportPage: Sendable, Equatable {
    public var exportedAt: PostgresTimestamp
    /// Whether this page carries the profile member (the first page does; it may be null).
    public var includesProfile = false
    public var profile: Profile?
    public var areas: [AccountArea] = []
    public var habits: [AccountHabit] = []
    public var completions: [DayKey] = []
    public var skips: [DayKey] = []
    public var lists: [TaskList] = []
    public var tasks: [TaskItem] = []
    public var checkins: [AccountCheckin] = []
    public var notes: [AccountNote] = []
    public var reminders: [AccountReminder] = []
    /// Where the next page starts; nil when this page ends the document.
    public var cursor: ExportCursor?
    public var hasMore: Bool { cursor != nil }

    public var itemCount: Int {
        (includesProfile ? 1 : 0) + areas.count + habits.count + completions.count + skips.count + lists.count + tasks.count + checkins.count
            + notes.count + reminders.count
    }
}

/// `merge`: write the document's rows, keep the user's others. `replace`: afterwards the user's
/// rows are the document's.
public enum ImportMode: String, CaseIterable, Sendable {
    case merge, replace
}

/// What an import did, per kind of row.
public struct ImportCounts: Sendable, Equatable {
    public var inserted = 0
    public var updated = 0
    public var deleted = 0
    public var unchanged = 0
    public init(inserted: Int = 0, updated: Int = 0, deleted: Int = 0, unchanged: Int = 0) {
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
        self.unchanged = unchanged
    }
}

/// An import's answer: counts per kind (profile, areas, habits, completions, skips, lists, tasks,
/// checkins, notes, reminders, in that order) and warnings (the Loop converter's; our own format has none).
public struct ImportReport: Sendable, Equatable {
    public var counts: [(kind: String, counts: ImportCounts)]
    public var warnings: [String]

    public static func == (lhs: ImportReport, rhs: ImportReport) -> Bool {
        lhs.warnings == rhs.warnings && lhs.counts.map(\.kind) == rhs.counts.map(\.kind) && lhs.counts.map(\.counts) == rhs.counts.map(\.counts)
    }

    /// Whether the import wrote nothing.
    public var changedNothing: Bool {
        counts.allSatisfy { $0.counts.inserted == 0 && $0.counts.updated == 0 && $0.counts.deleted == 0 }
    }
}
