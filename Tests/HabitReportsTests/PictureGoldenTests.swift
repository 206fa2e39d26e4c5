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
        let f = PictureFixtures.self
        func calendar(from: String, to: String, names: [String], oneHabit: Bool) -> String {
            let header = CalendarHeatmap.header(habitNames: names, oneHabit: oneHabit, user: f.user, from: date(from), to: date(to),
                                                zone: f.zone, weekStart: .monday, today: f.today)
            return CalendarHeatmap(title: header.title, subtitle: header.subtitle, caption: header.caption,
                                   days: f.calendarDays(from: date(from), to: date(to), onlyFirstHabit: oneHabit),
                                   weekStart: .monday, today: f.today).svg()
        }
        func weekly() -> String {
            let rows = f.weeklyRows(soFar: true)
            let header = WeeklyReport.header(from: date("2026-09-07"), to: date("2026-11-29"), weekStart: .monday,
                                             users: rows.map(\.users).max()!, partialWeek: date("2026-11-23"))
            return WeeklyReport(title: header.title, subtitle: header.subtitle, weeks: rows.enumerated().map { index, row in
                .init(start: row.start, lowerQuartile: row.lower, median: row.median, upperQuartile: row.upper, activeUsers: row.users,
                      partial: index == rows.count - 1)
            }).svg()
        }
        return [
            ("calendar-q4", { calendar(from: "2026-10-01", to: "2026-12-31", names: f.habits, oneHabit: false) }),
            ("calendar-short", { calendar(from: "2026-10-19", to: "2026-11-29", names: [f.habits[0]], oneHabit: true) }),
            ("weekly", weekly),
        ]
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
}
