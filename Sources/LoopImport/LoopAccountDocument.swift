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
    /// Numeric habits imported as measurable habits (at least or at most a target a day, sql/0029, sql/0031).
    public var measurableHabits = 0
    /// Check-ins: one per day of a numeric habit with an amount above 0.
    public var checkins = 0
    /// Days with a note (the Notes column), of any imported habit.
    public var notes = 0
    /// Names of the numeric habits not imported: a target per week or month, which this version
    /// does not build yet.
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
                ("measurable_habits", .int(measurableHabits)),
                ("checkins", .int(checkins)),
                ("notes", .int(notes)),
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
    /// periods start where the user's day begins in `timeZone` (the user's IANA zone; local
    /// midnight, or `dayStartMinutes` after it: profiles.day_starts_at), `today` is the user's
    /// today there (from PostgreSQL). Same input, same bytes: habit ids are name-based
    /// UUIDs of (user, Position, Name), arrays are sorted as the format says.
    public func accountDocument(user: UUID, timeZone: String, today: LoopDay,
                                dayStartMinutes: Int = 0, weekStartISODay: Int = 1) throws(LoopImportError) -> (document: JSONValue, report: LoopImportReport) {
        guard let zone = TimeZone(identifier: timeZone) else {
            throw LoopImportError(.invalidTimezone, "\"\(timeZone)\" is not an IANA time zone")
        }
        var report = LoopImportReport()
        var habitValues: [(id: String, value: JSONValue)] = []
        var completions: [(String, LoopDay)] = []
        var skips: [(String, LoopDay)] = []
        var checkins: [(id: String, template: String, date: LoopDay, value: String)] = []
        var notes: [(String, LoopDay, String)] = []

        for habit in habits {
            let label = Self.displayName(habit)
            // A numeric habit: measurable when its target is an amount a day or a week, at least or
            // at most (Loop's frequency of a numeric habit is its target's period: 1/1 a day, 1/7 a
            // week, sql/0033; others, such as a month, are not built).
            var target: Int64?  // thousandths
            let atMost = habit.targetType == "AT_MOST"
            let weekly = habit.type == .numerical && habit.numerator == 1 && habit.denominator == 7
            if habit.type == .numerical {
                guard habit.targetType.isEmpty || habit.targetType == "AT_LEAST" || atMost, habit.numerator == habit.denominator || weekly,
                      let value = Self.thousandths(habit.targetValue), value > 0 else {
                    report.numericHabitsNotImported.append(label)
                    let why = habit.numerator != habit.denominator && !weekly
                        ? "a target per \(habit.denominator) days" : "target \"\(habit.targetValue)\" is not a positive amount with at most 3 decimals"
                    report.warnings.append("\"\(label)\": numeric habit (unit \"\(habit.unit)\") not imported: \(why) is not supported yet")
                    continue
                }
                target = value
                report.measurableHabits += 1
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

            let (schedule, scheduleWarning) = target == nil ? Self.schedule(numerator: habit.numerator, denominator: habit.denominator)
                : weekly ? (.object(JSONObject([("type", .string("times_per_week")), ("times", .int(1))])), nil)
                : (.object(JSONObject([("type", .string("daily"))])), nil)
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
            var futureDropped = 0, archivedDropped = 0, notesCut = 0
            // A weekly target's entries (thousandths by day; 0: entered, nothing), its weeks'
            // completions decided below as the database decides them (habit.week_follow).
            var weekEntries: [LoopDay: Int64] = [:]
            for checkmark in checkmarks {
                let kept = checkmark.date <= today && (end.map { checkmark.date < $0 } ?? true)
                if kept, let note = Self.note(checkmark.note, cut: &notesCut) { notes.append((id, checkmark.date, note)) }
                if let target, let amount = checkmark.thousandths {
                    // Below 0: no entry. 0: an entry of nothing, which keeps an at-most day (a
                    // completion without check-ins, sql/0031) and does nothing for an at-least one.
                    guard amount > 0 || (atMost && amount == 0) else { continue }
                    if checkmark.date > today { futureDropped += 1; continue }
                    if let end, checkmark.date >= end { archivedDropped += 1; continue }
                    let value = min(amount, Self.maximumThousandths)
                    if weekly { weekEntries[checkmark.date] = value }
                    if amount == 0 { if !weekly { completions.append((id, checkmark.date)) }; continue }
                    // Loop's thousandths are exact decimals of three places; above our largest
                    // value, the day is full (the target met).
                    let checkinID = NameBasedUUID.v5(namespace: NameBasedUUID.loopHabitNamespace,
                                                     name: "\(id)\u{0}checkin\u{0}\(checkmark.date)").uuidString.lowercased()
                    checkins.append((checkinID, id, checkmark.date, Self.decimalText(value)))
                    if !weekly, atMost ? value <= target : value >= target { completions.append((id, checkmark.date)) }
                    continue
                }
                switch checkmark.value {
                case .yesManual?, .skip?:
                    if checkmark.date > today { futureDropped += 1; continue }
                    if let end, checkmark.date >= end { archivedDropped += 1; continue }
                    if checkmark.value == .yesManual { completions.append((id, checkmark.date)) } else { skips.append((id, checkmark.date)) }
                default:
                    report.checkmarksWithoutRow += 1
                }
            }
            if weekly, let target {
                completions += Self.weekCompletions(weekEntries, target: target, atMost: atMost, weekStartISODay: weekStartISODay).map { (id, $0) }
            }
            if futureDropped > 0 {
                report.futureCheckmarksDropped += futureDropped
                report.warnings.append("\"\(name)\": \(futureDropped) checkmark(s) after today (\(today)) not imported")
            }
            if notesCut > 0 {
                report.warnings.append("\"\(name)\": \(notesCut) note(s) longer than \(Self.maximumNoteLength) characters cut")
            }
            if archivedDropped > 0 {
                report.archivedTodayCheckmarksDropped += archivedDropped
                report.warnings.append("\"\(name)\": archived; \(archivedDropped) checkmark(s) of today not imported (the habit is inactive from today)")
            }
            report.habits += 1

            let period = JSONValue.object(JSONObject([
                ("started_at", .string(start.startRFC3339(in: zone, dayStartMinutes: dayStartMinutes))),
                ("ended_at", end.map { .string($0.startRFC3339(in: zone, dayStartMinutes: dayStartMinutes)) } ?? .null),
                ("schedule", schedule),
            ]))
            var members: [(String, JSONValue)] = [
                ("id", .string(id)),
                ("name", .string(name)),
                ("icon", .null),
                ("color", color),
                ("sort_order", .int(habit.position)),
                ("created_at", .null),
                ("updated_at", .null),
            ]
            if let target {
                let unit = Self.clean(habit.unit)
                members += [("kind", .string("measurable")),
                            ("unit", unit.isEmpty ? .null : .string(String(String.UnicodeScalarView(unit.unicodeScalars.prefix(30))))),
                            ("target", .string(Self.decimalText(target))), ("target_type", .string(atMost ? "at_most" : "at_least")),
                            ("target_period", .string(weekly ? "week" : "day"))]
            }
            // Archived in Loop: hidden here too (sql/0035), from the end of its period.
            if let end {
                members.append(("archived_at", .string(end.startRFC3339(in: zone, dayStartMinutes: dayStartMinutes))))
            }
            members.append(("periods", .array([period])))
            habitValues.append((id, .object(JSONObject(members))))
        }
        report.completions = completions.count
        report.skips = skips.count
        report.checkins = checkins.count
        report.notes = notes.count

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
            ("checkins", .array(checkins.sorted { $0.id < $1.id }.map {
                .object(JSONObject([("id", .string($0.id)), ("template_id", .string($0.template)), ("date", .string($0.date.description)),
                                    ("value", .string($0.value))]))
            })),
            ("notes", .array(notes.sorted { ($0.0, $0.1) < ($1.0, $1.1) }.map {
                .object(JSONObject([("template_id", .string($0.0)), ("date", .string($0.1.description)), ("note", .string($0.2))]))
            })),
        ]))
        return (document, report)
    }

    /// Our notes' most characters (habit_day_notes_note_check).
    static let maximumNoteLength = 1000

    /// A Loop note as ours: bidirectional control characters (our CHECK refuses them) and NUL
    /// dropped, at most 1000 characters (`cut` counts the ones cut); nil when nothing is left.
    static func note(_ text: String, cut: inout Int) -> String? {
        let bidi: Set<UInt32> = [0x061C, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069, 0]
        var scalars = String.UnicodeScalarView(text.unicodeScalars.filter { !bidi.contains($0.value) })
        guard !scalars.isEmpty else { return nil }
        if scalars.count > maximumNoteLength {
            scalars = String.UnicodeScalarView(scalars.prefix(maximumNoteLength))
            cut += 1
        }
        return String(scalars)
    }

    /// Our largest value, 999999999.999, in thousandths (habit_checkins_value_check).
    static let maximumThousandths: Int64 = 999_999_999_999

    /// Loop's Target Value (a Kotlin Double's text: "5.0", "9500.0", "2.5", "1.0E7") in
    /// thousandths, exact; nil when it is not a decimal of at most 3 places within our range.
    static func thousandths(_ text: String) -> Int64? {
        guard let value = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")), value >= 0 else { return nil }
        var scaled = value * 1000, rounded = Decimal()
        NSDecimalRound(&rounded, &scaled, 0, .plain)
        guard rounded == scaled, rounded <= Decimal(maximumThousandths) else { return nil }
        return NSDecimalNumber(decimal: rounded).int64Value
    }

    /// Thousandths as a decimal string of the account format: "9500", "2.5", "0.125".
    static func decimalText(_ thousandths: Int64) -> String {
        let whole = thousandths / 1000, part = thousandths % 1000
        guard part != 0 else { return String(whole) }
        var fraction = String(part)
        fraction = String(repeating: "0", count: 3 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(whole).\(fraction)"
    }

    /// The completions of a weekly target's weeks (the user's, from ISO weekday
    /// `weekStartISODay`) from its entries, as habit.week_follow keeps them (sql/0033): at least,
    /// the day the week's running sum reaches the target; at most, within the target, the first
    /// day with an amount and each day entered at 0.
    static func weekCompletions(_ entries: [LoopDay: Int64], target: Int64, atMost: Bool, weekStartISODay: Int) -> [LoopDay] {
        func weekStart(_ day: LoopDay) -> LoopDay {
            let isoWeekday = ((day.daysSinceUnixEpoch + 3) % 7 + 7) % 7 + 1  // 1970-01-01 was a Thursday
            return day.adding(days: -((isoWeekday - weekStartISODay + 7) % 7))
        }
        var result: [LoopDay] = []
        for days in Dictionary(grouping: entries.keys, by: weekStart).values {
            let sorted = days.sorted()
            if atMost {
                guard sorted.reduce(Int64(0), { $0 + entries[$1]! }) <= target else { continue }
                let first = sorted.first { entries[$0]! > 0 }
                result += sorted.filter { $0 == first || entries[$0]! == 0 }
            } else {
                var running: Int64 = 0
                for day in sorted {
                    running += entries[day]!
                    if running >= target { result.append(day); break }
                }
            }
        }
        return result
    }

    /// Loop's frequency is "numerator times in denominator days". Exact: 1/1 (and n/n) daily,
    /// n/7 times_per_week n (the user's weeks, as Loop's "n times per week" reads), any other n/m
    /// with n < m ≤ 365 times_in_days n in m (sql/0034: blocks of m days from the first day).
    /// Otherwise the nearest, with a warning: n > m daily; m > 365 the same rate in 365 days.
    static func schedule(numerator n: Int, denominator m: Int) -> (JSONValue, String?) {
        let daily: JSONValue = .object(JSONObject([("type", .string("daily"))]))
        func timesInDays(_ times: Int, _ days: Int) -> JSONValue {
            .object(JSONObject([("type", .string("times_in_days")), ("times", .int(times)), ("days", .int(days))]))
        }
        if n == m { return (daily, nil) }
        if m == 7, n < 7 { return (.object(JSONObject([("type", .string("times_per_week")), ("times", .int(n))])), nil) }
        if n > m { return (daily, "frequency \(n) times in \(m) days is more than daily; imported as daily") }
        if m <= 365 { return (timesInDays(n, m), nil) }
        let times = min(364, max(1, Int((Double(n) * 365 / Double(m)).rounded())))
        return (timesInDays(times, 365), "frequency \(n) times in \(m) days imported as \(times) times in 365 days (the nearest)")
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
