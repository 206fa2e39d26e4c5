import Foundation
import HabitReports
import PNGTestSupport
import Testing

@Suite("weekly report: layout and rendered pixels")
struct WeeklyReportTests {
    /// Six Monday weeks from 2026-01-05: medians 50 %, 50 %, 80 %, none, 30 %, 30 %.
    static func report() -> WeeklyReport {
        let rows: [(Double?, Double?, Double?, Int)] = [
            (0.25, 0.5, 0.75, 40), (0.3, 0.5, 0.7, 80), (0.6, 0.8, 0.9, 100), (nil, nil, nil, 20), (0.2, 0.3, 0.4, 60), (0.1, 0.3, 0.5, 0),
        ]
        let weeks = rows.enumerated().map { index, row in
            WeeklyReport.Week(start: date("2026-01-05").adding(days: 7 * index), lowerQuartile: row.0, median: row.1,
                              upperQuartile: row.2, activeUsers: row.3)
        }
        return WeeklyReport(title: "Weekly completion", subtitle: "2026-01-05 – 2026-02-15", weeks: weeks)
    }

    @Test("rate axis 0–100 % over the plot's height; the users axis ends at a round number ≥ the busiest week")
    func geometry() {
        let report = Self.report()
        #expect(report.y(rate: 0) == report.plotTop + WeeklyReport.plotHeight)
        #expect(report.y(rate: 1) == report.plotTop)
        #expect(report.y(rate: 1.7) == report.plotTop && report.y(rate: -1) == report.y(rate: 0))
        #expect(report.usersAxisMaximum == 100)
        #expect(report.x(week: 1) - report.x(week: 0) == report.slot)
        var busy = report
        busy.weeks[0].activeUsers = 1234
        #expect(busy.usersAxisMaximum >= 1234 && busy.usersAxisMaximum % 4 == 0 && busy.usersAxisMaximum <= 2500)
    }

    @Test("labels: title, both axes, the legend, a label for the first week; all text at least 10 px")
    func labels() throws {
        let svg = Self.report().svg()
        let texts = try xmlText(svg)
        for wanted in ["Weekly completion", "0 %", "100 %", "active users", "median", "Jan 5", "week starting"] {
            #expect(texts.contains(wanted), "\(wanted) in \(texts)")
        }
        #expect(texts.contains { $0.hasPrefix("completion rate") })
        let sizes = svg.matches(of: /font-size="([0-9.]+)"/).map { Double($0.output.1)! }
        #expect(!sizes.isEmpty && sizes.allSatisfy { $0 >= 10 }, "\(sizes)")
    }

    @Test("rendered: the median line's colour at a known week, the band between the quartiles, bars for active users, a gap without data")
    func renderedPixels() throws {
        let report = Self.report()
        let image = try PNGImage.rendering(svg: report.svg(), name: "weekly")
        #expect(image.width == Int(report.width) && image.height == Int(report.height))
        // Weeks 0 and 1 both have a 50 % median: the line is flat between them.
        let midway = ((report.x(week: 0) + report.x(week: 1)) / 2, report.y(rate: 0.5))
        expectColour(image, at: midway, WeeklyReport.medianColour, "median line between weeks 0 and 1")
        expectColour(image, at: (report.x(week: 4) + 3, report.y(rate: 0.3)), WeeklyReport.medianColour, "median at week 4")
        // Week 2: between the median (80 %) and the upper quartile (90 %) lies the band, over its bar.
        // The band is drawn at 80 % opacity over the week's bar (100 users: the full height);
        // week 2 ends the run, so the band's edge is at its centre: read just left of it.
        let band = image.pixel(x: report.x(week: 2) - 2, y: report.y(rate: 0.86))
        let (over, under) = (PNGImage.Colour(hex: WeeklyReport.bandColour), PNGImage.Colour(hex: WeeklyReport.barColour))
        func mix(_ a: UInt8, _ b: UInt8) -> UInt8 { UInt8((0.8 * Double(a) + 0.2 * Double(b)).rounded()) }
        let expected = PNGImage.Colour(red: mix(over.red, under.red), green: mix(over.green, under.green), blue: mix(over.blue, under.blue))
        #expect(band.distance(to: expected) <= 3, "band at week 2: \(band), expected \(expected)")
        // Week 3 has no rate: its bar (20 of 100 users) shows, and no line crosses it.
        expectColour(image, at: (report.x(week: 3), report.y(rate: 0.1)), WeeklyReport.barColour, "bar of week 3")
        let gap = image.pixel(x: report.x(week: 3), y: report.y(rate: 0.5))
        #expect(gap.distance(to: PNGImage.Colour(hex: WeeklyReport.medianColour)) > 60, "week 3 has no median: \(gap)")
        // Week 5 has no active users: background below the band.
        expectColour(image, at: (report.x(week: 5), report.y(rate: 0.04)), "#ffffff", "no bar in week 5")
        // The bar of week 1 (80 users) reaches 80 % of the users axis.
        expectColour(image, at: (report.x(week: 1), report.y(users: 78)), WeeklyReport.barColour, "top of week 1's bar")
        expectColour(image, at: (report.x(week: 1), report.y(users: 83)), "#ffffff", "above week 1's bar")
    }

    @Test("no data: the picture says so")
    func empty() throws {
        let report = WeeklyReport(title: "t", subtitle: "s", weeks: [
            .init(start: date("2026-01-05"), lowerQuartile: nil, median: nil, upperQuartile: nil, activeUsers: 0),
        ])
        #expect(try xmlText(report.svg()).contains { $0.hasPrefix("no stored counts") })
    }

    /// The six weeks above, the last (0.1 … 0.3 … 0.5) not over: counted up to today.
    static func partialReport() -> WeeklyReport {
        var report = Self.report()
        report.weeks[5].partial = true
        report.weeks[5].activeUsers = 50
        return report
    }

    @Test("a week not over: a hollow point labelled so far, reached by a dashed line, its bar lighter with a dashed outline")
    func partialWeek() throws {
        let report = Self.partialReport()
        let image = try PNGImage.rendering(svg: report.svg(), name: "weekly-partial")
        let (x5, y5) = (report.x(week: 5), report.y(rate: 0.3))
        // Hollow: white at the point's centre, the median's colour on its ring.
        expectColour(image, at: (x5, y5), "#ffffff", "inside the hollow point")
        let ring = image.pixel(x: x5, y: y5 - WeeklyReport.partialPointRadius)
        #expect(ring.distance(to: PNGImage.Colour(hex: WeeklyReport.medianColour)) <= 40, "the point's ring: \(ring)")
        // Week 4 → 5 is dashed: along the (flat, 30 %) segment, both the median's colour and gaps.
        let along = stride(from: report.x(week: 4) + 6, to: x5 - 7, by: 1.0).map { image.pixel(x: $0, y: y5) }
        let inked = along.filter { $0.distance(to: PNGImage.Colour(hex: WeeklyReport.medianColour)) <= 40 }.count
        #expect(inked > along.count / 4 && inked < along.count * 3 / 4, "dashed: \(inked) of \(along.count) pixels inked")
        // Its bar (50 of 100 users): the bar's blue at 45 % over white.
        let bar = image.pixel(x: x5, y: report.y(users: 10))
        let blue = PNGImage.Colour(hex: WeeklyReport.barColour)
        func mix(_ a: UInt8) -> UInt8 { UInt8((WeeklyReport.partialOpacity * Double(a) + (1 - WeeklyReport.partialOpacity) * 255).rounded()) }
        #expect(bar.distance(to: PNGImage.Colour(red: mix(blue.red), green: mix(blue.green), blue: mix(blue.blue))) <= 3, "partial bar: \(bar)")
        // A complete week's bar keeps the full colour; "so far" is written, and in the legend.
        expectColour(image, at: (report.x(week: 1), report.y(users: 10)), WeeklyReport.barColour, "week 1's bar")
        let texts = try xmlText(report.svg())
        #expect(texts.filter { $0 == "so far" }.count == 1 && texts.contains { $0.hasPrefix("so far: a week not over") }, "\(texts)")
        #expect(texts.contains { $0.hasPrefix("week of 2026-02-09 so far: median 30 %") }, "the point's tooltip")
        // Without a partial week: no "so far", nothing hollow.
        #expect(try !xmlText(Self.report().svg()).contains { $0.hasPrefix("so far") })
    }

    @Test("every label fits inside the picture, the header wrapped, for a few weeks and for many")
    func labelsFit() throws {
        for count in [1, 4, 30, 200] {
            let weeks = (0..<count).map {
                WeeklyReport.Week(start: date("2026-01-05").adding(days: 7 * $0), lowerQuartile: 0.2, median: 0.5, upperQuartile: 0.7,
                                  activeUsers: 1000 + $0, partial: $0 == count - 1)
            }
            let header = WeeklyReport.header(from: weeks[0].start, to: weeks[count - 1].start.adding(days: 6), weekStart: .sunday,
                                             users: 123_456, partialWeek: weeks[count - 1].start)
            let report = WeeklyReport(title: header.title, subtitle: header.subtitle, weeks: weeks)
            let texts = try svgTexts(report.svg())
            for text in texts where text.rotation == nil {
                #expect(text.left >= 0 && text.right <= report.width, "\(count) weeks: \"\(text.text)\" spans \(text.left)…\(text.right) of \(report.width)")
            }
            #expect(texts.filter { $0.y < report.plotTop }.map(\.text).joined(separator: " ").contains("up to 123456 users a week"))
        }
    }
}
