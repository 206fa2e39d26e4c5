import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Loop Habit Tracker's score (issue 33, item 5) against Loop's own numbers. There is no Loop
/// here to export from, so the fixture is made the way Loop makes it: `LoopScoreModel` is
/// uhabits-core's `ScoreList.recompute` written out day by day from its source, and each round
/// writes an export (Habits.csv, `NNN Name/Checkmarks.csv`, `NNN Name/Scores.csv`, as
/// HabitsCSVExporter writes them) of random histories with that model's scores; the export is
/// imported with `account.import`, and the database's score of every day must be the
/// Scores.csv row of that day, to the four decimals Loop prints. The database computes it
/// another way (folded over the events of the last days, sql/functions/scores.sql), so the two
/// agree only if both read Loop right; histories of up to 900 days reach past the database's
/// horizon (about 420 days for a daily habit), where it starts from 0.5.
@Suite("habit serve: Loop's habit score")
struct LoopScoreTests {
    /// One habit of a generated export.
    struct LoopHabit {
        var name: String
        var numerical: Bool
        var atMost: Bool
        var target: Double
        var numerator: Int
        var denominator: Int
        /// Loop's entry values by day, oldest first, from the first known day to today:
        /// yes/no 2 YES_MANUAL, 1 YES_AUTO, 0 NO, 3 SKIP, −1 UNKNOWN; numerical thousandths, 3 SKIP, −1 UNKNOWN.
        var values: [Int]
    }

    static let frequencies: [(Int, Int)] = [(1, 1), (1, 1), (3, 7), (1, 7), (6, 7), (2, 3), (1, 2), (2, 11), (5, 30), (1, 60)]

    static func randomHabit(_ index: Int, days: Int, using rng: inout SeededGenerator) -> LoopHabit {
        let numerical = Int.random(in: 0..<3, using: &rng) == 0
        var habit = LoopHabit(name: "Habit \(index)", numerical: numerical, atMost: false, target: 0, numerator: 1, denominator: 1, values: [])
        if numerical {
            habit.atMost = Bool.random(using: &rng)
            habit.denominator = Bool.random(using: &rng) ? 1 : 7
            habit.target = [1, 2.5, 5, 12][Int.random(in: 0..<4, using: &rng)] * Double(habit.denominator == 7 ? 4 : 1)
        } else {
            (habit.numerator, habit.denominator) = frequencies[Int.random(in: 0..<frequencies.count, using: &rng)]
        }
        let doneRate = Double.random(in: 0.1...0.9, using: &rng)
        for day in 0..<days {
            let draw = Double.random(in: 0..<1, using: &rng)
            // The first day is a known entry: the export's first row, where Loop's scores start.
            if draw < 0.08, day > 0 {
                habit.values.append(-1)
            } else if draw < 0.16 {
                habit.values.append(3)
            } else if numerical {
                habit.values.append(draw < 0.16 + doneRate * 0.84 ? [250, 1000, 2500, 4000, 6000, 15000][Int.random(in: 0..<6, using: &rng)] : 0)
            } else {
                habit.values.append(draw < 0.16 + doneRate * 0.84 ? 2 : (habit.numerator < habit.denominator && Bool.random(using: &rng) ? 1 : 0))
            }
        }
        return habit
    }

    /// The export's files, as `account.import {source: "loop", files}` takes them.
    static func files(_ habits: [LoopHabit], today: CalendarDate) -> [(String, WireJSON)] {
        var list = "Position,Name,Type,Question,Description,FrequencyNumerator,FrequencyDenominator,Color,Unit,Target Type,Target Value,Archived?\n"
        var files: [(String, WireJSON)] = []
        for (index, habit) in habits.enumerated() {
            let position = String(format: "%03d", index + 1)
            list += [position, habit.name, habit.numerical ? "NUMERICAL" : "YES_NO", "", "", String(habit.numerator), String(habit.denominator),
                     "#1976D2", habit.numerical ? "km" : "", habit.numerical ? (habit.atMost ? "AT_MOST" : "AT_LEAST") : "",
                     habit.numerical ? String(habit.target) : "", "false"].joined(separator: ",") + "\n"
            let first = today.adding(days: -(habit.values.count - 1))
            var checkmarks = "Date,Value,Notes\n"
            for (offset, value) in habit.values.enumerated().reversed() where value != -1 {
                let text = habit.numerical ? String(value)
                    : ["NO", "YES_AUTO", "YES_MANUAL", "SKIP"][value]
                checkmarks += "\(first.adding(days: offset)),\(text),\n"
            }
            var scores = "Date,Score\n"
            for (offset, score) in LoopScoreModel.scores(habit).enumerated().reversed() {
                scores += "\(first.adding(days: offset)),\(String(format: "%.4f", score))\n"
            }
            files.append(("\(position) \(habit.name)/Checkmarks.csv", .string(checkmarks)))
            files.append(("\(position) \(habit.name)/Scores.csv", .string(scores)))
        }
        files.insert(("Habits.csv", .string(list)), at: 0)
        return files
    }

    /// Scores.csv read back: the score text by date.
    static func scoreRows(_ text: String) -> [String: String] {
        var rows: [String: String] = [:]
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: ",")
            rows[String(fields[0])] = String(fields[1])
        }
        return rows
    }

    /// Imports the export's files for `user` (`account.import`, merge) and answers each habit's id
    /// by name, in the order of `habits`.
    static func importExport(_ session: WorkerSession, user: UUID, _ habits: [LoopHabit], _ files: [(String, WireJSON)]) throws -> [UUID] {
        _ = try session.worker.call("account.import", params(user, ["source": "loop", "mode": "merge",
                                                                    "files": .object(files.map { WireJSON.Member($0.0, $0.1) })]))
        return try habits.map { habit in
            try session.admin.queryOne("SELECT id FROM habit_templates WHERE user_id = \(user) AND name = \(habit.name)").decode(UUID.self, at: 0)
        }
    }

    /// The database's score (`habit.habit_scores`) of every day from the habit's first to
    /// `today` against its Scores.csv in `files` (every day compared): Loop's rows, and the days that differ.
    static func compareDays(_ session: WorkerSession, user: UUID, template: UUID, _ habit: LoopHabit, today: CalendarDate,
                            _ files: [(String, WireJSON)]) throws -> (expected: [String: String], mismatches: [String]) {
        let expected = scoreRows(try #require(files.first { $0.0.hasSuffix("\(habit.name)/Scores.csv") }?.1.stringValue))
        let first = today.adding(days: -(habit.values.count - 1))
        let rows = try session.admin.query("""
            SELECT d::date::text, s.score::text FROM generate_series(\(first)::date, \(today)::date, interval '1 day') d
            CROSS JOIN LATERAL habit.habit_scores(\(user), \(template), d::date) s ORDER BY 1
            """)
        var mismatches: [String] = []
        for row in rows {
            let date = try row.decode(String.self, at: 0), score = try row.decode(String.self, at: 1)
            if expected[date] != score { mismatches.append("\(date): \(score), Loop \(expected[date] ?? "none")") }
        }
        #expect(rows.count == expected.count)
        return (expected, mismatches)
    }

    @Test("random Loop exports: after import, every day's score is the export's Scores.csv row", arguments: [UInt64(11), 12, 13, 14])
    func scoresEqualLoopsExport(seed: UInt64) throws {
        try WorkerSession.with { session in
            var rng = SeededGenerator(seed: seed)
            let user = UUID()
            let today = try session.today()
            let habits = (1...5).map { Self.randomHabit($0, days: Int.random(in: 1...900, using: &rng), using: &rng) }
            let files = Self.files(habits, today: today)
            let templates = try Self.importExport(session, user: user, habits, files)
            for (index, habit) in habits.enumerated() {
                let template = templates[index]
                let (expected, mismatches) = try Self.compareDays(session, user: user, template: template, habit, today: today, files)
                let first = today.adding(days: -(habit.values.count - 1))
                #expect(mismatches.isEmpty, "seed \(seed), \(habit.name) (\(habit.numerical ? "numerical \(habit.atMost ? "at most" : "at least") \(habit.target)" : "yes/no") \(habit.numerator)/\(habit.denominator)): \(mismatches.prefix(5)); values \(habit.values)")
                // habits.stats answers the same score, on a day drawn from the history.
                let day = first.adding(days: Int.random(in: 0..<habit.values.count, using: &rng))
                let stats = try session.worker.call("habits.stats", params(user, ["id": .uuid(template), "date": .string(day.description), "include": ["score"]]))
                #expect(stats["habits"]?[0]?["score"]?.stringValue == expected[day.description], "habit \(index) on \(day): \(stats)")
            }
        }
    }

    @Test("score checkpoints (sql/0038): with the batch's checkpoints every day's score is still the export's Scores.csv row",
          arguments: [UInt64(21), 22, 23])
    func scoresFromCheckpointsEqualLoopsExport(seed: UInt64) throws {
        try WorkerSession.with { session in
            var rng = SeededGenerator(seed: seed)
            let user = UUID()
            let today = try session.today()
            let habits = (1...6).map { Self.randomHabit($0, days: Int.random(in: 40...700, using: &rng), using: &rng) }
            let files = Self.files(habits, today: today)
            let templates = try Self.importExport(session, user: user, habits, files)
            let lag = Int.random(in: 1...30, using: &rng)
            let written = try session.admin.queryOne("SELECT habit.score_checkpoints_advance(\(user), \(lag)::integer, 7)").decode(Int.self, at: 0)
            #expect(written == habits.filter { $0.values.count > lag }.count)
            for (habit, template) in zip(habits, templates) {
                // Every day from the checkpoint on folds from it; the days before do not.
                let (_, mismatches) = try Self.compareDays(session, user: user, template: template, habit, today: today, files)
                #expect(mismatches.isEmpty, "seed \(seed), lag \(lag), \(habit.name) \(habit.numerator)/\(habit.denominator) numerical \(habit.numerical): \(mismatches.prefix(5))")
            }
        }
    }

    /// A model of the checkpoints' upkeep: daily yes/no habits imported from a Loop export,
    /// then random writes of past days (done, undone, skipped, unskipped: before, on and after
    /// the checkpoint) through the worker, interleaved with batch runs of random lags; after each
    /// step the score of today and of random days, read through `habits.stats` as the user,
    /// must be what Loop's recompute (`LoopScoreModel`) gives for the history as it now is.
    @Test("score checkpoints follow writes in the past and batch runs (model, random interleavings)", arguments: [UInt64(31), 32, 33])
    func checkpointsFollowWrites(seed: UInt64) throws {
        try WorkerSession.with { session in
            var rng = SeededGenerator(seed: seed)
            let user = UUID()
            let today = try session.today()
            var habits = (1...3).map { index -> LoopHabit in
                var habit = Self.randomHabit(index, days: Int.random(in: 30...500, using: &rng), using: &rng)
                (habit.numerical, habit.atMost, habit.numerator, habit.denominator) = (false, false, 1, 1)
                habit.values = habit.values.map { $0 == -1 || $0 == 3 ? $0 : $0 == 2 || $0 >= 250 ? 2 : 0 }
                return habit
            }
            let templates = try Self.importExport(session, user: user, habits, Self.files(habits, today: today))
            func checkpoints() throws -> Int {
                try session.admin.queryOne("SELECT count(*) FROM habit.score_checkpoints WHERE user_id = \(user)").decode(Int.self, at: 0)
            }
            var checkedFromCheckpoint = 0, forgotten = 0
            for step in 0..<60 {
                let index = Int.random(in: 0..<habits.count, using: &rng)
                let template = templates[index]
                if Int.random(in: 0..<5, using: &rng) == 0 {
                    let lag = Int.random(in: 1...40, using: &rng), every = Int.random(in: 1...10, using: &rng)
                    _ = try session.admin.queryOne("SELECT habit.score_checkpoints_advance(\(user), \(lag)::integer, \(every)::integer)")
                } else {
                    // A day of the history, mostly the last few weeks (where checkpoints are).
                    let count = habits[index].values.count
                    let back = Bool.random(using: &rng) ? Int.random(in: 0..<min(count, 60), using: &rng) : Int.random(in: 0..<count, using: &rng)
                    let offset = count - 1 - back
                    let day = today.adding(days: -back)
                    let before = try checkpoints()
                    switch habits[index].values[offset] {
                    case 2:
                        _ = try session.worker.call("completions.set", params(user, ["template_id": .uuid(template), "date": .string(day.description), "completed": false]))
                        habits[index].values[offset] = 0
                    case 3:
                        _ = try session.worker.call("skips.set_range", params(user, ["template_id": .uuid(template), "from": .string(day.description),
                                                                                      "to": .string(day.description), "skipped": false]))
                        habits[index].values[offset] = 0
                    default:
                        if Bool.random(using: &rng) {
                            _ = try session.worker.call("completions.set", params(user, ["template_id": .uuid(template), "date": .string(day.description), "completed": true]))
                            habits[index].values[offset] = 2
                        } else {
                            _ = try session.worker.call("skips.set_range", params(user, ["template_id": .uuid(template), "from": .string(day.description),
                                                                                          "to": .string(day.description), "skipped": true]))
                            habits[index].values[offset] = 3
                        }
                    }
                    if try checkpoints() < before { forgotten += 1 }
                }
                let expected = LoopScoreModel.scores(habits[index])
                let count = habits[index].values.count
                for back in [0] + (0..<3).map({ _ in Int.random(in: 0..<count, using: &rng) }) {
                    let day = today.adding(days: -back)
                    let fromCheckpoint = try session.admin.queryOne("""
                        SELECT EXISTS (SELECT 1 FROM habit.score_checkpoints WHERE user_id = \(user) AND template_id = \(template) AND as_of <= \(day))
                        """).decode(Bool.self, at: 0)
                    if fromCheckpoint { checkedFromCheckpoint += 1 }
                    let stats = try session.worker.call("habits.stats", params(user, ["id": .uuid(template), "date": .string(day.description), "include": ["score"]]))
                    let want = String(format: "%.4f", expected[count - 1 - back])
                    #expect(stats["habits"]?[0]?["score"]?.stringValue == want,
                            "seed \(seed), step \(step), habit \(index) on \(day) (checkpoint: \(fromCheckpoint)): \(stats); values \(habits[index].values.suffix(60))")
                }
            }
            // The walk exercised what it is about: reads from a checkpoint, and writes that forgot one.
            #expect(checkedFromCheckpoint > 5, "seed \(seed): \(checkedFromCheckpoint) reads from a checkpoint")
            #expect(forgotten > 0, "seed \(seed): no write forgot a checkpoint")
        }
    }

    @Test("hand-computed scores: a daily habit done n days running is 1 − 0.5^(n/13); a skip freezes it")
    func handComputed() throws {
        try WorkerSession.with { session in
            let user = UUID()
            let today = try session.today()
            let daily = try #require(try session.worker.createHabit(user: user, name: "Daily", extra: [.init("activated_at", .string("\(today.adding(days: -30))T12:00:00Z"))]).habitID)
            for back in [4, 3, 2, 1] {
                _ = try session.worker.call("completions.set", params(user, ["template_id": .uuid(daily), "date": .string(today.adding(days: -back).description), "completed": true]))
            }
            func score(_ template: UUID, _ day: CalendarDate) throws -> String? {
                try session.worker.call("habits.stats", params(user, ["id": .uuid(template), "date": .string(day.description), "include": ["score"]]))["habits"]?[0]?["score"]?.stringValue
            }
            // 1 − 0.5^(1/13) = 0.0519…, 1 − 0.5^(4/13) = 0.19206…; the day before the first: 0.
            #expect(try score(daily, today.adding(days: -5)) == "0.0000")
            #expect(try score(daily, today.adding(days: -4)) == "0.0519")
            #expect(try score(daily, today.adding(days: -1)) == "0.1921")
            // Today not done: × 0.5^(1/13) = 0.18209…; skipped: frozen at 0.19206…
            #expect(try score(daily, today) == "0.1821")
            _ = try session.worker.call("skips.set_range", params(user, ["template_id": .uuid(daily), "from": .string(today.description),
                                                                          "to": .string(today.description), "skipped": true]))
            #expect(try score(daily, today) == "0.1921")
            // Before the habit's first day: 0.
            #expect(try score(daily, today.adding(days: -40)) == "0.0000")
        }
    }
}

/// uhabits-core's `ScoreList.recompute` (iSoron/uhabits 08113a57ace0f875a8d9c839c7a48d8896f4f6b4),
/// day by day from the first known day, as Loop runs it; `Score.compute` for each unskipped day.
enum LoopScoreModel {
    static func scores(_ habit: LoopScoreTests.LoopHabit) -> [Double] {
        // Frequency(n, n) is 1/1 in Loop.
        var numerator = habit.numerator == habit.denominator ? 1 : habit.numerator
        var denominator = habit.numerator == habit.denominator ? 1 : habit.denominator
        let frequency = Double(numerator) / Double(denominator)
        if !habit.numerical && frequency < 1 {
            numerator *= 2
            denominator *= 2
        }
        let multiplier = pow(0.5, frequency.squareRoot() / 13)
        var previous = habit.numerical && habit.atMost ? 1.0 : 0.0
        var rollingSum = 0.0
        var scores: [Double] = []
        let values = habit.values
        for index in values.indices {
            let value = values[index]
            var completed: Double?
            if habit.numerical {
                rollingSum += Double(max(0, value))
                if index - denominator >= 0 { rollingSum -= Double(max(0, values[index - denominator])) }
                let sum = rollingSum / 1000
                if value != 3 {
                    completed = habit.atMost ? min(1, max(0, 1 - (sum - habit.target) / habit.target)) : min(1, sum / habit.target)
                }
            } else {
                if value == 2 { rollingSum += 1 }
                if index - denominator >= 0, values[index - denominator] == 2 { rollingSum -= 1 }
                if value != 3 { completed = min(1, rollingSum / Double(numerator)) }
            }
            if let completed { previous = previous * multiplier + completed * (1 - multiplier) }
            scores.append(previous)
        }
        return scores
    }
}
