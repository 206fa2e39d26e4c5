import Foundation
import PostgresClient

/// Pulls of a user's changes in the user's change order (sql/functions/sync.sql; docs/schema.md, "Sync").
///
/// A page is the next `limit` items — rows and tombstones — after the cursor in
/// `(change_seq, rank, key)` order, read in one REPEATABLE READ snapshot together with the
/// user's clock. Every row is sent as it is in that snapshot; a row changed between two pages
/// comes again later in the walk (its change_seq grew), so the walk ends equal to the database.
public struct SyncRepository {
    let scope: UserScope

    /// Most items (rows and deletions) in one page.
    public static let maxLimit = 10_000

    public init(connection: Connection, settings: StoreSettings = StoreSettings()) {
        scope = UserScope(connection: connection, settings: settings)
    }

    /// The changes of `user` after `cursor` (nil: the user's whole state), at most `limit` items.
    /// A caught-up cursor with nothing new costs one statement (one index probe of
    /// habit.sync_clocks) and comes back at the same position; otherwise one REPEATABLE READ
    /// transaction. `retention`: a cursor issued longer ago than this has expired.
    public func pull(user: UUID, cursor: SyncCursor?, limit: Int, retention: Duration) throws -> SyncPage {
        guard (1...Self.maxLimit).contains(limit) else {
            throw StoreError.invalidInput(field: "limit", reason: .outOfRange, message: "limit must be 1 to \(Self.maxLimit)")
        }
        let now = Self.unixNow()
        if let cursor, cursor.issuedAt < now - retention.components.seconds {
            throw StoreError.cursorExpired
        }
        if let cursor, cursor.isCaughtUp {
            let clock = try SyncClock(rows: scope.query(as: user, Self.clockStatement(user: user)))
            try clock.check(cursor)
            if cursor.seq == clock.seq {
                return SyncPage(cursor: .caughtUp(seq: clock.seq, issuedAt: now), hasMore: false)
            }
        }
        return try scope.transaction(as: user, isolation: .repeatableReadOnly) { connection in
            let clock = try SyncClock(rows: connection.query(Self.clockStatement(user: user)))
            let start: SyncCursor
            if let cursor {
                try clock.check(cursor)
                start = cursor
            } else {
                start = SyncCursor(seq: -1, rank: SyncKind.profile.rawValue, key: "", freshUpto: clock.seq, issuedAt: now)
            }
            return try Self.page(connection, user: user, after: start, limit: limit, clock: clock, now: now)
        }
    }

    /// The caught-up cursor at `seq` (a `changes` notification's number): everything numbered up
    /// to `seq` consumed.
    public func cursor(user: UUID, seq: Int64) -> SyncCursor {
        .caughtUp(seq: seq, issuedAt: Self.unixNow())
    }

    /// The caught-up cursor at the user's clock now (after a push: its changes are included).
    public func currentCursor(user: UUID) throws -> SyncCursor {
        let clock = try SyncClock(rows: scope.query(as: user, Self.clockStatement(user: user)))
        return .caughtUp(seq: clock.seq, issuedAt: Self.unixNow())
    }

    /// The caught-up cursor at the user's clock after a push, in the statement that keeps the
    /// user's replay records within their caps (`habit.prune_replay_records`, when `prune`):
    /// one round trip for both. The prune deletes replay records only, so the clock it reads
    /// is the one after the push either way.
    public func cursorAfterPush(user: UUID, prune: Bool) throws -> SyncCursor {
        guard prune else { return try currentCursor(user: user) }
        let rows = try scope.query(as: user, """
            SELECT coalesce(c.seq, 0) AS seq, coalesce(c.pruned_through, 0) AS pruned_through
            FROM (SELECT habit.prune_replay_records(\(user))) AS pruned
            LEFT JOIN habit.sync_clocks c ON c.user_id = \(user)
            """)
        return .caughtUp(seq: try SyncClock(rows: rows).seq, issuedAt: Self.unixNow())
    }

    /// The caught-up cursors of `users` at their clocks now: one transaction per user, as that
    /// user, all in one round trip (the change listener, checking notifications). A failure of
    /// one user's statement is that user's result; losing the connection throws.
    public func currentCursors(users: [UUID]) throws -> [Result<SyncCursor, Error>] {
        guard !users.isEmpty else { return [] }
        let now = Self.unixNow()
        return try scope.queries(users.map { ($0, Self.clockStatement(user: $0)) }).map { result in
            result.flatMap { rows in Result { .caughtUp(seq: try SyncClock(rows: rows).seq, issuedAt: now) } }
        }
    }

    /// The payload of each user's `habit_changes` notifications (`habit.change_token`, sql/0025:
    /// a random token, never the user id; the user's clock row is made at 0 if missing), as
    /// that user, all in one round trip. Failures as in `currentCursors`.
    public func changeTokens(users: [UUID]) throws -> [Result<UUID, Error>] {
        guard !users.isEmpty else { return [] }
        return try scope.queries(users.map { ($0, "SELECT habit.change_token(\($0))") }).map { result in
            result.flatMap { rows in
                Result {
                    guard let row = rows.first else { throw StoreError.notFound }
                    return try row.decode(UUID.self, at: 0)
                }
            }
        }
    }

    /// The clocks among `tokens` (notification tokens, `changeTokens`) whose change number is
    /// past the paired `known` one (nil: any), as (token, seq): the change listener's poll
    /// (`habit.changed_clocks`, sql/0026). One statement for all of them, run as the login role
    /// (habit_worker), not as a user: a token is the capability, handed to the user's own role.
    public func changedClocks(_ tokens: [(token: UUID, known: Int64?)]) throws -> [(token: UUID, seq: Int64)] {
        guard !tokens.isEmpty else { return [] }
        let tokenList = "{" + tokens.map { $0.token.uuidString.lowercased() }.joined(separator: ",") + "}"
        let knownList = "{" + tokens.map { $0.known.map(String.init) ?? "NULL" }.joined(separator: ",") + "}"
        return try scope.connection.query(
            "SELECT token, seq FROM habit.changed_clocks(\(tokenList)::uuid[], \(knownList)::bigint[])"
        ).map { (try $0.decode(UUID.self, at: 0), try $0.decode(Int64.self, at: 1)) }
    }

    static func unixNow() -> Int64 { Int64(Date().timeIntervalSince1970.rounded(.down)) }

    static func clockStatement(user: UUID) -> Query {
        "SELECT seq, pruned_through FROM habit.sync_clocks WHERE user_id = \(user)"
    }

    // MARK: - One page

    private static func page(_ connection: Connection, user: UUID, after start: SyncCursor, limit: Int,
                             clock: SyncClock, now: Int64) throws -> SyncPage {
        let positions = try connection.query(positionsStatement(user: user, after: start, fetch: limit + 1)).map(SyncPosition.init)
        let hasMore = positions.count > limit
        let items = positions.prefix(limit)
        let end: SyncCursor
        if hasMore, let last = items.last {
            end = SyncCursor(seq: last.seq, rank: last.kind.rawValue, key: last.key, freshUpto: start.freshUpto, issuedAt: now)
        } else {
            end = .caughtUp(seq: clock.seq, issuedAt: now)
        }
        var page = SyncPage(cursor: end, hasMore: hasMore)
        var live = Set<SyncKind>()
        for item in items {
            guard item.deleted else {
                live.insert(item.kind)
                continue
            }
            try page.deleted.add(item)
        }
        // The rows of each kind in the page: exactly those between the two positions, read in
        // the same snapshot as the positions.
        for kind in SyncKind.allCases where live.contains(kind) {
            let rows = try connection.query(rowsStatement(kind, user: user, after: start, through: end))
            switch kind {
            case .profile: page.profile = try rows.first.map { try HabitRepository.profile(user: user, $0) }
            case .areas: page.areas = try rows.map { try Area(row: $0) }
            case .habits: page.habits = try rows.map { try Habit(row: $0) }
            case .periods: page.periods = try rows.map { try SyncPeriod(row: $0) }
            case .completions:
                page.completions = try rows.map { row in
                    SyncCompletion(templateID: try row.decode(UUID.self, "template_id"),
                                   date: try row.decode(CalendarDate.self, "completed_date"),
                                   createdAt: try row.decode(PostgresTimestamp.self, "created_at"))
                }
            case .skips:
                page.skips = try rows.map { DayKey(templateID: try $0.decode(UUID.self, "template_id"), date: try $0.decode(CalendarDate.self, "skipped_date")) }
            case .lists: page.lists = try rows.map { try TaskList(row: $0) }
            case .tasks: page.tasks = try rows.map { try TaskItem(row: $0) }
            case .checkins:
                page.checkins = try rows.map { row in
                    Checkin(id: try row.decode(UUID.self, "id"), templateID: try row.decode(UUID.self, "template_id"),
                            date: try row.decode(CalendarDate.self, "checkin_date"),
                            value: try DecimalValue(row.decode(PostgresNumeric.self, "value")),
                            time: try row.decode(String?.self, "at_time").map(HabitRepository.shortTime),
                            clientID: try row.decode(String?.self, "client_id"), createdAt: try row.decode(PostgresTimestamp.self, "created_at"))
                }
            case .notes:
                page.notes = try rows.map { row in
                    SyncNote(day: DayKey(templateID: try row.decode(UUID.self, "template_id"), date: try row.decode(CalendarDate.self, "note_date")),
                             note: try row.decode(String.self, "note"), updatedAt: try row.decode(PostgresTimestamp.self, "updated_at"))
                }
            case .reminders: page.reminders = try rows.map(Reminder.decode)
            }
        }
        return page
    }

    /// The next `fetch` positions after `start`: each kind's rows (by its (user_id, change_seq,
    /// key) index, at most `fetch` of each) and the tombstones newer than the walk's freshUpto,
    /// merged in (change_seq, rank, key) order. Keys compare byte-wise (COLLATE "C"): a uuid's
    /// lowercase text orders like the uuid, `<uuid>/<YYYY-MM-DD>` like (uuid, date).
    private static func positionsStatement(user: UUID, after start: SyncCursor, fetch: Int) -> Query {
        let profile = KeyBound(.profile, start), areas = KeyBound(.areas, start)
        let habits = KeyBound(.habits, start), periods = KeyBound(.periods, start)
        let completions = KeyBound(.completions, start), skips = KeyBound(.skips, start)
        let lists = KeyBound(.lists, start), tasks = KeyBound(.tasks, start)
        let checkins = KeyBound(.checkins, start), notes = KeyBound(.notes, start), reminders = KeyBound(.reminders, start)
        return """
            SELECT change_seq, rank, key, deleted FROM (
                (SELECT p.change_seq, 0 AS rank, '' AS key, false AS deleted FROM public.profiles p
                 WHERE p.user_id = \(user) AND p.change_seq > \(profile.seq))
                UNION ALL
                (SELECT a.change_seq, 1, a.id::text, false FROM public.habit_areas a
                 WHERE a.user_id = \(user) AND (a.change_seq, a.id) > (\(areas.seq), \(areas.id))
                 ORDER BY a.change_seq, a.id LIMIT \(fetch))
                UNION ALL
                (SELECT h.change_seq, 2, h.id::text, false FROM public.habit_templates h
                 WHERE h.user_id = \(user) AND (h.change_seq, h.id) > (\(habits.seq), \(habits.id))
                 ORDER BY h.change_seq, h.id LIMIT \(fetch))
                UNION ALL
                (SELECT p.change_seq, 3, p.id::text, false FROM public.habit_periods p
                 WHERE p.user_id = \(user) AND (p.change_seq, p.id) > (\(periods.seq), \(periods.id))
                 ORDER BY p.change_seq, p.id LIMIT \(fetch))
                UNION ALL
                (SELECT c.change_seq, 4, c.template_id::text || '/' || to_char(c.completed_date, 'YYYY-MM-DD'), false
                 FROM public.habit_completions c
                 WHERE c.user_id = \(user)
                   AND (c.change_seq, c.template_id, c.completed_date) > (\(completions.seq), \(completions.id), \(completions.date)::date)
                 ORDER BY c.change_seq, c.template_id, c.completed_date LIMIT \(fetch))
                UNION ALL
                (SELECT s.change_seq, 5, s.template_id::text || '/' || to_char(s.skipped_date, 'YYYY-MM-DD'), false
                 FROM public.habit_skips s
                 WHERE s.user_id = \(user)
                   AND (s.change_seq, s.template_id, s.skipped_date) > (\(skips.seq), \(skips.id), \(skips.date)::date)
                 ORDER BY s.change_seq, s.template_id, s.skipped_date LIMIT \(fetch))
                UNION ALL
                (SELECT l.change_seq, 6, l.id::text, false FROM public.task_lists l
                 WHERE l.user_id = \(user) AND (l.change_seq, l.id) > (\(lists.seq), \(lists.id))
                 ORDER BY l.change_seq, l.id LIMIT \(fetch))
                UNION ALL
                (SELECT t.change_seq, 7, t.id::text, false FROM public.tasks t
                 WHERE t.user_id = \(user) AND (t.change_seq, t.id) > (\(tasks.seq), \(tasks.id))
                 ORDER BY t.change_seq, t.id LIMIT \(fetch))
                UNION ALL
                (SELECT i.change_seq, 8, i.id::text, false FROM public.habit_checkins i
                 WHERE i.user_id = \(user) AND (i.change_seq, i.id) > (\(checkins.seq), \(checkins.id))
                 ORDER BY i.change_seq, i.id LIMIT \(fetch))
                UNION ALL
                (SELECT n.change_seq, 9, n.template_id::text || '/' || to_char(n.note_date, 'YYYY-MM-DD'), false
                 FROM public.habit_day_notes n
                 WHERE n.user_id = \(user)
                   AND (n.change_seq, n.template_id, n.note_date) > (\(notes.seq), \(notes.id), \(notes.date)::date)
                 ORDER BY n.change_seq, n.template_id, n.note_date LIMIT \(fetch))
                UNION ALL
                (SELECT r.change_seq, 10, r.id::text, false FROM public.habit_reminders r
                 WHERE r.user_id = \(user) AND (r.change_seq, r.id) > (\(reminders.seq), \(reminders.id))
                 ORDER BY r.change_seq, r.id LIMIT \(fetch))
                UNION ALL
                (SELECT d.change_seq, d.rank, d.key, true
                 FROM (SELECT t.change_seq, \(unsafeSQL: SyncKind.rankSQL(of: "t.kind")) AS rank, t.key
                       FROM habit.sync_tombstones t
                       WHERE t.user_id = \(user) AND t.change_seq >= \(start.seq) AND t.change_seq > \(start.freshUpto)) d
                 WHERE (d.change_seq, d.rank, d.key COLLATE "C") > (\(start.seq), \(start.rank), \(start.key) COLLATE "C")
                 ORDER BY d.change_seq, d.rank, d.key COLLATE "C" LIMIT \(fetch))
            ) page
            ORDER BY change_seq, rank, key COLLATE "C"
            LIMIT \(fetch)
            """
    }

    /// The rows of `kind` after `start` and at or before `end`, in the columns its model reads.
    private static func rowsStatement(_ kind: SyncKind, user: UUID, after start: SyncCursor, through end: SyncCursor) -> Query {
        let from = KeyBound(kind, start), to = KeyBound(kind, end)
        switch kind {
        case .profile:
            return "SELECT \(unsafeSQL: HabitRepository.profileColumns) FROM public.profiles WHERE user_id = \(user) AND change_seq > \(from.seq) AND change_seq <= \(to.seq)"
        case .completions, .skips, .notes:
            let (table, date, columns) = switch kind {
            case .completions: ("public.habit_completions", "completed_date", "template_id, completed_date, created_at")
            case .skips: ("public.habit_skips", "skipped_date", "template_id, skipped_date")
            default: ("public.habit_day_notes", "note_date", "template_id, note_date, note, updated_at")
            }
            return """
                SELECT \(unsafeSQL: columns) FROM \(unsafeSQL: table)
                WHERE user_id = \(user)
                  AND (change_seq, template_id, \(unsafeSQL: date)) > (\(from.seq), \(from.id), \(from.date)::date)
                  AND (change_seq, template_id, \(unsafeSQL: date)) <= (\(to.seq), \(to.id), \(to.date)::date)
                ORDER BY change_seq, template_id, \(unsafeSQL: date)
                """
        case .reminders:
            return """
                SELECT \(unsafeSQL: Reminder.columns) FROM public.habit_reminders r
                WHERE r.user_id = \(user) AND (r.change_seq, r.id) > (\(from.seq), \(from.id)) AND (r.change_seq, r.id) <= (\(to.seq), \(to.id))
                ORDER BY r.change_seq, r.id
                """
        case .areas, .habits, .periods, .lists, .tasks, .checkins:
            let (table, columns) = switch kind {
            case .areas: ("public.habit_areas", Area.columns)
            case .habits: ("public.habit_templates", Habit.columns)
            case .periods: ("public.habit_periods", SyncPeriod.columns)
            case .lists: ("public.task_lists", TaskList.columns)
            case .checkins: ("public.habit_checkins", "id, template_id, checkin_date, value, to_char(at_time, 'HH24:MI:SS') AS at_time, client_id, created_at")
            default: ("public.tasks", TaskItem.columns)
            }
            return """
                SELECT \(unsafeSQL: columns) FROM \(unsafeSQL: table)
                WHERE user_id = \(user) AND (change_seq, id) > (\(from.seq), \(from.id)) AND (change_seq, id) <= (\(to.seq), \(to.id))
                ORDER BY change_seq, id
                """
        }
    }
}

/// The clock row as a pull reads it; a user who never wrote has none (everything is numbered 0).
struct SyncClock {
    let seq: Int64
    let prunedThrough: Int64

    init(rows: [Row]) throws {
        seq = try rows.first?.decode(Int64.self, "seq") ?? 0
        prunedThrough = try rows.first?.decode(Int64.self, "pruned_through") ?? 0
    }

    /// A cursor below what was pruned (or reset) may have missed deletions; one ahead of the
    /// clock comes from a database that has since been restored to an earlier state.
    func check(_ cursor: SyncCursor) throws {
        if max(cursor.seq, cursor.freshUpto) < prunedThrough || cursor.seq > seq || cursor.freshUpto > seq {
            throw StoreError.cursorExpired
        }
    }
}

/// One item of a page: a row or a tombstone at (seq, kind's rank, key).
struct SyncPosition {
    let seq: Int64
    let kind: SyncKind
    let key: String
    let deleted: Bool

    init(row: Row) throws {
        seq = try row.decode(Int64.self, at: 0)
        let rank = try row.decode(Int32.self, at: 1)
        guard let kind = SyncKind(rawValue: Int(rank)) else {
            throw PostgresError(kind: .decoding, message: "unknown sync rank \(rank)")
        }
        self.kind = kind
        key = try row.decode(String.self, at: 2)
        deleted = try row.decode(Bool.self, at: 3)
    }
}

/// The last (change_seq, key) of one kind a position has consumed, as the values of that
/// kind's key columns: `id` for ids; `id` and `date` for day keys (the habit and the date).
/// "Every key of `seq`" is the largest key: the uuid ffffffff-… and the date 'infinity'.
struct KeyBound {
    let seq: Int64
    let id: UUID
    let date: String

    private static let largestID = UUID(uuidString: "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF")!

    init(_ kind: SyncKind, _ position: SyncCursor) {
        if position.rank == kind.rawValue, kind != .profile {
            seq = position.seq
            if let day = DayKey(key: position.key) {
                (id, date) = (day.templateID, day.date.description)
            } else {
                (id, date) = (UUID(uuidString: position.key) ?? Self.largestID, "infinity")
            }
        } else {
            // Before this kind's rank: the kind's rows of position.seq are still to come.
            seq = position.rank < kind.rawValue ? position.seq - 1 : position.seq
            (id, date) = (Self.largestID, "infinity")
        }
    }
}

extension SyncKind {
    /// SQL for the rank of a tombstone's `kind` column.
    static func rankSQL(of column: String) -> String {
        "CASE \(column) " + allCases.map { "WHEN '\($0.name)' THEN \($0.rawValue)" }.joined(separator: " ") + " END"
    }
}

extension SyncDeletions {
    mutating func add(_ item: SyncPosition) throws {
        let malformed = PostgresError(kind: .decoding, message: "malformed \(item.kind.name) tombstone key")
        switch item.kind {
        case .profile: profile = true
        case .completions, .skips, .notes:
            guard let day = DayKey(key: item.key) else { throw malformed }
            switch item.kind {
            case .completions: completions.append(day)
            case .skips: skips.append(day)
            default: notes.append(day)
            }
        case .areas, .habits, .periods, .lists, .tasks, .checkins, .reminders:
            guard let id = UUID(uuidString: item.key) else { throw malformed }
            switch item.kind {
            case .areas: areas.append(id)
            case .reminders: reminders.append(id)
            case .habits: habits.append(id)
            case .periods: periods.append(id)
            case .lists: lists.append(id)
            case .checkins: checkins.append(id)
            default: tasks.append(id)
            }
        }
    }
}
