import Foundation
import HabitStore
import JSONRPC
import PostgresClient

// MARK: - sync.pull

/// `sync.pull {user_id, cursor?, limit?}`: what changed of the user's rows after `cursor` (no
/// cursor: the whole current state), at most `limit` rows and deletions per page, pages chained
/// by `cursor` while `has_more`. Reads only: retry-safe. `SyncRepository` holds the rules
/// (sql/functions/sync.sql, docs/schema.md "Sync"); a pull with nothing new is one index probe.
enum SyncPull: DatabaseMethod {
    static let name = "sync.pull"
    static let retry = RetrySafety.always
    static let summary = "The user's rows changed and deleted after cursor (none: the whole state), in pages of at most limit; pass cursor back for the next page and the next pull."
    static let errors: [DomainErrorCode] = [.cursorExpired]
    static let limits = 1...10_000
    static let defaultLimit = 1_000

    struct Params: Sendable {
        let user: UUID
        let cursor: SyncCursor?
        let limit: Int
    }

    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        let user = try params.userID()
        let text = try params.optionalString("cursor", description: "The cursor of the previous answer (sync.pull or sync.push); absent or null: the whole state.")
        let limit = try params.optionalInt("limit", range: limits, description: "Most rows and deletions in this answer (default 1000).") ?? defaultLimit
        var cursor: SyncCursor?
        if let text, !params.isDescribing {
            do {
                cursor = try SyncCursor(text: text)
            } catch .cursorExpired {
                // A cursor from before check-ins and notes, reminders or areas were pulled (SyncCursor).
                throw DomainErrorCode.cursorExpired.error()
            } catch {
                throw .invalidParams(field: "cursor", reason: InputFailure.invalidCursor, message: "not a sync cursor")
            }
        }
        return Params(user: user, cursor: cursor, limit: limit)
    }

    static func run(_ params: Params, in context: MethodContext) throws -> SyncPage {
        try SyncRepository(connection: context.connection, settings: context.settings)
            .pull(user: params.user, cursor: params.cursor, limit: params.limit, retention: context.syncRetention)
    }
}

extension JSONWriter {
    /// `{template_id, date}`: a completion's or skip's key.
    mutating func dayKey(_ key: DayKey) {
        beginObject()
        self.key("template_id"); uuid(key.templateID)
        self.key("date"); date(key.date)
        endObject()
    }

    mutating func uuids(_ ids: [UUID]) {
        array(ids) { json, id in json.uuid(id) }
    }
}

extension SyncPage: MethodResult {
    static let dayKeySchema = JSONSchema.object([("template_id", ValueSchema.uuid), ("date", ValueSchema.date)])
    static let periodSchema = JSONSchema.object([
        ("id", ValueSchema.uuid),
        ("template_id", ValueSchema.uuid),
        ("started_at", JSONSchema.described(ValueSchema.timestamp, "Start (inclusive).")),
        ("ended_at", JSONSchema.described(JSONSchema.nullable(ValueSchema.timestamp), "End (exclusive); null for the open period.")),
        ("schedule", HabitSchedule.schema),
    ])

    static let schema = JSONSchema.object([
        ("changes", JSONSchema.described(JSONSchema.object([
            ("profile", JSONSchema.described(JSONSchema.nullable(Profile.schema), "The profile when it changed; else null.")),
            ("areas", JSONSchema.array(of: Area.schema)),
            ("habits", JSONSchema.array(of: Habit.schema)),
            ("periods", JSONSchema.array(of: periodSchema)),
            ("completions", JSONSchema.array(of: JSONSchema.object([("template_id", ValueSchema.uuid), ("date", ValueSchema.date),
                                                                    ("created_at", ValueSchema.timestamp)]))),
            ("skips", JSONSchema.array(of: dayKeySchema)),
            ("lists", JSONSchema.array(of: TaskList.schema)),
            ("tasks", JSONSchema.array(of: TaskItem.schema)),
            ("checkins", JSONSchema.array(of: Checkin.schema(withDay: true))),
            ("notes", JSONSchema.array(of: JSONSchema.object([
                ("template_id", ValueSchema.uuid), ("date", ValueSchema.date), ("note", JSONSchema.string()), ("updated_at", ValueSchema.timestamp),
            ]))),
            ("reminders", JSONSchema.array(of: Reminder.schema)),
        ]), "Rows written after the cursor, each as the existing methods return it; replace the local row of the same key.")),
        ("deleted", JSONSchema.described(JSONSchema.object([
            ("profile", JSONSchema.described(JSONSchema.boolean, "Sent (true) only when the profile was deleted.")),
            ("areas", JSONSchema.array(of: ValueSchema.uuid)),
            ("habits", JSONSchema.array(of: ValueSchema.uuid)),
            ("periods", JSONSchema.array(of: ValueSchema.uuid)),
            ("completions", JSONSchema.array(of: dayKeySchema)),
            ("skips", JSONSchema.array(of: dayKeySchema)),
            ("lists", JSONSchema.array(of: ValueSchema.uuid)),
            ("tasks", JSONSchema.array(of: ValueSchema.uuid)),
            ("checkins", JSONSchema.array(of: ValueSchema.uuid)),
            ("notes", JSONSchema.array(of: dayKeySchema)),
            ("reminders", JSONSchema.array(of: ValueSchema.uuid)),
        ], optional: ["profile"]), "Keys deleted after the cursor; remove them locally (a key may be unknown locally).")),
        ("cursor", JSONSchema.described(JSONSchema.string(), "Opaque: pass it back as cursor, for the next page or the next pull.")),
        ("has_more", JSONSchema.described(JSONSchema.boolean, "True: pull again with cursor at once; the walk is one consistent state only when followed to the end.")),
    ])

    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.key("changes"); json.beginObject()
        json.key("profile"); if let profile { json.value(profile) } else { json.null() }
        json.key("areas"); json.array(areas) { json, area in json.area(area) }
        json.key("habits"); json.array(habits) { json, habit in json.habit(habit) }
        json.key("periods"); json.array(periods) { json, period in
            json.beginObject()
            json.key("id"); json.uuid(period.id)
            json.key("template_id"); json.uuid(period.templateID)
            json.key("started_at"); json.timestamp(period.period.startedAt)
            json.key("ended_at"); json.timestamp(period.period.endedAt)
            json.key("schedule"); json.schedule(period.period.schedule)
            json.endObject()
        }
        json.key("completions"); json.array(completions) { json, completion in
            json.beginObject()
            json.key("template_id"); json.uuid(completion.templateID)
            json.key("date"); json.date(completion.date)
            json.key("created_at"); json.timestamp(completion.createdAt)
            json.endObject()
        }
        json.key("skips"); json.array(skips) { json, key in json.dayKey(key) }
        json.key("lists"); json.array(lists) { json, list in json.taskList(list) }
        json.key("tasks"); json.array(tasks) { json, task in json.task(task) }
        json.key("checkins"); json.array(checkins) { json, checkin in json.checkin(checkin, withDay: true) }
        json.key("notes"); json.array(notes) { json, note in
            json.beginObject()
            json.key("template_id"); json.uuid(note.day.templateID)
            json.key("date"); json.date(note.day.date)
            json.key("note"); json.string(note.note)
            json.key("updated_at"); json.timestamp(note.updatedAt)
            json.endObject()
        }
        json.key("reminders"); json.array(reminders) { json, reminder in json.reminder(reminder) }
        json.endObject()
        json.key("deleted"); json.beginObject()
        if deleted.profile { json.key("profile"); json.bool(true) }
        json.key("areas"); json.uuids(deleted.areas)
        json.key("habits"); json.uuids(deleted.habits)
        json.key("periods"); json.uuids(deleted.periods)
        json.key("completions"); json.array(deleted.completions) { json, key in json.dayKey(key) }
        json.key("skips"); json.array(deleted.skips) { json, key in json.dayKey(key) }
        json.key("lists"); json.uuids(deleted.lists)
        json.key("tasks"); json.uuids(deleted.tasks)
        json.key("checkins"); json.uuids(deleted.checkins)
        json.key("notes"); json.array(deleted.notes) { json, key in json.dayKey(key) }
        json.key("reminders"); json.uuids(deleted.reminders)
        json.endObject()
        json.key("cursor"); json.string(cursor.text)
        json.key("has_more"); json.bool(hasMore)
        json.endObject()
    }

    public var estimatedJSONBytes: Int {
        256 + 360 * (habits.count + tasks.count) + 200 * (areas.count + periods.count) + 100 * (completions.count + skips.count) + 160 * lists.count
            + 240 * checkins.count + 3_200 * notes.count + 220 * reminders.count
            + 40 * (deleted.areas.count + deleted.habits.count + deleted.periods.count + deleted.lists.count + deleted.tasks.count + deleted.checkins.count
                    + deleted.reminders.count)
            + 70 * (deleted.completions.count + deleted.skips.count + deleted.notes.count)
    }
}
