import Foundation
import PostgresClient

/// What a pull reports each synced row as, in the order of a page within one change number:
/// the rank of the cursor's `(seq, rank, key)` (sql/functions/sync.sql, docs/schema.md "Sync").
public enum SyncKind: Int, CaseIterable, Sendable {
    case profile = 0, areas, habits, periods, completions, skips, lists, tasks, checkins, notes, reminders

    /// The kind's name in habit.sync_tombstones.kind.
    public var name: String {
        switch self {
        case .profile: "profile"
        case .areas: "areas"
        case .habits: "habits"
        case .periods: "periods"
        case .completions: "completions"
        case .skips: "skips"
        case .lists: "lists"
        case .tasks: "tasks"
        case .checkins: "checkins"
        case .notes: "notes"
        case .reminders: "reminders"
        }
    }

    /// The rank after every kind: a caught-up cursor is `(S, caughtUpRank, "")`.
    static let caughtUpRank = 11
}

/// A habit and a calendar date: the key of a completion or a skip (`<template_id>/<YYYY-MM-DD>`).
public struct DayKey: Sendable, Hashable {
    public var templateID: UUID
    public var date: CalendarDate

    public init(templateID: UUID, date: CalendarDate) {
        self.templateID = templateID
        self.date = date
    }

    /// `<template_id>/<YYYY-MM-DD>` with the id lowercase, as habit.sync_key writes it.
    var key: String { "\(templateID.lowercaseString)/\(date)" }

    init?(key: String) {
        let parts = key.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let id = UUID(canonicalLowercase: String(parts[0])),
              let date = CalendarDate(iso8601: String(parts[1])), date.description == parts[1] else { return nil }
        self.init(templateID: id, date: date)
    }
}

/// A completion as a pull sends it (public.habit_completions: the day key and when it was recorded).
public struct SyncCompletion: Sendable, Equatable {
    public var templateID: UUID
    public var date: CalendarDate
    public var createdAt: PostgresTimestamp

    public init(templateID: UUID, date: CalendarDate, createdAt: PostgresTimestamp) {
        self.templateID = templateID
        self.date = date
        self.createdAt = createdAt
    }
}

/// A habit's note on a day as a pull sends it (public.habit_day_notes; its key is the day's).
public struct SyncNote: Sendable, Equatable {
    public var day: DayKey
    public var note: String
    public var updatedAt: PostgresTimestamp
}

/// A period of activity as a pull sends it: `HabitPeriod` (what habits.history returns) with the
/// period's own id (its sync key, and what a deletion names) and its habit.
public struct SyncPeriod: Sendable, Equatable {
    public var id: UUID
    public var templateID: UUID
    public var period: HabitPeriod

    public init(id: UUID, templateID: UUID, period: HabitPeriod) {
        self.id = id
        self.templateID = templateID
        self.period = period
    }

    static let columns = "id, template_id, started_at, ended_at, schedule"

    init(row: Row) throws {
        id = try row.decode(UUID.self, "id")
        templateID = try row.decode(UUID.self, "template_id")
        period = HabitPeriod(startedAt: try row.decode(PostgresTimestamp.self, "started_at"),
                             endedAt: try row.decode(PostgresTimestamp?.self, "ended_at"),
                             schedule: try HabitSchedule(storedJSON: row.decode(JSONB.self, "schedule").text))
    }
}

/// The keys deleted since the cursor (habit.sync_tombstones).
public struct SyncDeletions: Sendable, Equatable {
    public var profile = false
    public var areas: [UUID] = []
    public var habits: [UUID] = []
    public var periods: [UUID] = []
    public var completions: [DayKey] = []
    public var skips: [DayKey] = []
    public var lists: [UUID] = []
    public var tasks: [UUID] = []
    public var checkins: [UUID] = []
    public var notes: [DayKey] = []
    public var reminders: [UUID] = []

    public init() {}

    public var isEmpty: Bool {
        !profile && areas.isEmpty && habits.isEmpty && periods.isEmpty && completions.isEmpty && skips.isEmpty && lists.isEmpty && tasks.isEmpty
            && checkins.isEmpty && notes.isEmpty && reminders.isEmpty
    }
}

/// One answer of `SyncRepository.pull`: the rows written and the keys deleted after the
/// cursor, each at most once, and the cursor to continue from.
public struct SyncPage: Sendable {
    public var profile: Profile?
    public var areas: [Area] = []
    public var habits: [Habit] = []
    public var periods: [SyncPeriod] = []
    public var completions: [SyncCompletion] = []
    /// A skip is its key (public.habit_skips has no other field a client shows).
    public var skips: [DayKey] = []
    public var lists: [TaskList] = []
    public var tasks: [TaskItem] = []
    public var checkins: [Checkin] = []
    public var notes: [SyncNote] = []
    public var reminders: [Reminder] = []
    public var deleted = SyncDeletions()
    public var cursor: SyncCursor
    /// More changes follow: pull again with `cursor`.
    public var hasMore: Bool

    public init(cursor: SyncCursor, hasMore: Bool) {
        self.cursor = cursor
        self.hasMore = hasMore
    }

    /// Rows and deletions in the page.
    public var count: Int {
        (profile == nil ? 0 : 1) + areas.count + habits.count + periods.count + completions.count + skips.count + lists.count + tasks.count
            + checkins.count + notes.count + reminders.count
            + (deleted.profile ? 1 : 0) + deleted.areas.count + deleted.habits.count + deleted.periods.count + deleted.completions.count
            + deleted.skips.count + deleted.lists.count + deleted.tasks.count + deleted.checkins.count + deleted.notes.count + deleted.reminders.count
    }
}

/// A position in one user's change order, opaque to clients: everything at or before
/// `(seq, rank, key)` has been sent. `freshUpto`: the clock when the walk began without a cursor;
/// tombstones numbered at or below it are not sent (the client never had those rows).
/// `issuedAt`: Unix seconds when the cursor was handed out (a cursor older than the retention
/// has expired). Text: `v4.` + base64url (no padding) of `<seq>.<rank>.<key>.<fresh_upto>.<issued>`.
/// `v1.` cursors come from before check-ins and notes were pulled (issue 32), `v2.` from before
/// reminders were and `v3.` from before areas were (issue 33): their holders never received
/// those rows, so such a cursor has expired (the client pulls from scratch).
public struct SyncCursor: Sendable, Hashable, CustomStringConvertible {
    public let seq: Int64
    public let rank: Int
    public let key: String
    public let freshUpto: Int64
    public let issuedAt: Int64

    init(seq: Int64, rank: Int, key: String, freshUpto: Int64, issuedAt: Int64) {
        self.seq = seq
        self.rank = rank
        self.key = key
        self.freshUpto = freshUpto
        self.issuedAt = issuedAt
    }

    /// Everything numbered up to `seq` consumed.
    static func caughtUp(seq: Int64, issuedAt: Int64) -> SyncCursor {
        SyncCursor(seq: seq, rank: SyncKind.caughtUpRank, key: "", freshUpto: seq, issuedAt: issuedAt)
    }

    var isCaughtUp: Bool { rank == SyncKind.caughtUpRank }

    private static let prefix = "v4."
    /// Before check-ins and notes: ranks 0–6 for the kinds up to tasks, 7 for caught up; before
    /// reminders: 0–8, 9 for caught up; before areas (rank 1 since): 0–9, 10 for caught up.
    private static let legacyCursors = [(prefix: "v1.", caughtUpRank: 7), (prefix: "v2.", caughtUpRank: 9),
                                        (prefix: "v3.", caughtUpRank: 10)]

    /// Reads a cursor's text; anything this code did not write is `invalidCursor`, and a
    /// well-formed `v1.` cursor (one this service wrote before) `cursorExpired`.
    public init(text: String) throws(StoreError) {
        for legacy in Self.legacyCursors
        where Self.fields(text, prefix: legacy.prefix, caughtUpRank: legacy.caughtUpRank, legacy: true) != nil {
            throw StoreError.cursorExpired
        }
        guard let fields = Self.fields(text, prefix: Self.prefix, caughtUpRank: SyncKind.caughtUpRank) else { throw StoreError.invalidCursor }
        self.init(seq: fields.seq, rank: fields.rank, key: fields.key, freshUpto: fields.freshUpto, issuedAt: fields.issuedAt)
    }

    /// The fields of a cursor text with `prefix` whose ranks end at `caughtUpRank`; nil for
    /// anything else.
    private static func fields(_ text: String, prefix: String, caughtUpRank: Int, legacy: Bool = false)
        -> (seq: Int64, rank: Int, key: String, freshUpto: Int64, issuedAt: Int64)? {
        guard text.hasPrefix(prefix), text.count <= 200,
              let decoded = Data(base64URL: String(text.dropFirst(prefix.count))),
              let plain = String(data: decoded, encoding: .utf8) else { return nil }
        let fields = plain.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 5, let seq = Int64(fields[0]), let rank = Int(fields[1]),
              let freshUpto = Int64(fields[3]), let issuedAt = Int64(fields[4]),
              seq >= -1, (0...caughtUpRank).contains(rank), freshUpto >= 0, issuedAt >= 0,
              rank == caughtUpRank ? fields[2].isEmpty : legacy ? isLegacyKey(fields[2]) : isValidKey(fields[2], rank: rank)
        else { return nil }
        return (seq, rank, fields[2], freshUpto, issuedAt)
    }

    public var text: String {
        Self.prefix + Data("\(seq).\(rank).\(key).\(freshUpto).\(issuedAt)".utf8).base64URLEncodedString()
    }

    public var description: String { text }

    /// The key a position of `rank` has: none for the profile and for "caught up", an id, or a day key.
    private static func isValidKey(_ key: String, rank: Int) -> Bool {
        switch SyncKind(rawValue: rank) {
        case nil, .profile: key.isEmpty
        case .completions, .skips, .notes: DayKey(key: key) != nil
        case .areas, .habits, .periods, .lists, .tasks, .checkins, .reminders: UUID(canonicalLowercase: key) != nil
        }
    }

    /// A key of an older cursor, whose ranks named other kinds: any key a position has.
    private static func isLegacyKey(_ key: String) -> Bool {
        key.isEmpty || DayKey(key: key) != nil || UUID(canonicalLowercase: key) != nil
    }
}

extension UUID {
    /// A UUID from exactly its lowercase text (the form PostgreSQL's uuid::text writes).
    init?(canonicalLowercase text: String) {
        guard let id = UUID(uuidString: text), id.lowercaseString == text else { return nil }
        self = id
    }
}

extension Data {
    /// base64url (RFC 4648 §5) without padding.
    func base64URLEncodedString() -> String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Reads base64url without padding; nil for anything else (padding, `+`, `/`, bad length).
    init?(base64URL text: String) {
        guard text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }),
              text.count % 4 != 1 else { return nil }
        let standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        self.init(base64Encoded: standard + String(repeating: "=", count: (4 - standard.count % 4) % 4))
    }
}
