import Foundation
import HabitStore
import JSONRPC
import PostgresClient

/// The account document, "habit-account" version 1 (docs/protocol.md "Accounts",
/// docs/account-format.schema.json): its shape checked member by member before anything is
/// written, and its pages written by `account.export` and `habit account export`.
///
/// `check` is the seam for other sources: a converter (the Loop Habit Tracker one) produces a
/// `JSONValue` in this format plus warnings, and the import then runs exactly as for ours
/// (`AccountImport.importDocument`).
public enum AccountDocument {
    public static let format = "habit-account"
    public static let version = 1

    /// Most rows of each kind one import takes (row limits, sql/functions/rows.sql, may refuse fewer):
    /// a 3-year daily user with 100 habits has ~110,000 completions.
    public static let maxRows: [(member: String, limit: Int)] = [
        ("habits", 10_000), ("completions", 500_000), ("skips", 500_000), ("lists", 10_000), ("tasks", 200_000),
        ("checkins", 500_000), ("notes", 100_000), ("reminders", 24_000), ("areas", 100),
    ]
    /// Most periods of one habit.
    public static let maxPeriods = 10_000

    /// The JSON-RPC error the worker would answer for `error` (the CLI prints its field and reason).
    public static func refusal(_ error: Error) -> RPCError { ErrorMapping.rpcError(for: error) }


    /// A checked document: the JSON text `habit.import_account` reads.
    public struct Checked: Sendable {
        public let json: String
    }

    /// Checks `document` (the value of params `document`; paths start with `document`): types,
    /// formats, the rules of each value and row counts. The first problem is thrown as -32602
    /// with `data.field` its path.
    ///
    /// The document's consistency — duplicate ids and days, references inside the document,
    /// the periods' order (oldest first, only the last open) — is `habit.import_account`'s
    /// (sql/functions/accounts.sql), which answers the same paths and reasons for every caller,
    /// psql and PostgREST included (issue 31, finding 7). The row caps are checked in both
    /// places: here they bound the worker's own work on a document before it reaches the
    /// database (`habit account import` reads files of any size).
    public static func check(_ document: JSONValue) throws(RPCError) -> Checked {
        let top = try object(document, "document",
                             required: ["format", "version", "habits", "completions", "skips", "lists", "tasks"],
                             optional: ["exported_at", "profile", "areas", "checkins", "notes", "reminders"])
        guard top["format"]?.stringValue == format else {
            throw .invalidParams(field: "document.format", reason: InputFailure.unsupportedFormat, message: "expected \"\(format)\"")
        }
        guard top["version"]?.intValue == version else {
            throw .invalidParams(field: "document.version", reason: InputFailure.unsupportedFormat, message: "expected \(version)")
        }
        for (member, limit) in maxRows {
            if let rows = top[member]?.arrayValue, rows.count > limit {
                throw .invalidParams(field: "document.\(member)", reason: InputFailure.tooMany,
                                     message: "at most \(limit) per import; \(rows.count) given")
            }
        }
        if let profile = top["profile"], !profile.isNull {
            let fields = try object(profile, "document.profile", required: ["time_zone", "week_start"], optional: ["day_starts_at"])
            let zone = try string(fields["time_zone"]!, "document.profile.time_zone")
            guard !zone.isEmpty, zone.utf8.count <= 100, zone.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else {
                throw .invalidParams(field: "document.profile.time_zone", reason: InputFailure.invalidTimeZone, message: "not a time-zone name")
            }
            let start = try string(fields["week_start"]!, "document.profile.week_start")
            guard WeekStart(rawValue: start) != nil else {
                throw .invalidParams(field: "document.profile.week_start", reason: RPCReason.invalidChoice, message: #"expected "monday" or "sunday""#)
            }
            if let dayStart = try optionalString(fields["day_starts_at"], "document.profile.day_starts_at"), !ParamsReader.isDayStart(dayStart) {
                throw .invalidParams(field: "document.profile.day_starts_at", reason: InputFailure.invalidTime, message: "expected a local time of day \"HH:MM\"")
            }
        }

        // Areas (sql/0037): an optional member, absent in documents from before them; names as
        // lists' (the table's CHECKs; bidirectional controls are habit.import_account's to name).
        for (index, value) in try array(top["areas"] ?? .array([]), "document.areas").enumerated() {
            let path = "document.areas[\(index)]"
            let fields = try object(value, path, required: ["id", "name"], optional: ["sort_order"])
            _ = try uuid(fields["id"]!, path + ".id")
            try rule(path + ".name") { try AccountRepository.checkName(try string(fields["name"]!, path + ".name")) }
            if let order = fields["sort_order"], !order.isNull { _ = try int32(order, path + ".sort_order") }
        }

        for (index, value) in try array(top["habits"]!, "document.habits").enumerated() {
            let path = "document.habits[\(index)]"
            let fields = try object(value, path, required: ["id", "name", "periods"],
                                    optional: ["icon", "color", "sort_order", "created_at", "updated_at",
                                               "kind", "unit", "target", "target_type", "target_period", "archived_at", "area_id"])
            _ = try uuid(fields["id"]!, path + ".id")
            try rule(path + ".name") { try AccountRepository.checkName(try string(fields["name"]!, path + ".name")) }
            if let icon = try optionalString(fields["icon"], path + ".icon") { try rule(path + ".icon") { try AccountRepository.checkIcon(icon) } }
            if let color = try optionalString(fields["color"], path + ".color") { try rule(path + ".color") { try AccountRepository.checkColor(color) } }
            if let order = fields["sort_order"], !order.isNull { _ = try int32(order, path + ".sort_order") }
            if let archived = fields["archived_at"], !archived.isNull { _ = try timestamp(archived, path + ".archived_at") }
            if let area = fields["area_id"], !area.isNull { _ = try uuid(area, path + ".area_id") }
            try checkPeriods(try array(fields["periods"]!, path + ".periods"), path + ".periods")
            try checkMeasure(fields, path)
        }

        // Check-ins and notes (sql/0029): optional members, absent in documents from before them.
        for (index, value) in try array(top["checkins"] ?? .array([]), "document.checkins").enumerated() {
            let path = "document.checkins[\(index)]"
            let fields = try object(value, path, required: ["id", "template_id", "date", "value"], optional: ["time"])
            _ = try uuid(fields["id"]!, path + ".id")
            _ = try uuid(fields["template_id"]!, path + ".template_id")
            _ = try calendarDate(fields["date"]!, path + ".date")
            guard let amount = DecimalValue(normalizing: try string(fields["value"]!, path + ".value")) else {
                throw .invalidParams(field: path + ".value", reason: InputFailure.invalidDecimal, message: "expected a decimal string such as \"2.5\"")
            }
            guard amount > .zero else { throw .invalidParams(field: path + ".value", reason: InputFailure.outOfRange, message: "must be above 0") }
            if let time = try optionalString(fields["time"], path + ".time"), !ParamsReader.isLocalTime(time) {
                throw .invalidParams(field: path + ".time", reason: InputFailure.invalidTime, message: "expected a local time of day \"HH:MM\" or \"HH:MM:SS\"")
            }
        }
        for (index, value) in try array(top["notes"] ?? .array([]), "document.notes").enumerated() {
            let path = "document.notes[\(index)]"
            let fields = try object(value, path, required: ["template_id", "date", "note"])
            _ = try uuid(fields["template_id"]!, path + ".template_id")
            _ = try calendarDate(fields["date"]!, path + ".date")
            try rule(path + ".note") { try AccountRepository.checkNote(try string(fields["note"]!, path + ".note")) }
        }

        // Reminders (sql/0036): an optional member, absent in documents from before them.
        for (index, value) in try array(top["reminders"] ?? .array([]), "document.reminders").enumerated() {
            let path = "document.reminders[\(index)]"
            let fields = try object(value, path, required: ["id", "template_id", "time"], optional: ["days"])
            _ = try uuid(fields["id"]!, path + ".id")
            _ = try uuid(fields["template_id"]!, path + ".template_id")
            guard ParamsReader.isDayStart(try string(fields["time"]!, path + ".time")) else {
                throw .invalidParams(field: path + ".time", reason: InputFailure.invalidTime, message: "expected a local time of day \"HH:MM\"")
            }
            switch fields["days"] {
            case nil, .null?, .string("due")?: break
            case .array(let days)?:
                guard !days.isEmpty else { throw .invalidParams(field: path + ".days", reason: InputFailure.empty, message: "expected \"due\" or at least one weekday") }
                var seen = Set<Int>()
                for (position, day) in days.enumerated() {
                    guard case .number = day, let weekday = day.intValue, (1...7).contains(weekday) else {
                        throw .invalidParams(field: "\(path).days[\(position)]", reason: InputFailure.outOfRange, message: "expected an ISO weekday 1–7")
                    }
                    guard seen.insert(weekday).inserted else {
                        throw .invalidParams(field: "\(path).days[\(position)]", reason: InputFailure.duplicateValue, message: "weekday \(weekday) is listed twice")
                    }
                }
            default:
                throw .invalidParams(field: path + ".days", reason: RPCReason.wrongType, message: "expected \"due\" or a list of ISO weekdays 1–7")
            }
        }

        for member in ["completions", "skips"] {
            for (index, value) in try array(top[member]!, "document.\(member)").enumerated() {
                let path = "document.\(member)[\(index)]"
                let fields = try object(value, path, required: ["template_id", "date"])
                _ = try uuid(fields["template_id"]!, path + ".template_id")
                _ = try calendarDate(fields["date"]!, path + ".date")
            }
        }

        for (index, value) in try array(top["lists"]!, "document.lists").enumerated() {
            let path = "document.lists[\(index)]"
            let fields = try object(value, path, required: ["id", "name"], optional: ["created_at", "updated_at"])
            _ = try uuid(fields["id"]!, path + ".id")
            try rule(path + ".name") { try AccountRepository.checkName(try string(fields["name"]!, path + ".name")) }
        }

        for (index, value) in try array(top["tasks"]!, "document.tasks").enumerated() {
            let path = "document.tasks[\(index)]"
            let fields = try object(value, path, required: ["id", "title", "state", "position"],
                                    optional: ["list_id", "notes", "scheduled_date", "completed_at", "created_at", "updated_at"])
            _ = try uuid(fields["id"]!, path + ".id")
            if let list = fields["list_id"], !list.isNull { _ = try uuid(list, path + ".list_id") }
            try rule(path + ".title") { try AccountRepository.checkTaskTitle(try string(fields["title"]!, path + ".title")) }
            if let notes = try optionalString(fields["notes"], path + ".notes") { try rule(path + ".notes") { try AccountRepository.checkTaskNotes(notes) } }
            let state = try string(fields["state"]!, path + ".state")
            guard let taskState = TaskState(rawValue: state) else {
                throw .invalidParams(field: path + ".state", reason: RPCReason.invalidChoice, message: #"expected "not_started", "active" or "completed""#)
            }
            if let date = fields["scheduled_date"], !date.isNull { _ = try calendarDate(date, path + ".scheduled_date") }
            _ = try int32(fields["position"]!, path + ".position")
            let completedAt = try optionalTimestamp(fields["completed_at"], path + ".completed_at")
            guard (taskState == .completed) == (completedAt != nil) else {
                throw .invalidParams(field: path + ".completed_at", reason: InputFailure.notAllowed,
                                     message: "set exactly when state is completed")
            }
        }
        return Checked(json: document.jsonString)
    }

    /// A habit's kind, unit, target, target_type and target_period: each optional (absent or
    /// null: the default), together the rules of habits.create.
    private static func checkMeasure(_ fields: JSONObject, _ path: String) throws(RPCError) {
        func choice<Value: RawRepresentable & CaseIterable>(_ key: String, _: Value.Type) throws(RPCError) -> Value? where Value.RawValue == String {
            guard let text = try optionalString(fields[key], path + "." + key) else { return nil }
            guard let value = Value(rawValue: text) else {
                throw .invalidParams(field: path + "." + key, reason: RPCReason.invalidChoice,
                                     message: "expected " + Value.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: " or "))
            }
            return value
        }
        var measure = HabitMeasure()
        measure.kind = try choice("kind", HabitKind.self) ?? .boolean
        measure.unit = try optionalString(fields["unit"], path + ".unit")
        if let target = try optionalString(fields["target"], path + ".target") {
            guard let value = DecimalValue(normalizing: target) else {
                throw .invalidParams(field: path + ".target", reason: InputFailure.invalidDecimal, message: "expected a decimal string such as \"2.5\"")
            }
            measure.target = value
        }
        measure.targetType = try choice("target_type", TargetType.self) ?? .atLeast
        measure.targetPeriod = try choice("target_period", TargetPeriod.self) ?? .day
        do {
            try AccountRepository.checkMeasure(measure)
        } catch StoreError.invalidInput(let field, let reason, let message) {
            throw .invalidParams(field: path + "." + field, reason: reason, message: message)
        } catch {
            throw .internalError()
        }
    }

    private static func checkPeriods(_ periods: [JSONValue], _ path: String) throws(RPCError) {
        guard periods.count <= maxPeriods else {
            throw .invalidParams(field: path, reason: InputFailure.tooMany, message: "at most \(maxPeriods) periods per habit")
        }
        // Their order (oldest first, only the last open) is habit.import_account's to check.
        for (index, value) in periods.enumerated() {
            let at = "\(path)[\(index)]"
            let fields = try object(value, at, required: ["started_at", "schedule"], optional: ["ended_at"])
            _ = try timestamp(fields["started_at"]!, at + ".started_at")
            _ = try optionalTimestamp(fields["ended_at"], at + ".ended_at")
            do {
                _ = try ParamsReader.schedule(fields["schedule"]!)
            } catch {
                throw prefixed(error, with: at)
            }
        }
    }

    // MARK: - Reading values, naming the path of each failure

    private static func object(_ value: JSONValue, _ path: String, required: [String], optional: [String] = []) throws(RPCError) -> JSONObject {
        guard case .object(let object) = value else {
            throw .invalidParams(field: path, reason: RPCReason.wrongType, message: "expected an object")
        }
        if let key = object.firstDuplicateKey {
            throw .invalidParams(field: path + "." + key, reason: RPCReason.duplicateKey, message: "duplicate key")
        }
        for key in object.keys where !required.contains(key) && !optional.contains(key) {
            throw .invalidParams(field: path + "." + key, reason: RPCReason.unknownKey, message: "not a member of the account format")
        }
        for key in required where object[key] == nil {
            throw .invalidParams(field: path + "." + key, reason: RPCReason.required, message: "missing")
        }
        return object
    }

    private static func array(_ value: JSONValue, _ path: String) throws(RPCError) -> [JSONValue] {
        guard case .array(let elements) = value else {
            throw .invalidParams(field: path, reason: RPCReason.wrongType, message: "expected an array")
        }
        return elements
    }

    private static func string(_ value: JSONValue, _ path: String) throws(RPCError) -> String {
        guard case .string(let text) = value else {
            throw .invalidParams(field: path, reason: RPCReason.wrongType, message: "expected a string")
        }
        return text
    }

    private static func optionalString(_ value: JSONValue?, _ path: String) throws(RPCError) -> String? {
        guard let value, !value.isNull else { return nil }
        return try string(value, path)
    }

    private static func uuid(_ value: JSONValue, _ path: String) throws(RPCError) -> UUID {
        guard let id = UUID(canonical: try string(value, path)) else {
            throw .invalidParams(field: path, reason: InputFailure.invalidUUID, message: "expected a UUID")
        }
        return id
    }

    private static func calendarDate(_ value: JSONValue, _ path: String) throws(RPCError) -> CalendarDate {
        guard let date = CalendarDate(iso8601: try string(value, path)), ParamsReader.dateRange.contains(date) else {
            throw .invalidParams(field: path, reason: InputFailure.invalidDate, message: "expected a calendar date YYYY-MM-DD")
        }
        return date
    }

    private static func timestamp(_ value: JSONValue, _ path: String) throws(RPCError) -> PostgresTimestamp {
        guard let instant = PostgresTimestamp(rfc3339: try string(value, path)), ParamsReader.instantRange.contains(instant) else {
            throw .invalidParams(field: path, reason: InputFailure.invalidTimestamp, message: "expected an RFC 3339 timestamp with an offset")
        }
        return instant
    }

    private static func optionalTimestamp(_ value: JSONValue?, _ path: String) throws(RPCError) -> PostgresTimestamp? {
        guard let value, !value.isNull else { return nil }
        return try timestamp(value, path)
    }

    private static func int32(_ value: JSONValue, _ path: String) throws(RPCError) -> Int {
        guard case .number = value else {
            throw .invalidParams(field: path, reason: RPCReason.wrongType, message: "expected an integer")
        }
        guard let number = value.intValue, (Int(Int32.min)...Int(Int32.max)).contains(number) else {
            throw .invalidParams(field: path, reason: InputFailure.outOfRange, message: "expected a 32-bit integer")
        }
        return number
    }

    /// Runs one of the store's value rules, naming `path` instead of the rule's own field.
    private static func rule(_ path: String, _ body: () throws -> Void) throws(RPCError) {
        do {
            try body()
        } catch let error as RPCError {
            throw error
        } catch StoreError.invalidInput(_, let reason, let message) {
            throw .invalidParams(field: path, reason: reason, message: message)
        } catch {
            throw .internalError()
        }
    }

    /// `error` with `data.field` under `path` (a schedule's `schedule.days[0]` → `<path>.schedule.days[0]`).
    private static func prefixed(_ error: RPCError, with path: String) -> RPCError {
        guard case .object(var data)? = error.data, let field = data["field"]?.stringValue else { return error }
        data.members = data.members.map { $0.key == "field" ? ("field", .string(path + "." + field)) : $0 }
        return RPCError(code: error.code, message: error.message, data: .object(data))
    }
}

// MARK: - Writing

extension JSONWriter {
    /// A habit as the document holds it.
    mutating func accountHabit(_ habit: AccountHabit) {
        beginObject()
        key("id"); uuid(habit.id)
        key("name"); string(habit.name)
        key("icon"); string(habit.icon)
        key("color"); string(habit.color)
        key("sort_order"); if let order = habit.sortOrder { int(order) } else { null() }
        key("created_at"); timestamp(habit.createdAt)
        key("updated_at"); timestamp(habit.updatedAt)
        key("kind"); string(habit.measure.kind.rawValue)
        key("unit"); string(habit.measure.unit)
        key("target"); string(habit.measure.target.text)
        key("target_type"); string(habit.measure.targetType.rawValue)
        key("target_period"); string(habit.measure.targetPeriod.rawValue)
        key("archived_at"); timestamp(habit.archivedAt)
        key("area_id"); uuid(habit.areaID)
        key("periods"); array(habit.periods) { json, period in
            json.beginObject()
            json.key("started_at"); json.timestamp(period.startedAt)
            json.key("ended_at"); json.timestamp(period.endedAt)
            json.key("schedule"); json.schedule(period.schedule)
            json.endObject()
        }
        endObject()
    }

    mutating func accountProfile(_ profile: Profile?) {
        guard let profile else { return null() }
        beginObject()
        key("time_zone"); string(profile.timeZone)
        key("week_start"); string(profile.weekStart.rawValue)
        key("day_starts_at"); string(profile.dayStartsAt)
        endObject()
    }

    mutating func accountArea(_ area: AccountArea) {
        beginObject()
        key("id"); uuid(area.id)
        key("name"); string(area.name)
        key("sort_order"); if let order = area.sortOrder { int(order) } else { null() }
        endObject()
    }

    mutating func accountList(_ list: TaskList) {
        beginObject()
        key("id"); uuid(list.id)
        key("name"); string(list.name)
        key("created_at"); timestamp(list.createdAt)
        key("updated_at"); timestamp(list.updatedAt)
        endObject()
    }

    mutating func accountTask(_ task: TaskItem) {
        beginObject()
        key("id"); uuid(task.id)
        key("list_id"); uuid(task.listID)
        key("title"); string(task.title)
        key("notes"); string(task.notes)
        key("state"); string(task.state.rawValue)
        key("scheduled_date"); date(task.scheduledDate)
        key("position"); int(task.position)
        key("completed_at"); timestamp(task.completedAt)
        key("created_at"); timestamp(task.createdAt)
        key("updated_at"); timestamp(task.updatedAt)
        endObject()
    }

    /// The header members (format, version, exported_at).
    mutating func accountHeader(exportedAt: PostgresTimestamp) {
        key("format"); string(AccountDocument.format)
        key("version"); int(AccountDocument.version)
        key("exported_at"); timestamp(exportedAt)
    }

    /// The members of a page after the header, each array in document order.
    mutating func accountSections(_ page: AccountExportPage) {
        if page.includesProfile { key("profile"); accountProfile(page.profile) }
        key("areas"); array(page.areas) { json, area in json.accountArea(area) }
        key("habits"); array(page.habits) { json, habit in json.accountHabit(habit) }
        key("completions"); array(page.completions) { json, day in json.dayKey(day) }
        key("skips"); array(page.skips) { json, day in json.dayKey(day) }
        key("lists"); array(page.lists) { json, list in json.accountList(list) }
        key("tasks"); array(page.tasks) { json, task in json.accountTask(task) }
        key("checkins"); array(page.checkins) { json, checkin in json.accountCheckin(checkin) }
        key("notes"); array(page.notes) { json, note in json.accountNote(note) }
        key("reminders"); array(page.reminders) { json, reminder in json.accountReminder(reminder) }
    }

    mutating func accountReminder(_ reminder: AccountReminder) {
        beginObject()
        key("id"); uuid(reminder.id)
        key("template_id"); uuid(reminder.templateID)
        key("time"); string(reminder.time)
        key("days")
        switch reminder.days {
        case .due: string("due")
        case .weekdays(let days): array(days) { json, day in json.int(day) }
        }
        endObject()
    }

    mutating func accountCheckin(_ checkin: AccountCheckin) {
        beginObject()
        key("id"); uuid(checkin.id)
        key("template_id"); uuid(checkin.templateID)
        key("date"); date(checkin.date)
        key("value"); string(checkin.value.text)
        key("time"); string(checkin.time)
        endObject()
    }

    mutating func accountNote(_ note: AccountNote) {
        beginObject()
        key("template_id"); uuid(note.templateID)
        key("date"); date(note.date)
        key("note"); string(note.note)
        endObject()
    }
}

/// Writes the whole document from its pages as they come, keeping one page in memory: the
/// header and the profile, then each array's items, opening and closing each array once.
/// Output is byte-identical to one `JSONWriter` writing the whole document.
public struct AccountDocumentStream {
    private var section = -1
    private var first = true
    private let write: (Data) throws -> Void

    public init(write: @escaping (Data) throws -> Void) { self.write = write }

    private static let names = ["profile", "areas", "habits", "completions", "skips", "lists", "tasks", "checkins", "notes", "reminders"]

    public mutating func add(_ page: AccountExportPage) throws {
        var text = ""
        if section < 0 {
            let header = JSONWriter.encode { json in
                json.beginObject()
                json.accountHeader(exportedAt: page.exportedAt)
                json.key("profile"); json.accountProfile(page.profile)
            }
            text += String(decoding: header.bytes, as: UTF8.self)
            section = 0
        }
        func items<T>(_ index: Int, _ elements: [T], _ writeOne: (inout JSONWriter, T) -> Void) {
            guard !elements.isEmpty else { return }
            text += open(through: index)
            for element in elements {
                let one = JSONWriter.encode { writeOne(&$0, element) }
                text += (first ? "" : ",") + String(decoding: one.bytes, as: UTF8.self)
                first = false
            }
        }
        items(1, page.areas) { $0.accountArea($1) }
        items(2, page.habits) { $0.accountHabit($1) }
        items(3, page.completions) { $0.dayKey($1) }
        items(4, page.skips) { $0.dayKey($1) }
        items(5, page.lists) { $0.accountList($1) }
        items(6, page.tasks) { $0.accountTask($1) }
        items(7, page.checkins) { $0.accountCheckin($1) }
        items(8, page.notes) { $0.accountNote($1) }
        items(9, page.reminders) { $0.accountReminder($1) }
        if !text.isEmpty { try write(Data(text.utf8)) }
    }

    /// Closes the arrays still to come (empty) and the document.
    public mutating func finish() throws {
        try write(Data((open(through: Self.names.count - 1) + "]}\n").utf8))
    }

    /// Closes the current array and opens the following ones up to `index`.
    private mutating func open(through index: Int) -> String {
        var text = ""
        while section < index {
            if section >= 1 { text += "]" }
            section += 1
            text += ",\"\(Self.names[section])\":["
            first = true
        }
        return text
    }
}
