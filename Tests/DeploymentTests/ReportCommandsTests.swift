import Foundation
import HabitReports
import HabitStore
import PNGTestSupport
import PostgresClient
import TestSupport
import Testing

/// `habit report calendar|weekly` as spawned commands against a real database, their SVG
/// rendered by rsvg-convert and known cells and weeks checked pixel by pixel.
@Suite("deployment: habit report calendar and weekly, rendered")
struct ReportCommandsTests {
    static func habit(_ arguments: [String]) throws -> WorkerProcess.CommandResult {
        try WorkerProcess.run(try WorkerProcess.binaryPath(), arguments, environment: WorkerProcess.childEnvironment())
    }

    /// Runs the command into a temporary file and renders it.
    static func render(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> PNGImage {
        let directory = NSTemporaryDirectory() + "habit-report-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try habit(arguments + ["--out", directory + "/picture.svg"])
        try #require(result.status == 0, "habit \(arguments): \(result.stderr)", sourceLocation: sourceLocation)
        return try PNGImage.rendering(svgFile: directory + "/picture.svg", pngFile: directory + "/picture.png")
    }

    static func reportDate(_ date: CalendarDate) -> ReportDate { ReportDate(dayNumber: date.daysSinceUnixEpoch) }

    /// A user in UTC with Sunday weeks and two daily habits on since 40 days ago; over the 50
    /// days before today: day −10 both done, −9 nothing (missed), −8 one of two done, −7 both
    /// skipped, −3 habit "b" done only; days before the habits existed are neutral.
    @Test("calendar: a fully done day is the darkest shade, a missed day the lightest, neutral and all-skipped days blank; --habit narrows it")
    func calendar() throws {
        try TestDatabase.with { database in
            let admin = try database.connect()
            let user = UUID()
            let today = try admin.queryOne("SELECT (now() AT TIME ZONE 'UTC')::date").decode(CalendarDate.self, at: 0)
            var habits: [UUID] = []
            try admin.withTransaction { connection in
                try connection.execute("SET LOCAL habit.backfill = 'on'")
                try connection.execute("INSERT INTO public.profiles (user_id, timezone, week_start) VALUES (\(user), 'UTC', 'sunday')")
                // sort_order: the title lists the habits in the daily list's order, and two
                // created in one transaction share created_at (then the random id decides).
                for (position, name) in ["a", "b"].enumerated() {
                    habits.append(try connection.queryOne("""
                        INSERT INTO public.habit_templates (user_id, name, activated_at, sort_order)
                        VALUES (\(user), \(name), now() - interval '40 days', \(position)) RETURNING id
                        """).decode(UUID.self, at: 0))
                }
                for (offset, done) in [(-10, habits), (-8, [habits[0]]), (-3, [habits[1]])] {
                    for habit in done {
                        try connection.execute("""
                            INSERT INTO public.habit_completions (user_id, template_id, completed_date)
                            VALUES (\(user), \(habit), \(today.adding(days: offset)))
                            """)
                    }
                }
                for habit in habits {
                    try connection.execute("""
                        INSERT INTO public.habit_skips (user_id, template_id, skipped_date) VALUES (\(user), \(habit), \(today.adding(days: -7)))
                        """)
                }
            }
            let from = today.adding(days: -50), to = today.adding(days: -1)
            let url = database.url
            let range = ["--database-url", url, "--user", user.lowercaseString, "--from", from.description, "--to", to.description]
            // The layout the command draws: the header (names, user, range, zone, today), the range
            // and the user's week start decide every cell.
            func layout(_ names: [String], from: CalendarDate = from, to: CalendarDate = to) -> CalendarHeatmap {
                let header = CalendarHeatmap.header(habitNames: names, oneHabit: names.count == 1, user: user.lowercaseString,
                                                    from: Self.reportDate(from), to: Self.reportDate(to), zone: "UTC",
                                                    weekStart: .sunday, today: Self.reportDate(today))
                return CalendarHeatmap(title: header.title, subtitle: header.subtitle, caption: header.caption, days: [from, to].map {
                    CalendarHeatmap.Day(date: Self.reportDate($0), due: 0, done: 0, skipped: 0, level: 0)
                }, weekStart: .sunday, today: Self.reportDate(today))
            }
            func cell(_ layout: CalendarHeatmap, _ offset: Int) -> (x: Double, y: Double)? {
                layout.cellCentre(for: Self.reportDate(today.adding(days: offset)))
            }
            /// A missed day's shade, read above its ×.
            func shadeOf(_ layout: CalendarHeatmap, _ offset: Int) -> (x: Double, y: Double)? {
                layout.cellOrigin(for: Self.reportDate(today.adding(days: offset))).map { ($0.x + 6.5, $0.y + 1.5) }
            }

            let both = layout(["a", "b"])
            let all = try Self.render(["report", "calendar"] + range)
            expectColour(all, at: cell(both, -10), CalendarHeatmap.shades[4], "both done")
            expectColour(all, at: shadeOf(both, -9), CalendarHeatmap.shades[0], "missed")
            expectColour(all, at: cell(both, -9), CalendarHeatmap.missedMark, "missed: its ×")
            expectColour(all, at: cell(both, -8), CalendarHeatmap.shades[2], "one of two done")
            expectColour(all, at: cell(both, -7), CalendarHeatmap.background, "both skipped")
            expectColour(all, at: cell(both, -45), CalendarHeatmap.background, "before the habits existed")
            // Sunday weeks: a Sunday is in the top row.
            let sunday = (0..<7).map { today.adding(days: -20 + $0) }.first { $0.isoWeekday == 7 }!
            #expect(both.cellOrigin(for: Self.reportDate(sunday))?.y == both.gridTop)

            let onlyB = try Self.render(["report", "calendar"] + range + ["--habit", habits[1].lowercaseString])
            let b = layout(["b"])
            expectColour(onlyB, at: cell(b, -3), CalendarHeatmap.shades[4], "b done")
            expectColour(onlyB, at: shadeOf(b, -8), CalendarHeatmap.shades[0], "b missed")

            // Up to ten days ahead: the title names the habits and the caption the user; today is
            // framed; the days after it are dots, not missed days (stats_calendar counts them due).
            let ahead = ["--database-url", url, "--user", user.lowercaseString, "--from", today.adding(days: -20).description,
                         "--to", today.adding(days: 10).description]
            let svg = try Self.habit(["report", "calendar"] + ahead + ["--out", "-"])
            try #require(svg.status == 0, "\(svg.stderr)")
            #expect(svg.stdout.contains(">Habit calendar: a and b</text>") && svg.stdout.contains(">user \(user.lowercaseString)</text>"),
                    "\(svg.stdout.prefix(1200))")
            #expect(svg.stdout.contains("today \(today) in UTC"), "the subtitle says what today is")
            let future = layout(["a", "b"], from: today.adding(days: -20), to: today.adding(days: 10))
            let picture = try Self.render(["report", "calendar"] + ahead)
            expectColour(picture, at: cell(future, 3), CalendarHeatmap.futureDot, "three days ahead: a dot")
            let ahead3 = try #require(future.cellOrigin(for: Self.reportDate(today.adding(days: 3))))
            expectColour(picture, at: (ahead3.x + 1.5, ahead3.y + 1.5), CalendarHeatmap.background, "three days ahead: no shade")
            let now = try #require(future.cellOrigin(for: Self.reportDate(today)))
            expectColour(picture, at: (now.x + 6.5, now.y - 1.5), CalendarHeatmap.todayFrame, "today's frame")
            // Today, nothing done yet: the lightest shade without the ×.
            expectColour(picture, at: cell(future, 0), CalendarHeatmap.shades[0], "today, not done yet")

            let stranger = try Self.habit(["report", "calendar"] + range + ["--habit", UUID().uuidString, "--out", "/dev/null"])
            #expect(stranger.status == 1 && stranger.stderr.contains("is not a habit of user"), "\(stranger)")
            let tooLong = try Self.habit(["report", "calendar", "--database-url", url, "--user", user.lowercaseString,
                                          "--from", "2025-01-01", "--to", "2026-01-02", "--out", "/dev/null"])
            #expect(tooLong.status == 64 && tooLong.stderr.contains("at most 366"), "\(tooLong)")
        }
    }

    /// Stored counts for four Monday weeks: week 0 rates 0.2 … 1.0 (median 0.6, quartiles 0.4
    /// and 0.8, 5 active users), week 1 rates 0.5, 0.6, 0.7 (median 0.6), week 2 nothing,
    /// week 3 one active user without a rate; Sunday-convention rows that must not count.
    @Test("weekly: the median line's colour at a known week, the band between the quartiles, a gap, the active users' bars")
    func weekly() throws {
        try TestDatabase.with { database in
            let admin = try database.connect()
            let first = CalendarDate(iso8601: "2026-01-05")!
            func store(_ week: Int, _ rate: Double?, active: Int = 7, convention: String = "monday") throws {
                let start = convention == "monday" ? first.adding(days: 7 * week) : first.adding(days: 7 * week - 1)
                try admin.execute("""
                    INSERT INTO public.weekly_completion_counts
                        (user_id, week_starts_on, week_start, completions, days_with_completion, active_habit_days,
                         due_habit_days, skipped_habit_days, completion_rate)
                    VALUES (\(UUID()), \(convention), \(start), 0, 0, \(active), \(active), 0, \(rate.map { String($0) })::numeric)
                    """)
            }
            for rate in [0.2, 0.4, 0.6, 0.8, 1.0] { try store(0, rate) }
            for rate in [0.5, 0.6, 0.7] { try store(1, rate) }
            try store(3, nil)
            for _ in 0..<20 { try store(2, 0.05, convention: "sunday") }

            let image = try Self.render(["report", "weekly", "--database-url", database.url, "--from", "2026-01-05", "--to", "2026-02-01"])
            let header = WeeklyReport.header(from: Self.reportDate(first), to: Self.reportDate(CalendarDate(iso8601: "2026-02-01")!),
                                             weekStart: .monday, users: 5, partialWeek: nil)
            let layout = WeeklyReport(title: header.title, subtitle: header.subtitle, weeks: (0..<4).map {
                .init(start: Self.reportDate(first.adding(days: 7 * $0)), lowerQuartile: nil, median: nil, upperQuartile: nil,
                      activeUsers: [5, 3, 0, 1][$0])
            })
            #expect(image.width == Int(layout.width))
            expectColour(image, at: ((layout.x(week: 0) + layout.x(week: 1)) / 2, layout.y(rate: 0.6)), WeeklyReport.medianColour,
                         "median line between weeks 0 and 1")
            // Week 0's band reaches from 0.4 to 0.8, above its bar (5 of 8 on the users axis);
            // the run of weeks 0–1 starts at week 0's centre: read just right of it.
            let band = image.pixel(x: layout.x(week: 0) + 2, y: layout.y(rate: 0.72))
            let expected = PNGImage.Colour(hex: WeeklyReport.bandColour)
            func mix(_ a: UInt8) -> UInt8 { UInt8((0.8 * Double(a) + 0.2 * 255).rounded()) }
            let onWhite = PNGImage.Colour(red: mix(expected.red), green: mix(expected.green), blue: mix(expected.blue))
            #expect(band.distance(to: onWhite) <= 3, "band at week 0: \(band), expected \(onWhite)")
            expectColour(image, at: (layout.x(week: 0), layout.y(rate: 0.9)), "#ffffff", "above week 0's upper quartile")
            // Week 2: no rows of the Monday convention — no line, no bar.
            expectColour(image, at: (layout.x(week: 2), layout.y(rate: 0.6)), "#ffffff", "week 2 without rows")
            expectColour(image, at: (layout.x(week: 2), layout.y(rate: 0.03)), "#ffffff", "week 2 without a bar")
            // Week 3: one active user (1 of 8), no rate.
            expectColour(image, at: (layout.x(week: 3), layout.y(users: 0) - 3), WeeklyReport.barColour, "week 3's bar")
            expectColour(image, at: (layout.x(week: 3), layout.y(rate: 0.2)), "#ffffff", "above week 3's bar (1 of 8 users: 12.5 %)")
        }
    }

    /// One user in UTC with three daily habits, two of them done on every day of the current
    /// week so far (k days: 2k of 3k habit-days due, 0.6667), and the batch's stored counts,
    /// which count the week's 21 habit-days due (2k of 21). The weeks are Sunday weeks on a
    /// Sunday, else Monday weeks, so that today is never the week's last day.
    /// `habit weekly-counts --values` (issue 32): the week values of the counted habits, as CSV;
    /// with --store it is a usage error (exit 64) before anything is read.
    @Test("weekly-counts --values prints each counted habit's week value; --values --store is refused")
    func weeklyValues() throws {
        try TestDatabase.with { database in
            let admin = try database.connect()
            let user = UUID(), habit = UUID()
            try admin.withTransaction { connection in
                try connection.execute("SET LOCAL habit.backfill = 'on'")
                try connection.execute("""
                    INSERT INTO public.habit_templates (id, user_id, name, activated_at, kind, unit, target)
                    VALUES (\(habit), \(user), 'Run', '2021-01-01 00:00Z', 'measurable', 'km', 5)
                    """)
                try connection.execute("""
                    INSERT INTO public.habit_checkins (user_id, template_id, checkin_date, value)
                    VALUES (\(user), \(habit), '2021-01-05', 2.5), (\(user), \(habit), '2021-01-07', 4)
                    """)
            }
            let range = ["--from", "2021-01-04", "--to", "2021-01-10", "--database-url", database.url]
            let printed = try Self.habit(["weekly-counts", "--values"] + range)
            #expect(printed.status == 0, "\(printed.stderr)")
            #expect(printed.stdout.trimmingCharacters(in: .newlines) == "user_id,template_id,week_start,value\n\(user.lowercaseString),\(habit.lowercaseString),2021-01-04,6.5",
                    "\(printed.stdout)")
            let refused = try Self.habit(["weekly-counts", "--values", "--store"] + range)
            #expect(refused.status == 64 && refused.stderr.contains("--values prints"), "\(refused)")
        }
    }

    @Test("weekly: the week not over counts its days up to today (no fake drop), drawn hollow and labelled so far")
    func weeklyCurrentWeek() throws {
        try TestDatabase.with { database in
            let admin = try database.connect()
            let user = UUID()
            let today = try admin.queryOne("SELECT (now() AT TIME ZONE 'UTC')::date").decode(CalendarDate.self, at: 0)
            let convention = today.isoWeekday == 7 ? "sunday" : "monday"
            let weekStart = today.adding(days: -((today.isoWeekday - (convention == "sunday" ? 7 : 1) + 7) % 7))
            let soFar = weekStart.days(until: today) + 1
            try #require((1...6).contains(soFar))
            try admin.withTransaction { connection in
                try connection.execute("SET LOCAL habit.backfill = 'on'")
                try connection.execute("INSERT INTO public.profiles (user_id, timezone) VALUES (\(user), 'UTC')")
                for name in ["a", "b", "c"] {
                    let habit = try connection.queryOne("""
                        INSERT INTO public.habit_templates (user_id, name, activated_at)
                        VALUES (\(user), \(name), now() - interval '30 days') RETURNING id
                        """).decode(UUID.self, at: 0)
                    guard name != "c" else { continue }
                    for offset in 0..<soFar {
                        try connection.execute("""
                            INSERT INTO public.habit_completions (user_id, template_id, completed_date)
                            VALUES (\(user), \(habit), \(weekStart.adding(days: offset)))
                            """)
                    }
                }
            }
            let url = database.url
            let range = ["--from", weekStart.adding(days: -7).description, "--to", weekStart.adding(days: 6).description,
                         "--week-start", convention, "--database-url", url]
            let stored = try Self.habit(["weekly-counts", "--store"] + range)
            try #require(stored.status == 0, "\(stored.stderr)")
            let storedRate = try admin.queryOne("""
                SELECT completion_rate::float8 FROM public.weekly_completion_counts
                WHERE user_id = \(user) AND week_starts_on = \(convention) AND week_start = \(weekStart)
                """).decode(Double.self, at: 0)
            #expect(abs(storedRate - Double(2 * soFar) / 21) < 0.0001, "the batch counts the whole week: \(storedRate)")

            let svg = try Self.habit(["report", "weekly", "--out", "-"] + range)
            try #require(svg.status == 0, "\(svg.stderr)")
            #expect(svg.stdout.contains("week of \(weekStart) so far: median 66.7 %"), "\(svg.stdout)")
            #expect(svg.stdout.contains(">so far</text>"))

            let image = try Self.render(["report", "weekly"] + range)
            let header = WeeklyReport.header(from: Self.reportDate(weekStart.adding(days: -7)), to: Self.reportDate(weekStart.adding(days: 6)),
                                             weekStart: convention == "monday" ? .monday : .sunday, users: 1, partialWeek: Self.reportDate(weekStart))
            let layout = WeeklyReport(title: header.title, subtitle: header.subtitle, weeks: [
                .init(start: Self.reportDate(weekStart.adding(days: -7)), lowerQuartile: 0, median: 0, upperQuartile: 0, activeUsers: 1),
                .init(start: Self.reportDate(weekStart), lowerQuartile: 2.0 / 3, median: 2.0 / 3, upperQuartile: 2.0 / 3, activeUsers: 1, partial: true),
            ])
            #expect(image.width == Int(layout.width) && image.height == Int(layout.height))
            let (x, y) = (layout.x(week: 1), layout.y(rate: 2.0 / 3))
            expectColour(image, at: (x, y), "#ffffff", "the hollow point at two thirds")
            let ring = image.pixel(x: x, y: y - WeeklyReport.partialPointRadius)
            #expect(ring.distance(to: PNGImage.Colour(hex: WeeklyReport.medianColour)) <= 40, "the point's ring: \(ring)")
            // Where the stored whole-week rate would have put it: no median there.
            let drop = image.pixel(x: x, y: layout.y(rate: Double(2 * soFar) / 21))
            #expect(drop.distance(to: PNGImage.Colour(hex: WeeklyReport.medianColour)) > 60, "no fake drop: \(drop)")
        }
    }
}

/// The shade within rendering tolerance (antialiasing never reaches a cell's centre).
func expectColour(_ image: PNGImage, at point: (x: Double, y: Double)?, _ hex: String, _ what: String,
                  sourceLocation: SourceLocation = #_sourceLocation) {
    guard let point else {
        Issue.record("\(what): no such point", sourceLocation: sourceLocation)
        return
    }
    let colour = image.pixel(x: point.x, y: point.y)
    #expect(colour.distance(to: PNGImage.Colour(hex: hex)) <= 2, "\(what) at \(point): \(colour), expected \(hex)",
            sourceLocation: sourceLocation)
}
