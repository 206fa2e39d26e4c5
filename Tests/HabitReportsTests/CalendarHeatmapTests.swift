import Foundation
import HabitReports
import PNGTestSupport
import Testing

func date(_ text: String) -> ReportDate { ReportDate(iso8601: text)! }

/// The shades within rendering tolerance (antialiasing never reaches a cell's centre).
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

@Suite("calendar heatmap: layout and rendered pixels")
struct CalendarHeatmapTests {
    /// 2026-03-04 (Wednesday) to 2026-04-14: weeks from Monday 2026-03-02.
    static func heatmap(weekStart: WeekStartDay = .monday, days overrides: [String: (due: Int, done: Int, skipped: Int, level: Int)] = [:]) -> CalendarHeatmap {
        var days: [CalendarHeatmap.Day] = []
        var day = date("2026-03-04")
        while day <= date("2026-04-14") {
            let value = overrides[day.description] ?? (due: 0, done: 0, skipped: 0, level: 0)
            days.append(.init(date: day, due: value.due, done: value.done, skipped: value.skipped, level: value.level))
            day = day.adding(days: 1)
        }
        return CalendarHeatmap(title: "Habit calendar", subtitle: "2026-03-04 – 2026-04-14", days: days, weekStart: weekStart)
    }

    @Test("weeks are columns from the week start, weekdays rows; days outside the range have no cell")
    func geometry() throws {
        let monday = Self.heatmap()
        // Wed 4 March: first column, third row; Mon 9 March: second column, first row.
        let wednesday = try #require(monday.cellOrigin(for: date("2026-03-04")))
        #expect(wednesday.x == CalendarHeatmap.gridLeft && wednesday.y == CalendarHeatmap.gridTop + 2 * CalendarHeatmap.pitch)
        let nextMonday = try #require(monday.cellOrigin(for: date("2026-03-09")))
        #expect(nextMonday.x == CalendarHeatmap.gridLeft + CalendarHeatmap.pitch && nextMonday.y == CalendarHeatmap.gridTop)
        #expect(monday.cellOrigin(for: date("2026-03-03")) == nil && monday.cellOrigin(for: date("2026-04-15")) == nil)
        #expect(monday.columns == 7) // weeks of 2, 9, 16, 23, 30 March, 6 and 13 April

        // Sunday weeks: Sunday 8 March is the top of the second column.
        let sunday = Self.heatmap(weekStart: .sunday)
        let eighth = try #require(sunday.cellOrigin(for: date("2026-03-08")))
        #expect(eighth.x == CalendarHeatmap.gridLeft + CalendarHeatmap.pitch && eighth.y == CalendarHeatmap.gridTop)
        #expect(try #require(sunday.cellOrigin(for: date("2026-03-07"))).y == CalendarHeatmap.gridTop + 6 * CalendarHeatmap.pitch)
    }

    @Test("labels: the weekdays in the user's order, each month once, title and legend; all text at least 10 px, sans-serif")
    func labels() throws {
        let texts = try xmlText(Self.heatmap(weekStart: .sunday).svg())
        let weekdays = texts.filter { ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"].contains($0) }
        #expect(weekdays == ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"])
        #expect(texts.contains("Mar 2026") && texts.contains("Apr"))
        #expect(texts.contains("Habit calendar") && texts.contains("Less") && texts.contains("More"))

        let svg = Self.heatmap().svg()
        let sizes = svg.matches(of: /font-size="([0-9.]+)"/).map { Double($0.output.1)! }
        #expect(!sizes.isEmpty && sizes.allSatisfy { $0 >= 10 }, "\(sizes)")
        #expect(svg.components(separatedBy: "<text ").count - 1 == svg.matches(of: /font-family="[^"]*sans-serif"/).count)
    }

    @Test("rendered: a fully done day is the darkest shade, a missed due day the lightest, a day with nothing due blank")
    func renderedShades() throws {
        let heatmap = Self.heatmap(days: [
            "2026-03-10": (due: 3, done: 3, skipped: 0, level: 4), // all done
            "2026-03-11": (due: 2, done: 0, skipped: 0, level: 0), // missed
            "2026-03-12": (due: 4, done: 2, skipped: 0, level: 2),
            "2026-03-13": (due: 2, done: 0, skipped: 2, level: 0), // everything skipped: blank
            "2026-03-16": (due: 4, done: 1, skipped: 0, level: 1),
            "2026-03-17": (due: 4, done: 3, skipped: 0, level: 3),
        ])
        let image = try PNGImage.rendering(svg: heatmap.svg(), name: "calendar")
        #expect(image.width == Int(heatmap.width) && image.height == Int(heatmap.height))
        expectColour(image, at: heatmap.cellCentre(for: date("2026-03-10")), CalendarHeatmap.shades[4], "all done")
        expectColour(image, at: heatmap.cellCentre(for: date("2026-03-11")), CalendarHeatmap.shades[0], "missed")
        expectColour(image, at: heatmap.cellCentre(for: date("2026-03-12")), CalendarHeatmap.shades[2], "half done")
        expectColour(image, at: heatmap.cellCentre(for: date("2026-03-16")), CalendarHeatmap.shades[1], "a quarter done")
        expectColour(image, at: heatmap.cellCentre(for: date("2026-03-17")), CalendarHeatmap.shades[3], "three quarters done")
        expectColour(image, at: heatmap.cellCentre(for: date("2026-03-14")), CalendarHeatmap.background, "nothing due")
        expectColour(image, at: heatmap.cellCentre(for: date("2026-03-13")), CalendarHeatmap.background, "all skipped")
        // A blank cell keeps its outline: its left edge is not the background.
        let blank = try #require(heatmap.cellOrigin(for: date("2026-03-14")))
        #expect(image.pixel(x: blank.x + 0.5, y: blank.y + 6).distance(to: PNGImage.Colour(hex: CalendarHeatmap.background)) > 10)
        // Between cells: background.
        expectColour(image, at: (blank.x + CalendarHeatmap.cellSize + 1.5, blank.y + 6), CalendarHeatmap.background, "gap")
        // The legend shows the five shades, lightest to darkest.
        for level in 0...4 {
            let origin = heatmap.legendSwatchOrigin(level: level)
            expectColour(image, at: (origin.x + 6, origin.y + 6), CalendarHeatmap.shades[level], "legend \(level)")
        }
    }

    @Test("shades get darker with the level (luminance strictly decreasing)")
    func shadesDarken() {
        let luminance = CalendarHeatmap.shades.map { hex -> Double in
            let colour = PNGImage.Colour(hex: hex)
            return 0.2126 * Double(colour.red) + 0.7152 * Double(colour.green) + 0.0722 * Double(colour.blue)
        }
        #expect(zip(luminance, luminance.dropFirst()).allSatisfy { $0 > $1 }, "\(luminance)")
        #expect(PNGImage.Colour(hex: CalendarHeatmap.shades[0]) != PNGImage.Colour(hex: CalendarHeatmap.background))
    }
}
