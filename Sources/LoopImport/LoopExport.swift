import Foundation

/// A Loop Habit Tracker CSV export, read. Mirrors Loop's exporter (uhabits-core, read at
/// iSoron/uhabits: io/HabitsCSVExporter.kt @ 035b392ece8fa80c941996a016a9461e4fe1f9de and
/// models/HabitList.kt `writeCSV` @ 0daa4f6a2facfec064fdba0989ea73b0c04e22d6; docs/admin.md
/// "Importing from Loop Habit Tracker" has the details):
///
/// - `Habits.csv`: every habit, header `Position,Name,Type,Question,Description,
///   FrequencyNumerator,FrequencyDenominator,Color,Unit,Target Type,Target Value,Archived?`
///   (older versions: `Position,Name,Question,Description,NumRepetitions,Interval,Color`, no
///   type or archived flag). Position is `%03d` of the 1-based list index.
/// - `NNN Name/Checkmarks.csv` for each *selected* habit: NNN its Position, Name its name
///   with everything but `[ a-zA-Z0-9._-]` removed (so non-ASCII names leave only "NNN"),
///   header `Date,Value,Notes`, one row per known day, newest first; Value is the entry's
///   name (`YES_MANUAL`, `YES_AUTO`, `NO`, `SKIP`, `UNKNOWN`) or, in older versions without a
///   header, its number (2, 1, 0, 3 (−3 before 2.1), −1); numeric habits write amounts × 1000.
/// - `Scores.csv`, `NNN Name/Scores.csv` and the top-level `Checkmarks.csv` are derived
///   (scores; a date × habit grid whose header joins names unquoted) and are not read.
public struct LoopExport: Sendable, Equatable {
    public enum HabitType: String, Sendable { case yesNo = "YES_NO", numerical = "NUMERICAL" }

    public enum CheckmarkValue: String, Sendable, CaseIterable {
        case yesManual = "YES_MANUAL", yesAuto = "YES_AUTO", no = "NO", skip = "SKIP", unknown = "UNKNOWN"
    }

    public struct Checkmark: Sendable, Equatable {
        public var date: LoopDay
        /// A yes/no habit's entry; a numeric habit's SKIP (3, or −3 before Loop 2.1) and
        /// UNKNOWN (−1 and other negatives); nil for a numeric habit's amount.
        public var value: CheckmarkValue?
        /// A numeric habit's amount in thousandths, as Loop stores and exports it (9500000 is
        /// 9,500): nil for yes/no habits, skips and unknown days.
        public var thousandths: Int64? = nil
        /// The Notes column (Loop 2.1+), "" when none.
        public var note: String = ""
    }

    public struct Habit: Sendable, Equatable {
        public var position: Int
        public var name: String
        public var question: String
        public var type: HabitType
        public var numerator: Int
        public var denominator: Int
        public var color: String
        public var unit: String
        /// A numeric habit's Target Type (AT_LEAST or AT_MOST) and Target Value as Loop writes
        /// it (a Kotlin Double: "5.0", "9500.0", "1.0E7"); "" for yes/no habits.
        public var targetType: String = ""
        public var targetValue: String = ""
        public var archived: Bool
        /// nil when the export has no folder for the habit (Loop exports the folders of the
        /// habits selected in its UI, Habits.csv lists them all).
        public var checkmarks: [Checkmark]?
        /// Where the habit's row is, for messages.
        public var line: Int
    }

    /// In Position order.
    public var habits: [Habit]

    public static let maximumHabits = 10_000
    public static let maximumCheckmarks = 2_000_000

    /// Reads the zip file Loop's "Export as CSV" writes.
    public static func read(zip: Data, limits: ZipReader.Limits = ZipReader.Limits()) throws(LoopImportError) -> LoopExport {
        let entries = try ZipReader.entries([UInt8](zip), limits: limits)
        var files: [String: [UInt8]] = [:]
        // macOS's Archive Utility adds __MACOSX/ resource forks when a user re-zips the folder.
        for (name, bytes) in entries where name.hasSuffix(".csv") && !name.hasPrefix("__MACOSX/") { files[name] = bytes }
        return try LoopExport(csvFiles: files)
    }

    /// The export's CSV files by their names inside the zip (`Habits.csv`,
    /// `001 Run/Checkmarks.csv`), as `account.import {source: "loop", files: {name: text}}` sends them.
    public init(files: [String: String]) throws(LoopImportError) {
        var bytes: [String: [UInt8]] = [:]
        for (name, text) in files { bytes[name] = Array(text.utf8) }
        try self.init(csvFiles: bytes)
    }

    init(csvFiles files: [String: [UInt8]]) throws(LoopImportError) {
        // Some unzip tools (and people) put everything in one folder: accept a single common
        // top folder when Habits.csv is in it.
        var files = files
        if files["Habits.csv"] == nil {
            let tops = Set(files.keys.map { $0.split(separator: "/", maxSplits: 1).first.map(String.init) ?? $0 })
            if tops.count == 1, let top = tops.first, files["\(top)/Habits.csv"] != nil {
                var inner: [String: [UInt8]] = [:]
                for (name, bytes) in files where name.hasPrefix(top + "/") && name.count > top.count + 1 {
                    inner[String(name.dropFirst(top.count + 1))] = bytes
                }
                files = inner
            }
        }
        guard let habitsBytes = files["Habits.csv"] else {
            throw LoopImportError(.missingHabitsFile, "no Habits.csv: not a Loop Habit Tracker CSV export")
        }
        var habits = try Self.habits(CSVReader.records(habitsBytes, file: "Habits.csv"))
        var indexByPosition: [Int: Int] = [:]
        for (index, habit) in habits.enumerated() { indexByPosition[habit.position] = index }

        var checkmarkCount = 0
        for name in files.keys.sorted() {
            let parts = name.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == 2, parts[1] == "Checkmarks.csv" else { continue }
            let folder = parts[0]
            let digits = folder.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, digits.count == folder.count || folder.dropFirst(digits.count).first == " ",
                  let position = Int(digits), let index = indexByPosition[position] else {
                throw LoopImportError(.unknownHabitFolder, "folder \"\(folder)\" is not \"NNN Name\" for a Position in Habits.csv", file: name)
            }
            guard habits[index].checkmarks == nil else {
                throw LoopImportError(.duplicateHabitFolder, "a second folder for habit \(digits)", file: name)
            }
            let checkmarks = try Self.checkmarks(CSVReader.records(files[name]!, file: name), file: name,
                                                 numeric: habits[index].type == .numerical)
            checkmarkCount += checkmarks.count
            guard checkmarkCount <= Self.maximumCheckmarks else {
                throw LoopImportError(.tooManyCheckmarks, "more than \(Self.maximumCheckmarks) checkmarks", file: name)
            }
            habits[index].checkmarks = checkmarks
        }
        self.habits = habits
    }

    public init(habits: [Habit]) { self.habits = habits }

    // MARK: - Habits.csv

    static func habits(_ records: [CSVRecord]) throws(LoopImportError) -> [Habit] {
        let file = "Habits.csv"
        let rows = records.filter { $0.fields != [""] }
        guard let header = rows.first else {
            throw LoopImportError(.missingColumn, "Habits.csv is empty: no header", file: file, line: 1)
        }
        func column(_ names: String...) -> Int? { names.lazy.compactMap { header.fields.firstIndex(of: $0) }.first }
        func required(_ names: String...) throws(LoopImportError) -> Int {
            for name in names { if let index = header.fields.firstIndex(of: name) { return index } }
            throw LoopImportError(.missingColumn, "no column \(names.map { "\"\($0)\"" }.joined(separator: " or "))", file: file, line: header.line)
        }
        let position = try required("Position"), name = try required("Name"), question = try required("Question")
        let numerator = try required("FrequencyNumerator", "NumRepetitions")
        let denominator = try required("FrequencyDenominator", "Interval")
        let color = try required("Color")
        let type = column("Type"), unit = column("Unit"), archived = column("Archived?")
        let targetType = column("Target Type"), targetValue = column("Target Value")

        guard rows.count - 1 <= maximumHabits else {
            throw LoopImportError(.tooManyHabits, "\(rows.count - 1) habits; at most \(maximumHabits)", file: file)
        }
        var habits: [Habit] = []
        var seen = Set<Int>()
        for row in rows.dropFirst() {
            guard row.fields.count == header.fields.count else {
                throw LoopImportError(.wrongColumnCount, "\(row.fields.count) fields; the header has \(header.fields.count)",
                                      file: file, line: row.line)
            }
            func error(_ reason: LoopImportError.Reason, _ index: Int, _ message: String) -> LoopImportError {
                LoopImportError(reason, message, file: file, line: row.line, column: row.columns[index])
            }
            let f = row.fields
            guard f[position].allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int(f[position]), number >= 1, number <= 999_999 else {
                throw error(.invalidPosition, position, "Position \"\(f[position])\" is not a positive number")
            }
            guard seen.insert(number).inserted else { throw error(.duplicatePosition, position, "Position \(number) appears twice") }
            var habitType = HabitType.yesNo
            if let type {
                guard let parsed = HabitType(rawValue: f[type]) else {
                    throw error(.invalidHabitType, type, "Type \"\(f[type])\" is not YES_NO or NUMERICAL")
                }
                habitType = parsed
            }
            guard let n = Int(f[numerator]), let m = Int(f[denominator]), n >= 1, m >= 1, n <= 100_000, m <= 100_000 else {
                throw error(.invalidFrequency, Int(f[numerator]) == nil || (Int(f[numerator]) ?? 0) < 1 ? numerator : denominator,
                            "frequency \"\(f[numerator])/\(f[denominator])\" is not two positive whole numbers")
            }
            var isArchived = false
            if let archived {
                switch f[archived] {
                case "true": isArchived = true
                case "false", "": isArchived = false
                default: throw error(.invalidArchived, archived, "Archived? \"\(f[archived])\" is not true or false")
                }
            }
            habits.append(Habit(position: number, name: f[name], question: f[question], type: habitType,
                                numerator: n, denominator: m, color: f[color], unit: unit.map { f[$0] } ?? "",
                                targetType: targetType.map { f[$0] } ?? "", targetValue: targetValue.map { f[$0] } ?? "",
                                archived: isArchived, checkmarks: nil, line: row.line))
        }
        return habits.sorted { $0.position < $1.position }
    }

    // MARK: - NNN Name/Checkmarks.csv

    static func checkmarks(_ records: [CSVRecord], file: String, numeric: Bool) throws(LoopImportError) -> [Checkmark] {
        var rows = records.filter { $0.fields != [""] }[...]
        if let first = rows.first, first.fields.first == "Date" { rows = rows.dropFirst() }
        var result: [Checkmark] = []
        var seen = Set<LoopDay>()
        for row in rows {
            guard row.fields.count >= 2 else {
                throw LoopImportError(.wrongColumnCount, "\(row.fields.count) field; expected Date,Value[,Notes]", file: file, line: row.line)
            }
            // Loop's timestamps are milliseconds since 1970: an earlier date is not Loop's.
            guard let date = LoopDay(iso: row.fields[0]), date.daysSinceUnixEpoch >= 0 else {
                throw LoopImportError(.invalidDate, "\"\(row.fields[0])\" is not a date YYYY-MM-DD from 1970 on", file: file, line: row.line, column: row.columns[0])
            }
            guard seen.insert(date).inserted else {
                throw LoopImportError(.duplicateDate, "\(date) appears twice", file: file, line: row.line, column: row.columns[0])
            }
            var value: CheckmarkValue?
            var thousandths: Int64?
            if numeric {
                // Loop writes a numeric entry's Int: the amount × 1000, or its special values.
                guard let number = Int64(row.fields[1]) else {
                    throw LoopImportError(.invalidCheckmarkValue, "\"\(row.fields[1])\" is not a numeric habit's value (thousandths)",
                                          file: file, line: row.line, column: row.columns[1])
                }
                switch number {
                case 3, -3: value = .skip
                case ..<0: value = .unknown
                default: thousandths = number
                }
            } else {
                let text = row.fields[1]
                value = CheckmarkValue(rawValue: text) ?? {
                    switch text {
                    case "2": .yesManual
                    case "1": .yesAuto
                    case "0": .no
                    case "3", "-3": .skip
                    case "-1": .unknown
                    default: nil
                    }
                }()
                guard value != nil else {
                    throw LoopImportError(.invalidCheckmarkValue,
                                          "\"\(text)\" is not YES_MANUAL, YES_AUTO, NO, SKIP or UNKNOWN (or 2, 1, 0, 3, -1)",
                                          file: file, line: row.line, column: row.columns[1])
                }
            }
            result.append(Checkmark(date: date, value: value, thousandths: thousandths, note: row.fields.count > 2 ? row.fields[2] : ""))
        }
        return result
    }
}
