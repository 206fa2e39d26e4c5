import Foundation
import HabitReports
import PNGTestSupport
import Testing

/// Every picture of PictureFixtures rendered by rsvg-convert and compared with its golden PNG in
/// Tests/Fixtures/pictures, so that a change to how a picture looks fails here until the golden
/// file is rewritten (HABIT_UPDATE_GOLDEN=1) and the new image is looked at and committed.
@Suite("pictures: the fixtures rendered, compared with the golden PNGs")
struct PictureGoldenTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/pictures").path

    /// The pictures, by golden file name, as `habit report` composes them.
    static var pictures: [(name: String, svg: () -> String)] {
        [
            ("calendar-q4", { calendar(from: "2026-10-01", to: "2026-12-31", names: f.habits, oneHabit: false).svg() }),
            ("calendar-short", { calendar(from: "2026-10-19", to: "2026-11-29", names: [f.habits[0]], oneHabit: true).svg() }),
            ("weekly", { weekly().svg() }),
        ]
    }

    static let f = PictureFixtures.self

    static func calendar(from: String, to: String, names: [String], oneHabit: Bool, zone: String = f.zone) -> CalendarHeatmap {
        let header = CalendarHeatmap.header(habitNames: names, oneHabit: oneHabit, user: f.user, from: date(from), to: date(to),
                                            zone: zone, weekStart: .monday, today: f.today)
        return CalendarHeatmap(title: header.title, subtitle: header.subtitle, caption: header.caption,
                               days: f.calendarDays(from: date(from), to: date(to), onlyFirstHabit: oneHabit),
                               weekStart: .monday, today: f.today)
    }

    static func weekly() -> WeeklyReport {
        let rows = f.weeklyRows(soFar: true)
        let header = WeeklyReport.header(from: date("2026-09-07"), to: date("2026-11-29"), weekStart: .monday,
                                         users: rows.map(\.users).max()!, partialWeek: date("2026-11-23"))
        return WeeklyReport(title: header.title, subtitle: header.subtitle, weeks: rows.enumerated().map { index, row in
            .init(start: row.start, lowerQuartile: row.lower, median: row.median, upperQuartile: row.upper, activeUsers: row.users,
                  partial: index == rows.count - 1)
        })
    }

    @Test("each picture matches its golden PNG (HABIT_UPDATE_GOLDEN=1 rewrites them)", arguments: pictures.map(\.name))
    func matchesGolden(name: String) throws {
        let svg = try #require(Self.pictures.first { $0.name == name }).svg()
        let golden = GoldenPicture(name: name, directory: Self.directory)
        let comparison = try golden.check(svg: svg)
        if comparison.rewritten {
            print("rewrote \(golden.path)")
            return
        }
        #expect(comparison.matches, "\(name): \(comparison); \(golden.howToRegenerate)")
    }

    /// A golden comparison that cannot fail proves nothing: small changes to a fixture's drawing
    /// (one cell a shade lighter, one letter of the subtitle, a median 2 points higher, the
    /// partial week drawn as complete) must each be caught by the comparison the test above uses.
    @Test("the comparison catches a one-cell, one-letter or one-point change of a picture")
    func comparisonCatchesSmallChanges() throws {
        func differs(_ golden: String, _ svg: String) throws -> GoldenPicture.Comparison {
            let path = GoldenPicture(name: golden, directory: Self.directory).path
            let data = try #require(FileManager.default.contents(atPath: path), "no golden picture at \(path)")
            return GoldenPicture.compare(try PNGImage.rendering(svg: svg, name: "\(golden)-changed"), try PNGImage(data: data))
        }
        // Unchanged: matches (the same comparison, so the changes below are what makes it fail).
        let same = try differs("calendar-short", Self.calendar(from: "2026-10-19", to: "2026-11-29", names: [Self.f.habits[0]], oneHabit: true).svg())
        #expect(same.matches && same.differingPixels == 0, "\(same)")

        var oneCell = Self.calendar(from: "2026-10-19", to: "2026-11-29", names: [Self.f.habits[0]], oneHabit: true)
        let done = try #require(oneCell.days.firstIndex { $0.level == 4 && $0.date < Self.f.today })
        oneCell.days[done].level = 3
        let cell = try differs("calendar-short", oneCell.svg())
        #expect(!cell.matches, "one cell level 4 → 3: \(cell)")

        let letter = try differs("calendar-short", Self.calendar(from: "2026-10-19", to: "2026-11-29", names: [Self.f.habits[0]], oneHabit: true,
                                                                 zone: "America/Los_Angelas").svg())
        #expect(!letter.matches, "one letter of the subtitle: \(letter)")

        var point = Self.weekly()
        point.weeks[3].median = point.weeks[3].median.map { $0 + 0.02 }
        let median = try differs("weekly", point.svg())
        #expect(!median.matches, "one week's median 2 points higher: \(median)")

        var whole = Self.weekly()
        whole.weeks[whole.weeks.count - 1].partial = false
        let partial = try differs("weekly", whole.svg())
        #expect(!partial.matches, "the week not over drawn as complete: \(partial)")
    }
}
