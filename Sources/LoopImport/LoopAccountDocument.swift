import Foundation
import JSONRPC

/// What converting a Loop export did: counts per kind and warnings that name the habit.
/// Numeric habits are listed by name: never dropped silently.
public struct LoopImportReport: Sendable, Equatable {
    /// Yes/no habits in the document (archived ones included).
    public var habits = 0
    public var archivedHabits = 0
    public var completions = 0
    public var skips = 0
    /// Names of the numeric habits, which are not imported (our habits are yes/no).
    public var numericHabitsNotImported: [String] = []
    /// YES_AUTO, NO and UNKNOWN checkmarks: "not done" in our model is the absence of a row.
    public var checkmarksWithoutRow = 0
    /// YES_MANUAL and SKIP dated after `today` (the importer refuses them).
    public var futureCheckmarksDropped = 0
    /// YES_MANUAL and SKIP of an archived habit dated today: its period has ended by then.
    public var archivedTodayCheckmarksDropped = 0
    public var warnings: [String] = []

    /// `{"counts": {...}, "numeric_habits_not_imported": [...], "warnings": [...]}`, keys in this order.
    public var json: JSONValue {
        .object(JSONObject([
            ("counts", .object(JSONObject([
                ("habits", .int(habits)),
                ("archived_habits", .int(archivedHabits)),
                ("completions", .int(completions)),
                ("skips", .int(skips)),
                ("numeric_habits_not_imported", .int(numericHabitsNotImported.count)),
                ("checkmarks_without_row", .int(checkmarksWithoutRow)),
                ("future_checkmarks_dropped", .int(futureCheckmarksDropped)),
                ("archived_today_checkmarks_dropped", .int(archivedTodayCheckmarksDropped)),
            ]))),
            ("numeric_habits_not_imported", .array(numericHabitsNotImported.map { .string($0) })),
            ("warnings", .array(warnings.map { .string($0) })),
        ]))
    }
}

extension LoopExport {
    /// The largest habit name our schema takes (habit_templates_name_check: char_length ≤ 100).
    static let maximumNameLength = 100

    /// This export as a "habit-account" version 1 document (docs/account-format.schema.json)
    /// for `user`, with server-set members null, profile null (Loop has no zone or week start:
    /// the user's profile stays as it is), no lists or tasks. Dates are Loop's local dates;
    /// periods start at local midnight in `timeZone` (the user's IANA zone), `today` is the
    /// user's today there (from PostgreSQL). Same input, same bytes: habit ids are name-based
    /// UUIDs of (user, Position, Name), arrays are sorted as the format says.
    public func accountDocument(user: UUID, timeZone: String, today: LoopDay) throws(LoopImportError) -> (document: JSONValue, report: LoopImportReport) {
        guard let zone = TimeZone(identifier: timeZone) else {
            throw LoopImportError(.invalidTimezone, "\"\(timeZone)\" is not an IANA time zone")
        }
        var report = LoopImportReport()
        var habitValues: [(id: String, value: JSONValue)] = []
        var completions: [(String, LoopDay)] = []
        var skips: [(String, LoopDay)] = []

        for habit in habits {
            let label = Self.displayName(habit)
            guard habit.type == .yesNo else {
                report.numericHabitsNotImported.append(label)
                report.warnings.append("\"\(label)\": numeric habit (unit \"\(habit.unit)\") not imported: our habits are yes/no")
                continue
            }
            let id = NameBasedUUID.v5(namespace: NameBasedUUID.loopHabitNamespace,
                                      name: "\(user.uuidString.lowercased())\u{0}\(habit.position)\u{0}\(habit.name)")
                .uuidString.lowercased()
            let (name, nameWarning) = Self.ourName(habit)
            if let nameWarning { report.warnings.append(nameWarning) }

            var color: JSONValue = .null
            let upper = habit.color.uppercased()
            if upper.utf8.count == 7, upper.hasPrefix("#"), upper.utf8.dropFirst().allSatisfy({ (48...57).contains($0) || (65...70).contains($0) }) {
                color = .string(upper)
            } else if !habit.color.isEmpty {
                report.warnings.append("\"\(name)\": colour \"\(habit.color)\" is not #RRGGBB; imported without a colour")
            }

            let (schedule, scheduleWarning) = Self.schedule(numerator: habit.numerator, denominator: habit.denominator)
            if let scheduleWarning { report.warnings.append("\"\(name)\": \(scheduleWarning)") }
            if habit.checkmarks == nil {
                report.warnings.append("\"\(name)\": no Checkmarks.csv in the export (not selected when exporting); imported without history")
            }

            // The period: from the first known day (any value, UNKNOWN included: Loop writes
            // days from the habit's first entry) to now, or for an archived habit to the day
            // after its last known day, at most today: a closed period makes days on only
            // before today (habit.period_on_days), and must end after it starts.
            let checkmarks = habit.checkmarks ?? []
            let known = checkmarks.map(\.date).filter { $0 <= today }
            var start = known.min() ?? today
            var end: LoopDay?
            if habit.archived {
                if start >= today { start = today.adding(days: -1) }
                end = max(start.adding(days: 1), min((known.max() ?? start).adding(days: 1), today))
                report.archivedHabits += 1
            }
            var futureDropped = 0, archivedDropped = 0
            for checkmark in checkmarks {
                switch checkmark.value {
                case .yesManual?, .skip?:
                    if checkmark.date > today { futureDropped += 1; continue }
                    if let end, checkmark.date >= end { archivedDropped += 1; continue }
                    if checkmark.value == .yesManual { completions.append((id, checkmark.date)) } else { skips.append((id, checkmark.date)) }
                default:
                    report.checkmarksWithoutRow += 1
                }
            }
            if futureDropped > 0 {
                report.futureCheckmarksDropped += futureDropped
                report.warnings.append("\"\(name)\": \(futureDropped) checkmark(s) after today (\(today)) not imported")
            }
            if archivedDropped > 0 {
                report.archivedTodayCheckmarksDropped += archivedDropped
                report.warnings.append("\"\(name)\": archived; \(archivedDropped) checkmark(s) of today not imported (the habit is inactive from today)")
            }
            report.habits += 1

            let period = JSONValue.object(JSONObject([
                ("started_at", .string(start.startRFC3339(in: zone))),
                ("ended_at", end.map { .string($0.startRFC3339(in: zone)) } ?? .null),
                ("schedule", schedule),
            ]))
            habitValues.append((id, .object(JSONObject([
                ("id", .string(id)),
                ("name", .string(name)),
                ("icon", .null),
                ("color", color),
                ("sort_order", .int(habit.position)),
                ("created_at", .null),
                ("updated_at", .null),
                ("periods", .array([period])),
            ]))))
        }
        report.completions = completions.count
        report.skips = skips.count

        func rows(_ list: [(String, LoopDay)]) -> JSONValue {
            .array(list.sorted { ($0.0, $0.1) < ($1.0, $1.1) }.map {
                .object(JSONObject([("template_id", .string($0.0)), ("date", .string($0.1.description))]))
            })
        }
        let document = JSONValue.object(JSONObject([
            ("format", .string("habit-account")),
            ("version", .int(1)),
            ("exported_at", .null),
            ("profile", .null),
            ("habits", .array(habitValues.sorted { $0.id < $1.id }.map(\.value))),
            ("completions", rows(completions)),
            ("skips", rows(skips)),
            ("lists", .array([])),
            ("tasks", .array([])),
        ]))
        return (document, report)
    }

    /// Loop's frequency is "numerator times in denominator days". Exact: 1/1 (and n/n) daily,
    /// n/7 times_per_week n. Otherwise the nearest of our shapes, with a warning: 1/m →
    /// every_n_days m (the same rate, on fixed days rather than any day of a window; m ≤ 365);
    /// n/m → times_per_week round(7n/m) (the nearest weekly rate, 1…7; 7 is daily).
    static func schedule(numerator n: Int, denominator m: Int) -> (JSONValue, String?) {
        let daily: JSONValue = .object(JSONObject([("type", .string("daily"))]))
        func timesPerWeek(_ times: Int) -> JSONValue {
            .object(JSONObject([("type", .string("times_per_week")), ("times", .int(times))]))
        }
        if n == m { return (daily, nil) }
        if m == 7, n < 7 { return (timesPerWeek(n), nil) }
        if n > m { return (daily, "frequency \(n) times in \(m) days is more than daily; imported as daily") }
        if n == 1 {
            let days = min(m, 365)
            return (.object(JSONObject([("type", .string("every_n_days")), ("n", .int(days))])),
                    "frequency once in \(m) days imported as every \(days) days (fixed days counted from the start)")
        }
        let times = min(7, max(1, Int((Double(n) * 7 / Double(m)).rounded())))
        if times == 7 { return (daily, "frequency \(n) times in \(m) days imported as daily (the nearest)") }
        return (timesPerWeek(times), "frequency \(n) times in \(m) days imported as \(times) times per week (the nearest)")
    }

    /// The habit's name as Loop shows it, for the report.
    static func displayName(_ habit: Habit) -> String {
        let name = clean(habit.name)
        if !name.isEmpty { return name }
        let question = clean(habit.question)
        return question.isEmpty ? "Loop habit \(habit.position)" : question
    }

    /// Our name: Loop's name, else its question (Loop lets the name be empty when there is a
    /// question), else "Loop habit N"; control characters become spaces, trimmed, at most 100
    /// characters (code points, as PostgreSQL's char_length counts).
    static func ourName(_ habit: Habit) -> (String, String?) {
        var name = displayName(habit)
        var warning: String?
        if clean(habit.name).isEmpty {
            warning = clean(habit.question).isEmpty
                ? "habit \(habit.position) has neither name nor question; named \"\(name)\""
                : "\"\(name)\": no name in Loop; its question is the name"
        }
        if name.unicodeScalars.count > maximumNameLength {
            let short = clean(String(String.UnicodeScalarView(name.unicodeScalars.prefix(maximumNameLength))))
            warning = "\"\(name)\": name longer than \(maximumNameLength) characters, cut to \"\(short)\""
            name = short
        }
        return (name, warning)
    }

    static func clean(_ text: String) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            scalars.append(scalar.properties.generalCategory == .control ? " " : scalar)
        }
        let view = Array(scalars)
        guard let first = view.firstIndex(where: { !$0.properties.isWhitespace }),
              let last = view.lastIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        return String(String.UnicodeScalarView(view[first...last]))
    }
}
