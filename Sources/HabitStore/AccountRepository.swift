import Foundation
import PostgresClient

/// A user's whole account as one document, "habit-account" version 1 (docs/protocol.md
/// "Accounts"): exported in key order, a page at a time, and imported through
/// `habit.import_account` (sql/functions/accounts.sql), the one place the import's writes and rules live.
///
/// Export consistency: every page is read in one REPEATABLE READ snapshot, and the sections
/// are walked in key order (habits, lists and tasks by id; completions and skips by habit and
/// date). A walk of several transactions (`account.export` pages) is one consistent state
/// because each page compares the user's sync clock (sql/functions/sync.sql: every write of the user takes a
/// new number) with the one the walk began at: a write in between makes the next page fail with
/// `exportChanged`, and the client starts again. A snapshot cannot be shared across
/// transactions on pooled connections, so this is the check. `exportAll` reads every page in
/// one snapshot (the CLI).
public struct AccountRepository {
    let scope: UserScope

    /// Most items (the profile, habits with their periods, completions, skips, lists, tasks) in one page.
    public static let maxLimit = 10_000

    public init(connection: Connection, settings: StoreSettings = StoreSettings()) {
        scope = UserScope(connection: connection, settings: settings)
    }

    // MARK: - Export

    /// The page of `user`'s document after `cursor` (nil: the first page), at most `limit` items.
    public func exportPage(user: UUID, cursor: ExportCursor?, limit: Int) throws -> AccountExportPage {
        guard (1...Self.maxLimit).contains(limit) else {
            throw StoreError.invalidInput(field: "limit", reason: .outOfRange, message: "limit must be 1 to \(Self.maxLimit)")
        }
        return try scope.transaction(as: user, isolation: .repeatableReadOnly) { connection in
            let (clock, now) = try Self.clockAndNow(connection, user: user)
            let start: ExportCursor
            if let cursor {
                guard cursor.clock == clock else { throw StoreError.exportChanged }
                start = cursor
            } else {
                start = ExportCursor(section: .profile, key: "", clock: clock, exportedAt: now)
            }
            return try Self.page(connection, user: user, from: start, limit: limit)
        }
    }

    /// Every page of `user`'s document, `pageSize` items each, read in one snapshot and handed
    /// to `body` one at a time (memory stays at one page).
    public func exportAll(user: UUID, pageSize: Int = 1_000, _ body: (AccountExportPage) throws -> Void) throws {
        try scope.transaction(as: user, isolation: .repeatableReadOnly) { connection in
            let (clock, now) = try Self.clockAndNow(connection, user: user)
            var cursor: ExportCursor? = ExportCursor(section: .profile, key: "", clock: clock, exportedAt: now)
            while let start = cursor {
                let page = try Self.page(connection, user: user, from: start, limit: pageSize)
                try body(page)
                cursor = page.cursor
            }
        }
    }

    static func clockAndNow(_ connection: Connection, user: UUID) throws -> (Int64, PostgresTimestamp) {
        let row = try connection.queryOne("""
            SELECT coalesce((SELECT c.seq FROM habit.sync_clocks c WHERE c.user_id = \(user)), 0)::bigint AS seq,
                   statement_timestamp() AS now
            """)
        return (try row.decode(Int64.self, "seq"), try row.decode(PostgresTimestamp.self, "now"))
    }

    private static let smallestID = UUID(uuidString: "00000000-0000-0000-0000-000000000000")!

    /// The items after `start`, section by section, until `limit` are taken.
    static func page(_ connection: Connection, user: UUID, from start: ExportCursor, limit: Int) throws -> AccountExportPage {
        var page = AccountExportPage(exportedAt: start.exportedAt)
        var room = limit
        var section = start.section
        var key = start.key
        while true {
            // `room + 1` rows tell whether the section goes on past this page.
            let fetch = room + 1
            var taken = 0
            var lastKey = ""
            switch section {
            case .profile:
                let rows = try connection.query("SELECT \(unsafeSQL: HabitRepository.profileColumns) FROM public.profiles WHERE user_id = \(user)")
                page.includesProfile = true
                page.profile = try rows.first.map { try HabitRepository.profile(user: user, $0) }
                taken = 1
            case .areas:
                let after = key.isEmpty ? nil : UUID(uuidString: key)
                let rows = try connection.query("""
                    SELECT id, name, sort_order FROM public.habit_areas
                    WHERE user_id = \(user) AND (\(after)::uuid IS NULL OR id > \(after)::uuid)
                    ORDER BY id LIMIT \(fetch)
                    """)
                let areas = try rows.prefix(room).map { row in
                    AccountArea(id: try row.decode(UUID.self, "id"), name: try row.decode(String.self, "name"),
                                sortOrder: try row.decode(Int32?.self, "sort_order").map(Int.init))
                }
                page.areas += areas
                taken = rows.count
                lastKey = areas.last?.id.lowercaseString ?? ""
            case .habits:
                let after = key.isEmpty ? nil : UUID(uuidString: key)
                let rows = try connection.query("""
                    SELECT id, name, icon, color, sort_order, created_at, updated_at, kind, unit, target, target_type, target_period, archived_at,
                           area_id
                    FROM public.habit_templates
                    WHERE user_id = \(user) AND (\(after)::uuid IS NULL OR id > \(after)::uuid)
                    ORDER BY id LIMIT \(fetch)
                    """)
                var habits = try rows.prefix(room).map { row in
                    AccountHabit(id: try row.decode(UUID.self, "id"), name: try row.decode(String.self, "name"),
                                 icon: try row.decode(String?.self, "icon"), color: try row.decode(String?.self, "color"),
                                 sortOrder: try row.decode(Int32?.self, "sort_order").map(Int.init),
                                 createdAt: try row.decode(PostgresTimestamp.self, "created_at"),
                                 updatedAt: try row.decode(PostgresTimestamp.self, "updated_at"), periods: [],
                                 measure: try HabitMeasure(row: row, at: 7),
                                 archivedAt: try row.decode(PostgresTimestamp?.self, "archived_at"),
                                 areaID: try row.decode(UUID?.self, "area_id"))
                }
                if let first = habits.first, let last = habits.last {
                    // The page's habits' periods: one range scan, in (habit, start) order.
                    let periods = try connection.query("""
                        SELECT template_id, started_at, ended_at, schedule FROM public.habit_periods
                        WHERE user_id = \(user) AND template_id BETWEEN \(first.id) AND \(last.id)
                        ORDER BY template_id, started_at
                        """)
                    var index = 0
                    for row in periods {
                        let template = try row.decode(UUID.self, "template_id")
                        while index < habits.count, habits[index].id != template { index += 1 }
                        guard index < habits.count else { break }
                        habits[index].periods.append(HabitPeriod(
                            startedAt: try row.decode(PostgresTimestamp.self, "started_at"),
                            endedAt: try row.decode(PostgresTimestamp?.self, "ended_at"),
                            schedule: try HabitSchedule(storedJSON: row.decode(JSONB.self, "schedule").text)))
                    }
                }
                page.habits += habits
                taken = rows.count
                lastKey = habits.last?.id.lowercaseString ?? ""
            case .completions, .skips:
                let (table, column) = section == .completions ? ("public.habit_completions", "completed_date") : ("public.habit_skips", "skipped_date")
                let after = DayKey(key: key)
                let rows = try connection.query("""
                    SELECT template_id, \(unsafeSQL: column) AS day FROM \(unsafeSQL: table)
                    WHERE user_id = \(user) AND (template_id, \(unsafeSQL: column)) > (\(after?.templateID ?? smallestID), \(after?.date.description ?? "-infinity")::date)
                    ORDER BY template_id, \(unsafeSQL: column) LIMIT \(fetch)
                    """)
                let days = try rows.prefix(room).map { DayKey(templateID: try $0.decode(UUID.self, "template_id"), date: try $0.decode(CalendarDate.self, "day")) }
                if section == .completions { page.completions += days } else { page.skips += days }
                taken = rows.count
                lastKey = days.last.map { "\($0.templateID.lowercaseString)/\($0.date)" } ?? ""
            case .checkins:
                let after = key.isEmpty ? nil : UUID(uuidString: key)
                let rows = try connection.query("""
                    SELECT id, template_id, checkin_date, value, to_char(at_time, 'HH24:MI:SS') AS at_time FROM public.habit_checkins
                    WHERE user_id = \(user) AND (\(after)::uuid IS NULL OR id > \(after)::uuid)
                    ORDER BY id LIMIT \(fetch)
                    """)
                let checkins = try rows.prefix(room).map { row in
                    AccountCheckin(id: try row.decode(UUID.self, "id"), templateID: try row.decode(UUID.self, "template_id"),
                                   date: try row.decode(CalendarDate.self, "checkin_date"),
                                   value: try DecimalValue(row.decode(PostgresNumeric.self, "value")),
                                   time: try row.decode(String?.self, "at_time").map(HabitRepository.shortTime))
                }
                page.checkins += checkins
                taken = rows.count
                lastKey = checkins.last?.id.lowercaseString ?? ""
            case .notes:
                let after = DayKey(key: key)
                let rows = try connection.query("""
                    SELECT template_id, note_date, note FROM public.habit_day_notes
                    WHERE user_id = \(user) AND (template_id, note_date) > (\(after?.templateID ?? smallestID), \(after?.date.description ?? "-infinity")::date)
                    ORDER BY template_id, note_date LIMIT \(fetch)
                    """)
                let notes = try rows.prefix(room).map { row in
                    AccountNote(templateID: try row.decode(UUID.self, "template_id"), date: try row.decode(CalendarDate.self, "note_date"),
                                note: try row.decode(String.self, "note"))
                }
                page.notes += notes
                taken = rows.count
                lastKey = notes.last.map { "\($0.templateID.lowercaseString)/\($0.date)" } ?? ""
            case .reminders:
                let after = key.isEmpty ? nil : UUID(uuidString: key)
                let rows = try connection.query("""
                    SELECT \(unsafeSQL: Reminder.columns) FROM public.habit_reminders r
                    WHERE r.user_id = \(user) AND (\(after)::uuid IS NULL OR r.id > \(after)::uuid)
                    ORDER BY r.id LIMIT \(fetch)
                    """)
                let reminders = try rows.prefix(room).map { row in
                    let reminder = try Reminder.decode(row)
                    return AccountReminder(id: reminder.id, templateID: reminder.templateID, time: reminder.time, days: reminder.days)
                }
                page.reminders += reminders
                taken = rows.count
                lastKey = reminders.last?.id.lowercaseString ?? ""
            case .lists, .tasks:
                let after = key.isEmpty ? nil : UUID(uuidString: key)
                let (table, columns) = section == .lists ? ("public.task_lists", TaskList.columns) : ("public.tasks", TaskItem.columns)
                let rows = try connection.query("""
                    SELECT \(unsafeSQL: columns) FROM \(unsafeSQL: table)
                    WHERE user_id = \(user) AND (\(after)::uuid IS NULL OR id > \(after)::uuid)
                    ORDER BY id LIMIT \(fetch)
                    """)
                if section == .lists {
                    let lists = try rows.prefix(room).map(TaskList.init(row:))
                    page.lists += lists
                    lastKey = lists.last?.id.lowercaseString ?? ""
                } else {
                    let tasks = try rows.prefix(room).map(TaskItem.init(row:))
                    page.tasks += tasks
                    lastKey = tasks.last?.id.lowercaseString ?? ""
                }
                taken = rows.count
            }
            if taken > room {
                // The section goes on: the next page starts after the last key taken.
                page.cursor = ExportCursor(section: section, key: lastKey, clock: start.clock, exportedAt: start.exportedAt)
                return page
            }
            room -= taken
            guard let next = section.next else { return page }
            if room == 0 {
                page.cursor = ExportCursor(section: next, key: "", clock: start.clock, exportedAt: start.exportedAt)
                return page
            }
            (section, key) = (next, "")
        }
    }

    // MARK: - Import

    /// The user's IANA zone (the profile's, else UTC: habit.user_time_zone), today there and
    /// the minute of the day at which the user's days begin (profiles.day_starts_at), computed
    /// by PostgreSQL: what a converted source (a Loop export) needs to place its local dates
    /// and periods.
    public func zoneAndToday(user: UUID) throws -> (timeZone: String, today: CalendarDate, dayStartMinutes: Int, weekStartISODay: Int) {
        let row = try scope.query(as: user, """
            SELECT habit.user_time_zone(\(user), NULL), habit.user_today(\(user), NULL),
                   (extract(epoch FROM habit.user_day_start(\(user)))::integer / 60), habit.user_week_start_isodow(\(user))
            """).single()
        return (try row.decode(String.self, at: 0), try row.decode(CalendarDate.self, at: 1), try row.decode(Int.self, at: 2),
                try row.decode(Int.self, at: 3))
    }

    /// Imports `documentJSON` — a "habit-account" version 1 document whose shape the caller has
    /// checked (the worker's `AccountDocument`) — for `user`, in one transaction. `backfill`
    /// (admins only; the database checks the login role) lifts the date and activity rules.
    /// `newIDs` imports it under new ids (another account's export: its own ids would conflict).
    public func importDocument(user: UUID, documentJSON: String, mode: ImportMode, backfill: Bool = false,
                               newIDs: Bool = false, warnings: [String] = []) throws -> ImportReport {
        let result = try scope.transaction(as: user) { connection in
            if backfill {
                // SET LOCAL, not set_config: on a Citus coordinator only a SET LOCAL reaches the
                // workers, where the tables' triggers read it.
                try connection.execute("SET LOCAL habit.backfill = 'on'")
            }
            // newIDs: the document's ids replaced by ones derived from the user
            // (habit.account_document_with_new_ids, sql/functions/accounts.sql). The call is the
            // whole statement: on a Citus coordinator the errors of its statements then keep
            // their SQLSTATE (from inside a statement around it they came back XX000).
            let call: Query = newIDs
                ? "SELECT habit.import_account(\(user), habit.account_document_with_new_ids(\(user), \(documentJSON)::jsonb), \(mode.rawValue)) AS counts"
                : "SELECT habit.import_account(\(user), \(documentJSON)::jsonb, \(mode.rawValue)) AS counts"
            return try connection.queryOne(call).decode(JSONB.self, "counts").text
        }
        return try Self.report(countsJSON: result, warnings: warnings)
    }

    /// The kinds of an import's counts, in the order of its answer (the document's).
    public static let importKinds = ["profile", "areas", "habits", "completions", "skips", "lists", "tasks", "checkins", "notes", "reminders"]

    static func report(countsJSON: String, warnings: [String]) throws -> ImportReport {
        guard let object = try JSONSerialization.jsonObject(with: Data(countsJSON.utf8)) as? [String: Any] else {
            throw PostgresError(kind: .decoding, message: "import_account returned no object")
        }
        func number(_ key: String) -> Int { (object[key] as? NSNumber)?.intValue ?? 0 }
        var counts: [(kind: String, counts: ImportCounts)] = []
        for kind in AccountRepository.importKinds {
            let inserted = number("\(kind)_inserted"), updated = number("\(kind)_updated")
            counts.append((kind, ImportCounts(inserted: inserted, updated: updated, deleted: number("\(kind)_deleted"),
                                              unchanged: max(0, number("\(kind)_total") - inserted - updated))))
        }
        // A habit whose fields are unchanged but whose periods were rewritten counts as updated.
        let periodsRewritten = number("habits_with_new_periods")
        if periodsRewritten > 0, let index = counts.firstIndex(where: { $0.kind == "habits" }) {
            var habits = counts[index].counts
            let extra = min(periodsRewritten, habits.unchanged)
            habits.updated += extra
            habits.unchanged -= extra
            counts[index].counts = habits
        }
        return ImportReport(counts: counts, warnings: warnings)
    }

    // MARK: - The input rules the document's values share with the other writers

    /// Throws `StoreError.invalidInput` (field = the rule's field name) when `text` is not a
    /// valid habit or list name (1–100 characters, trimmed, no control characters).
    public static func checkName(_ text: String) throws { try checkExact(text, Validation.habitName(text), field: "name") }
    public static func checkTaskTitle(_ text: String) throws { try checkExact(text, Validation.taskTitle(text), field: "title") }
    public static func checkTaskNotes(_ text: String) throws { _ = try Validation.taskNotes(text) }
    public static func checkIcon(_ text: String) throws { _ = try Validation.icon(text) }
    public static func checkColor(_ text: String) throws { try checkExact(text, Validation.color(text), field: "color") }
    /// A habit's kind and target (sql/0029): the same rules as habits.create's.
    public static func checkMeasure(_ measure: HabitMeasure) throws {
        let checked = try Validation.measure(measure)
        if let unit = measure.unit { try checkExact(unit, checked.unit ?? "", field: "unit") }
    }
    /// A day's note: 1–1000 characters (an empty note is no note: leave the row out).
    public static func checkNote(_ text: String) throws {
        guard !text.isEmpty else { throw StoreError.invalidInput(field: "note", reason: .empty, message: "must not be empty") }
        _ = try Validation.dayNote(text)
    }

    /// The document's values are stored as they are: one that validation would normalize
    /// (surrounding white space, lowercase hex) is refused, so an import never rewrites it.
    private static func checkExact(_ text: String, _ normalized: String, field: String) throws {
        guard text == normalized else {
            throw StoreError.invalidInput(field: field, reason: .invalidText, message: "must be given as stored (trimmed, canonical)")
        }
    }
}
