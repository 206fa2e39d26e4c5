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
    static func heatmap(weekStart: WeekStartDay = .monday, today: String = "2026-04-14",
                        days overrides: [String: (due: Int, done: Int, skipped: Int, level: Int)] = [:]) -> CalendarHeatmap {
        var days: [CalendarHeatmap.Day] = []
        var day = date("2026-03-04")
        while day <= date("2026-04-14") {
            let value = overrides[day.description] ?? (due: 0, done: 0, skipped: 0, level: 0)
            days.append(.init(date: day, due: value.due, done: value.done, skipped: value.skipped, level: value.level))
            day = day.adding(days: 1)
        }
        return CalendarHeatmap(title: "Habit calendar", subtitle: "2026-03-04 – 2026-04-14", days: days, weekStart: weekStart,
                               today: date(today))
    }

    @Test("weeks are columns from the week start, weekdays rows; days outside the range have no cell")
    func geometry() throws {
        let monday = Self.heatmap()
        // Wed 4 March: first column, third row; Mon 9 March: second column, first row.
        let wednesday = try #require(monday.cellOrigin(for: date("2026-03-04")))
        #expect(wednesday.x == CalendarHeatmap.gridLeft && wednesday.y == monday.gridTop + 2 * CalendarHeatmap.pitch)
        let nextMonday = try #require(monday.cellOrigin(for: date("2026-03-09")))
        #expect(nextMonday.x == CalendarHeatmap.gridLeft + CalendarHeatmap.pitch && nextMonday.y == monday.gridTop)
        #expect(monday.cellOrigin(for: date("2026-03-03")) == nil && monday.cellOrigin(for: date("2026-04-15")) == nil)
        #expect(monday.columns == 7) // weeks of 2, 9, 16, 23, 30 March, 6 and 13 April

        // Sunday weeks: Sunday 8 March is the top of the second column.
        let sunday = Self.heatmap(weekStart: .sunday)
        let eighth = try #require(sunday.cellOrigin(for: date("2026-03-08")))
        #expect(eighth.x == CalendarHeatmap.gridLeft + CalendarHeatmap.pitch && eighth.y == sunday.gridTop)
        #expect(try #require(sunday.cellOrigin(for: date("2026-03-07"))).y == sunday.gridTop + 6 * CalendarHeatmap.pitch)
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

    @Test("rendered: a fully done day is the darkest shade, a missed due day the lightest (crossed), a day with nothing due blank")
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
        // A missed day's shade shows between the arms of its ×, above the centre.
        expectColour(image, at: heatmap.cellOrigin(for: date("2026-03-11")).map { ($0.x + 6.5, $0.y + 1.5) }, CalendarHeatmap.shades[0], "missed")
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
        // The legend shows the five shades, lightest (a missed day, read beside its ×) to darkest.
        for level in 0...4 {
            let origin = heatmap.legendSwatchOrigin(level: level)
            expectColour(image, at: (origin.x + 6.5, origin.y + 1.5), CalendarHeatmap.shades[level], "legend \(level)")
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

@Suite("calendar heatmap: today, days after it, and the cells told apart in greyscale")
struct CalendarHeatmapStatesTests {
    /// Today Wednesday 2026-04-08: 2026-03-11 missed, 2026-03-14 nothing due, 2026-03-12 half
    /// done; today nothing done yet; 2026-04-09 on, due (as stats.calendar answers for a day after
    /// today) but not yet anything.
    static func heatmap() -> CalendarHeatmap {
        CalendarHeatmapTests.heatmap(today: "2026-04-08", days: [
            "2026-03-11": (due: 2, done: 0, skipped: 0, level: 0),
            "2026-03-12": (due: 4, done: 2, skipped: 0, level: 2),
            "2026-04-08": (due: 3, done: 0, skipped: 0, level: 0),
            "2026-04-09": (due: 3, done: 0, skipped: 0, level: 0),
            "2026-04-10": (due: 3, done: 0, skipped: 3, level: 0),
        ])
    }

    @Test("a day after today is not yet known, whatever stats.calendar counts as due; today without anything done is not missed")
    func cellKinds() {
        let heatmap = Self.heatmap()
        let day = { (text: String) in heatmap.days.first { $0.date == date(text) }! }
        #expect(heatmap.cell(for: day("2026-03-11")) == .missed)
        #expect(heatmap.cell(for: day("2026-03-14")) == .nothingDue)
        #expect(heatmap.cell(for: day("2026-03-12")) == .done(level: 2))
        #expect(heatmap.cell(for: day("2026-04-08")) == .notDoneYet)
        #expect(heatmap.cell(for: day("2026-04-09")) == .future)
        #expect(heatmap.cell(for: day("2026-04-10")) == .future) // skipped ahead: still not known
    }

    /// Greyscale statistics of a cell: the mean luminance of its central 3×3 pixels, how many
    /// pixels inside its 1-px border are darker than 200 (a mark), and the luminance of its edge.
    static func greyCell(_ grey: [[Double]], _ origin: (x: Double, y: Double)) -> (centre: Double, marks: Int, edge: Double) {
        let (x0, y0) = (Int(origin.x), Int(origin.y))
        let size = Int(CalendarHeatmap.cellSize)
        var centre = 0.0
        for dy in -1...1 { for dx in -1...1 { centre += grey[y0 + size / 2 + dy][x0 + size / 2 + dx] } }
        var marks = 0
        for y in (y0 + 2)..<(y0 + size - 2) { for x in (x0 + 2)..<(x0 + size - 2) where grey[y][x] < 200 { marks += 1 } }
        return (centre / 9, marks, grey[y0 + size / 2][x0])
    }

    @Test("in greyscale: missed (a lighter square with an ×), nothing due (an empty outline) and after today (a dot) differ by shape; today is framed")
    func greyscale() throws {
        let heatmap = Self.heatmap()
        let image = try PNGImage.rendering(svg: heatmap.svg(), name: "calendar-states")
        let grey = image.greyscale
        func cell(_ text: String) throws -> (centre: Double, marks: Int, edge: Double) {
            Self.greyCell(grey, try #require(heatmap.cellOrigin(for: date(text))))
        }
        let missed = try cell("2026-03-11"), nothingDue = try cell("2026-03-14"), future = try cell("2026-04-09"), today = try cell("2026-04-08")
        // Centres far apart: a shade alone (the lightest green is 237 in greyscale, white 255) was not enough.
        #expect(abs(missed.centre - nothingDue.centre) >= 80, "missed \(missed), nothing due \(nothingDue)")
        #expect(abs(future.centre - nothingDue.centre) >= 40 && abs(future.centre - missed.centre) >= 40, "after today \(future)")
        // The marks: an × across a missed day, nothing inside an empty one, a small dot after today.
        #expect(missed.marks >= 20, "missed: \(missed.marks) dark pixels")
        #expect(nothingDue.marks == 0 && today.marks == 0, "nothing due \(nothingDue.marks), today \(today.marks)")
        #expect((1...16).contains(future.marks), "after today: \(future.marks) dark pixels")
        // Edges: a nothing-due day is outlined; after today there is no square; missed is filled.
        #expect(nothingDue.edge < 235 && future.edge > 250 && missed.edge < 245, "edges \(nothingDue.edge) \(future.edge) \(missed.edge)")
        // Today's frame: dark in the gap around its cell, on all four sides.
        let origin = try #require(heatmap.cellOrigin(for: date("2026-04-08")))
        let middle = Int(origin.x + CalendarHeatmap.cellSize / 2), centreY = Int(origin.y + CalendarHeatmap.cellSize / 2)
        for (x, y) in [(middle, Int(origin.y) - 2), (middle, Int(origin.y + CalendarHeatmap.cellSize) + 1),
                       (Int(origin.x) - 2, centreY), (Int(origin.x + CalendarHeatmap.cellSize) + 1, centreY)] {
            #expect(grey[y][x] < 120, "today's frame at (\(x), \(y)): \(grey[y][x])")
        }
        // Another day has no frame: background in the gap.
        let other = try #require(heatmap.cellOrigin(for: date("2026-03-12")))
        #expect(grey[Int(other.y) - 2][Int(other.x) + 6] > 250)
        // The legend draws the same shapes: its missed swatch is crossed, its after-today swatch a dot.
        let missedSwatch = Self.greyCell(grey, try #require(heatmap.legendSwatchOrigin(.missed)))
        let futureSwatch = Self.greyCell(grey, try #require(heatmap.legendSwatchOrigin(.future)))
        #expect(missedSwatch.marks >= 20 && (1...16).contains(futureSwatch.marks), "legend \(missedSwatch) \(futureSwatch)")
    }

    @Test("short ranges: every label, the header's included, fits inside the picture; the week-start note is kept; the title names the habits")
    func headerFits() throws {
        let user = "7d9f0e2a-3c41-4b8e-9a57-1f2e3d4c5b6a"
        let longName = String(repeating: "Stretch, breathe and drink water ", count: 3).trimmingCharacters(in: .whitespaces)
        for (days, zone, names) in [(1, "UTC", ["Morning Run"]), (14, "America/Los_Angeles", ["Morning Run", "Read", "Floss", "Yoga"]),
                                    (42, "America/Argentina/ComodRivadavia", [longName]), (120, "Europe/Berlin", [longName, longName])] {
            let from = date("2026-10-19"), to = from.adding(days: days - 1)
            let header = CalendarHeatmap.header(habitNames: names, oneHabit: names.count == 1, user: user, from: from, to: to,
                                                zone: zone, weekStart: .sunday, today: date("2026-10-25"))
            let heatmap = CalendarHeatmap(title: header.title, subtitle: header.subtitle, caption: header.caption,
                                          days: (0..<days).map { .init(date: from.adding(days: $0), due: 1, done: 1, skipped: 0, level: 4) },
                                          weekStart: .sunday, today: date("2026-10-25"))
            let svg = heatmap.svg()
            let texts = try svgTexts(svg)
            for text in texts where text.rotation == nil {
                #expect(text.left >= 0 && text.right <= heatmap.width,
                        "\(days) days: \"\(text.text)\" spans \(text.left)…\(text.right) of \(heatmap.width)")
            }
            let all = texts.map(\.text).joined(separator: " ")
            #expect(all.contains("weeks start on Sunday") && all.contains(zone) && all.contains(user), "\(days) days: \(all)")
            #expect(all.hasPrefix("Habit calendar: " + String(names[0].prefix(10))), "\(all)")
            // The header stays above the month labels.
            let header_ = texts.filter { $0.y < heatmap.gridTop - 20 }
            #expect(header_.contains { $0.text.contains(user) }, "the caption above the grid")
        }
        // The names: one habit as given; as many as fit on the title's line, the others counted.
        let names = ["Run", "Read", "Floss", "Yoga", "Water"]
        func title(_ names: [String], one: Bool = false) -> String {
            CalendarHeatmap.header(habitNames: names, oneHabit: one, user: user, from: date("2026-01-01"),
                                   to: date("2026-01-02"), zone: "UTC", weekStart: .monday, today: date("2026-01-02")).title
        }
        #expect(title(["Run"], one: true) == "Habit calendar: Run")
        #expect(title(Array(names.prefix(2))) == "Habit calendar: Run and Read")
        #expect(title(names) == "Habit calendar: Run, Read, Floss, Yoga and Water")
        let long = ["Drink two litres of water", "Read twenty pages of a book", "Stretch for ten minutes", "Floss"]
        #expect(title(long) == "Habit calendar: Drink two litres of water and 3 more habits", "\(title(long))")
        #expect(title(Array(long.prefix(2))) == "Habit calendar: Drink two litres of water and 1 more habit")
        #expect(title([], one: false) == "Habit calendar: no habit on in this range")
    }
}
