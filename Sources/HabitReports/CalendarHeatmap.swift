/// A contribution-calendar heatmap of one user's habits (or one habit): weeks as columns,
/// weekdays as rows starting with the user's week start, one cell per day of the range
/// shaded by the day's level (definitions of stats.calendar, docs/protocol.md):
///
/// - nothing to do (due = 0, or every due habit skipped): blank — the background with an outline;
/// - level 0 (something due, nothing done): the lightest shade;
/// - levels 1–4: darker and darker; a fully done day is level 4, the darkest.
///
/// Month labels above the first column of each month, weekday labels on the left, a legend
/// (less … more) below, a title with the user and the range.
public struct CalendarHeatmap {
    public struct Day: Sendable, Equatable {
        public var date: ReportDate
        public var due: Int
        public var done: Int
        public var skipped: Int
        public var level: Int

        public init(date: ReportDate, due: Int, done: Int, skipped: Int, level: Int) {
            self.date = date
            self.due = due
            self.done = done
            self.skipped = skipped
            self.level = level
        }

        /// Nothing was asked of the user that day: drawn blank.
        public var isBlank: Bool { due == 0 || due <= skipped }
    }

    public var title: String
    public var subtitle: String
    /// The days to draw, any order; the range drawn is from the first to the last date.
    public var days: [Day]
    public var weekStart: WeekStartDay

    public init(title: String, subtitle: String, days: [Day], weekStart: WeekStartDay) {
        self.title = title
        self.subtitle = subtitle
        self.days = days.sorted { $0.date < $1.date }
        self.weekStart = weekStart
    }

    // MARK: Colours and geometry (public: the tests find cells and shades with them)

    /// Level 0 … 4, lightest to darkest (GitHub's contribution greens).
    public static let shades = ["#ebedf0", "#9be9a8", "#40c463", "#30a14e", "#216e39"]
    public static let background = "#ffffff"
    public static let blankOutline = "#d0d7de"

    public static let cellSize = 13.0
    public static let pitch = 16.0
    public static let gridLeft = 48.0
    public static let gridTop = 78.0

    var firstColumnStart: ReportDate? { days.first.map { $0.date.weekStart(weekStart) } }

    public var columns: Int {
        guard let first = firstColumnStart, let last = days.last?.date else { return 0 }
        return (last.dayNumber - first.dayNumber) / 7 + 1
    }

    /// The top-left corner of the date's cell; nil outside the range.
    public func cellOrigin(for date: ReportDate) -> (x: Double, y: Double)? {
        guard let first = days.first?.date, let last = days.last?.date, let start = firstColumnStart,
              first <= date, date <= last else { return nil }
        let column = (date.dayNumber - start.dayNumber) / 7
        let row = (date.isoWeekday - weekStart.isoWeekday + 7) % 7
        return (Self.gridLeft + Double(column) * Self.pitch, Self.gridTop + Double(row) * Self.pitch)
    }

    /// The centre of the date's cell (where a test reads its colour).
    public func cellCentre(for date: ReportDate) -> (x: Double, y: Double)? {
        cellOrigin(for: date).map { ($0.x + Self.cellSize / 2, $0.y + Self.cellSize / 2) }
    }

    var gridBottom: Double { Self.gridTop + 7 * Self.pitch }
    var legendTop: Double { gridBottom + 14 }

    /// Where the legend's swatch of `level` (0…4) starts; `blank` is the legend's blank cell.
    public func legendSwatchOrigin(level: Int) -> (x: Double, y: Double) {
        (shadesLeft + Double(level) * Self.pitch, legendTop)
    }

    var shadesLeft: Double { legendLeft + 110 }

    var legendLeft: Double { Self.gridLeft }

    public var width: Double {
        max(Self.gridLeft + Double(columns) * Self.pitch + 24, 560)
    }

    public var height: Double { legendTop + Self.cellSize + 40 }

    // MARK: Drawing

    public func svg() -> String {
        var svg = SVGWriter(width: width, height: height, title: "\(title) — \(subtitle)", background: Self.background)
        svg.text(title, x: Self.gridLeft, y: 24, size: 15, bold: true)
        svg.text(subtitle, x: Self.gridLeft, y: 44, size: 11, fill: "#57606a")

        // Weekday labels, the user's week start first.
        for row in 0..<7 {
            let isoWeekday = (weekStart.isoWeekday - 1 + row) % 7 + 1
            svg.text(ReportDate.weekdayNames[isoWeekday - 1], x: Self.gridLeft - 6,
                     y: Self.gridTop + Double(row) * Self.pitch + Self.cellSize - 2, size: 10, anchor: .end, fill: "#57606a")
        }

        // Month labels: above the first column whose top day lies in a new month (for the first
        // column, its first day in the range). A label closer than three columns to the next one
        // (a partial first month) gives way.
        var labels: [(column: Int, text: String)] = []
        if let start = firstColumnStart, let first = days.first?.date {
            var previousMonth = 0
            for column in 0..<columns {
                let top = start.adding(days: 7 * column)
                let (year, month, _) = (column == 0 ? max(top, first) : top).components
                if month != previousMonth {
                    if let last = labels.last, column - last.column < 3 { labels.removeLast() }
                    let text = labels.isEmpty || month == 1 ? "\(ReportDate.monthNames[month - 1]) \(year)" : ReportDate.monthNames[month - 1]
                    labels.append((column, text))
                }
                previousMonth = month
            }
        }
        for label in labels {
            svg.text(label.text, x: Self.gridLeft + Double(label.column) * Self.pitch, y: Self.gridTop - 8, size: 10, fill: "#57606a")
        }

        for day in days {
            guard let origin = cellOrigin(for: day.date) else { continue }
            let tooltip = day.isBlank
                ? "\(day.date): nothing due" + (day.skipped > 0 ? " (\(day.skipped) skipped)" : "")
                : "\(day.date): \(day.done) of \(day.due) done" + (day.skipped > 0 ? ", \(day.skipped) skipped" : "")
            if day.isBlank {
                svg.rect(x: origin.x + 0.5, y: origin.y + 0.5, width: Self.cellSize - 1, height: Self.cellSize - 1,
                         fill: Self.background, stroke: Self.blankOutline, tooltip: tooltip)
            } else {
                svg.rect(x: origin.x, y: origin.y, width: Self.cellSize, height: Self.cellSize,
                         fill: Self.shades[min(max(day.level, 0), 4)], tooltip: tooltip)
            }
        }

        // Legend: blank, then less … more.
        let y = legendTop
        svg.rect(x: legendLeft + 0.5, y: y + 0.5, width: Self.cellSize - 1, height: Self.cellSize - 1,
                 fill: Self.background, stroke: Self.blankOutline)
        svg.text("nothing due", x: legendLeft + Self.cellSize + 4, y: y + Self.cellSize - 2, size: 10, fill: "#57606a")
        svg.text("Less", x: shadesLeft - 4, y: y + Self.cellSize - 2, size: 10, anchor: .end, fill: "#57606a")
        for level in 0...4 {
            svg.rect(x: shadesLeft + Double(level) * Self.pitch, y: y, width: Self.cellSize, height: Self.cellSize,
                     fill: Self.shades[level])
        }
        svg.text("More", x: shadesLeft + 5 * Self.pitch + 2, y: y + Self.cellSize - 2, size: 10, fill: "#57606a")
        svg.text("lightest: due, none done · darkest: all done", x: legendLeft, y: y + Self.cellSize + 20, size: 10, fill: "#57606a")
        return svg.document()
    }
}
