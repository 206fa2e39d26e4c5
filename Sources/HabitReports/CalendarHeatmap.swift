/// A contribution-calendar heatmap of one user's habits (or one habit): weeks as columns,
/// weekdays as rows starting with the user's week start, one cell per day of the range
/// (definitions of stats.calendar, docs/protocol.md). What a cell says is told by its shape
/// first and its shade second, so that it reads in greyscale and to colour-blind eyes
/// (CalendarHeatmapTests checks the rendered picture in greyscale):
///
/// - nothing to do (due = 0, or every due habit skipped): an empty outlined square;
/// - missed (a past day with something due and nothing done): the lightest shade crossed by an ×;
/// - part done, levels 1–4: darker and darker; a fully done day is level 4, the darkest;
/// - today: framed; while nothing of it is done yet, the lightest shade without the ×;
/// - after today: a small dot (nothing is known yet; stats.calendar counts those days as due
///   and not done, which is not a miss).
///
/// Month labels above the first column of each month, weekday labels on the left, a legend
/// below; a header of title, subtitle and caption, wrapped to the picture's width.
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

    /// What a day's cell shows.
    public enum Cell: Equatable, Sendable {
        case nothingDue
        /// Due, nothing done, and the day is over.
        case missed
        /// Today, something due and nothing done yet.
        case notDoneYet
        /// Something done: level 1…4.
        case done(level: Int)
        /// After today.
        case future
    }

    public var title: String
    public var subtitle: String
    /// A small line under the subtitle (the user's id), or nil.
    public var caption: String?
    /// The days to draw, any order; the range drawn is from the first to the last date.
    public var days: [Day]
    public var weekStart: WeekStartDay
    /// The user's today, in their zone: later days are drawn as not yet known, today framed.
    public var today: ReportDate

    public init(title: String, subtitle: String, caption: String? = nil, days: [Day], weekStart: WeekStartDay, today: ReportDate) {
        self.title = title
        self.subtitle = subtitle
        self.caption = caption
        self.days = days.sorted { $0.date < $1.date }
        self.weekStart = weekStart
        self.today = today
    }

    /// The header `habit report calendar` draws. Profiles have no display name (docs/schema.md,
    /// public.profiles), so the title names what is drawn: the habit given with --habit, or the
    /// user's habits on in the range, in display order, as many as fit on the title's line
    /// and how many more; the user's id goes to the caption, small. The subtitle: the range,
    /// today and the zone it is today in, and the week start.
    public static func header(habitNames: [String], oneHabit: Bool, user: String, from: ReportDate, to: ReportDate,
                              zone: String, weekStart: WeekStartDay, today: ReportDate) -> (title: String, subtitle: String, caption: String) {
        func title(listing count: Int) -> String {
            let shown = Array(habitNames.prefix(count)), more = habitNames.count - count
            switch (shown.count, more) {
            case (0, 0): return oneHabit ? "Habit calendar" : "Habit calendar: no habit on in this range"
            case (1, 0): return "Habit calendar: " + shown[0]
            case (_, 0): return "Habit calendar: " + shown.dropLast().joined(separator: ", ") + " and " + shown.last!
            default: return "Habit calendar: " + shown.joined(separator: ", ") + " and \(more) more habit\(more == 1 ? "" : "s")"
            }
        }
        let columns = (to.dayNumber - from.weekStart(weekStart).dayNumber) / 7 + 1
        let room = width(columns: columns) - gridLeft - 16
        let fitting = stride(from: habitNames.count, to: 1, by: -1).first {
            TextMetrics.width(title(listing: $0), size: titleSize, bold: true) <= room
        } ?? min(habitNames.count, 1)
        let subtitle = "\(from) to \(to) · today \(today) in \(zone) · weeks start on \(weekStart == .monday ? "Monday" : "Sunday")"
        return (title(listing: fitting), subtitle, "user " + user)
    }

    public func cell(for day: Day) -> Cell {
        if day.date > today { return .future }
        if day.isBlank { return .nothingDue }
        if day.done > 0 && day.level > 0 { return .done(level: min(day.level, 4)) }
        return day.date == today ? .notDoneYet : .missed
    }

    // MARK: Colours and geometry (public: the tests find cells and shades with them)

    /// Level 0 … 4, lightest to darkest (GitHub's contribution greens).
    public static let shades = ["#ebedf0", "#9be9a8", "#40c463", "#30a14e", "#216e39"]
    public static let background = "#ffffff"
    public static let blankOutline = "#d0d7de"
    /// The × of a missed day: dark enough to stand out on the lightest shade in greyscale.
    public static let missedMark = "#57606a"
    /// The dot of a day after today.
    public static let futureDot = "#8c959f"
    /// The frame around today.
    public static let todayFrame = "#24292f"
    static let labelColour = "#57606a"

    public static let cellSize = 13.0
    public static let pitch = 16.0
    public static let gridLeft = 48.0
    static let titleSize = 15.0, subtitleSize = 11.0, captionSize = 10.0

    var firstColumnStart: ReportDate? { days.first.map { $0.date.weekStart(weekStart) } }

    public var columns: Int {
        guard let first = firstColumnStart, let last = days.last?.date else { return 0 }
        return (last.dayNumber - first.dayNumber) / 7 + 1
    }

    public var width: Double { Self.width(columns: columns) }

    static func width(columns: Int) -> Double { max(gridLeft + Double(columns) * pitch + 24, 560) }

    /// The room a header line may take: from the grid's left edge to 16 px before the right edge.
    var textWidth: Double { width - Self.gridLeft - 16 }

    /// The title in at most two lines (the second cut with an ellipsis when the title is longer
    /// still: the document's <title> keeps all of it), the subtitle and caption in as many as they need.
    var titleLines: [String] {
        var lines = TextMetrics.wrap(title, width: textWidth, size: Self.titleSize, bold: true)
        if lines.count > 2 {
            var second = lines[1]
            while !second.isEmpty && TextMetrics.width(second + "…", size: Self.titleSize, bold: true) > textWidth { second.removeLast() }
            lines = [lines[0], second + "…"]
        }
        return lines
    }

    /// Every header line with its baseline and size, top to bottom.
    var headerLines: [(text: String, y: Double, size: Double, bold: Bool)] {
        var lines: [(text: String, y: Double, size: Double, bold: Bool)] = []
        var y = 24.0
        for line in titleLines {
            lines.append((line, y, Self.titleSize, true))
            y += 19
        }
        y += 1
        for line in TextMetrics.wrap(subtitle, width: textWidth, size: Self.subtitleSize) {
            lines.append((line, y, Self.subtitleSize, false))
            y += 15
        }
        if let caption {
            y -= 1
            for line in TextMetrics.wrap(caption, width: textWidth, size: Self.captionSize) {
                lines.append((line, y, Self.captionSize, false))
                y += 14
            }
        }
        return lines
    }

    /// The top of the grid: below the header (the month labels stand 8 px above it).
    public var gridTop: Double { (headerLines.last?.y ?? 44) + 34 }

    /// The top-left corner of the date's cell; nil outside the range.
    public func cellOrigin(for date: ReportDate) -> (x: Double, y: Double)? {
        guard let first = days.first?.date, let last = days.last?.date, let start = firstColumnStart,
              first <= date, date <= last else { return nil }
        let column = (date.dayNumber - start.dayNumber) / 7
        let row = (date.isoWeekday - weekStart.isoWeekday + 7) % 7
        return (Self.gridLeft + Double(column) * Self.pitch, gridTop + Double(row) * Self.pitch)
    }

    /// The centre of the date's cell (where a test reads its colour).
    public func cellCentre(for date: ReportDate) -> (x: Double, y: Double)? {
        cellOrigin(for: date).map { ($0.x + Self.cellSize / 2, $0.y + Self.cellSize / 2) }
    }

    var gridBottom: Double { gridTop + 7 * Self.pitch }
    /// The legend's two rows: what the shapes mean, then the shades.
    var legendTop: Double { gridBottom + 14 }
    var shadesTop: Double { legendTop + Self.cellSize + 10 }

    /// Where the legend's swatch of `level` (0…4, the "Less … More" row) starts.
    public func legendSwatchOrigin(level: Int) -> (x: Double, y: Double) {
        (shadesLeft + Double(level) * Self.pitch, shadesTop)
    }

    var shadesLeft: Double { Self.gridLeft + TextMetrics.width("Less", size: 10) + 6 }

    /// Where the legend's swatch of a kind of cell starts (row one: nothing due, missed, after today, today).
    public func legendSwatchOrigin(_ cell: Cell) -> (x: Double, y: Double)? {
        legendEntries.first { $0.cell == cell }.map { ($0.x, legendTop) }
    }

    var legendEntries: [(cell: Cell, x: Double, label: String)] {
        var x = Self.gridLeft
        return [(Cell.nothingDue, "nothing due"), (.missed, "missed"), (.future, "after today"), (.notDoneYet, "today")].map { cell, label in
            defer { x += Self.cellSize + 6 + TextMetrics.width(label, size: 10) + 16 }
            return (cell, x, label)
        }
    }

    public var height: Double { shadesTop + Self.cellSize + 18 }

    // MARK: Drawing

    public func svg() -> String {
        var svg = SVGWriter(width: width, height: height, title: "\(title) — \(subtitle)", background: Self.background)
        for line in headerLines {
            svg.text(line.text, x: Self.gridLeft, y: line.y, size: line.size,
                     fill: line.bold ? "#24292f" : Self.labelColour, bold: line.bold)
        }

        // Weekday labels, the user's week start first.
        for row in 0..<7 {
            let isoWeekday = (weekStart.isoWeekday - 1 + row) % 7 + 1
            svg.text(ReportDate.weekdayNames[isoWeekday - 1], x: Self.gridLeft - 6,
                     y: gridTop + Double(row) * Self.pitch + Self.cellSize - 2, size: 10, anchor: .end, fill: Self.labelColour)
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
            svg.text(label.text, x: Self.gridLeft + Double(label.column) * Self.pitch, y: gridTop - 8, size: 10, fill: Self.labelColour)
        }

        for day in days {
            guard let origin = cellOrigin(for: day.date) else { continue }
            let skipped = day.skipped > 0 ? ", \(day.skipped) skipped" : ""
            let cell = cell(for: day)
            let tooltip: String
            switch cell {
            case .future: tooltip = "\(day.date): after today" + (day.skipped > 0 ? " (\(day.skipped) skipped ahead)" : "")
            case .nothingDue: tooltip = "\(day.date): nothing due" + (day.skipped > 0 ? " (\(day.skipped) skipped)" : "")
            case .missed: tooltip = "\(day.date): missed, 0 of \(day.due) done\(skipped)"
            case .notDoneYet, .done: tooltip = "\(day.date)\(day.date == today ? " (today)" : ""): \(day.done) of \(day.due) done\(skipped)"
            }
            draw(cell, at: origin, into: &svg, tooltip: tooltip)
            if day.date == today { frame(origin, into: &svg) }
        }

        // Legend, row one: the shapes.
        for entry in legendEntries {
            let origin = (x: entry.x, y: legendTop)
            if entry.cell == .notDoneYet {
                draw(.nothingDue, at: origin, into: &svg)
                frame(origin, into: &svg)
            } else {
                draw(entry.cell, at: origin, into: &svg)
            }
            svg.text(entry.label, x: entry.x + Self.cellSize + 6, y: legendTop + Self.cellSize - 2, size: 10, fill: Self.labelColour)
        }
        // Row two: the shades, a missed day first.
        let y = shadesTop
        svg.text("Less", x: Self.gridLeft, y: y + Self.cellSize - 2, size: 10, fill: Self.labelColour)
        for level in 0...4 {
            draw(level == 0 ? .missed : .done(level: level), at: legendSwatchOrigin(level: level), into: &svg)
        }
        let more = shadesLeft + 5 * Self.pitch + 2
        svg.text("More", x: more, y: y + Self.cellSize - 2, size: 10, fill: Self.labelColour)
        svg.text("share of the day's due habits done (skipped ones not counted)",
                 x: more + TextMetrics.width("More", size: 10) + 12, y: y + Self.cellSize - 2, size: 10, fill: Self.labelColour)
        return svg.document()
    }

    func draw(_ cell: Cell, at origin: (x: Double, y: Double), into svg: inout SVGWriter, tooltip: String? = nil) {
        let size = Self.cellSize
        switch cell {
        case .nothingDue:
            svg.rect(x: origin.x + 0.5, y: origin.y + 0.5, width: size - 1, height: size - 1,
                     fill: Self.background, stroke: Self.blankOutline, tooltip: tooltip)
        case .missed:
            svg.rect(x: origin.x, y: origin.y, width: size, height: size, fill: Self.shades[0], tooltip: tooltip)
            let (near, far) = (3.0, size - 3)
            svg.line(x1: origin.x + near, y1: origin.y + near, x2: origin.x + far, y2: origin.y + far, stroke: Self.missedMark, strokeWidth: 1.5)
            svg.line(x1: origin.x + near, y1: origin.y + far, x2: origin.x + far, y2: origin.y + near, stroke: Self.missedMark, strokeWidth: 1.5)
        case .notDoneYet:
            svg.rect(x: origin.x, y: origin.y, width: size, height: size, fill: Self.shades[0], tooltip: tooltip)
        case .done(let level):
            svg.rect(x: origin.x, y: origin.y, width: size, height: size, fill: Self.shades[min(max(level, 1), 4)], tooltip: tooltip)
        case .future:
            // A transparent square carries the tooltip over the whole cell.
            svg.rect(x: origin.x, y: origin.y, width: size, height: size, fill: Self.background, tooltip: tooltip)
            svg.circle(cx: origin.x + size / 2, cy: origin.y + size / 2, r: 2, fill: Self.futureDot)
        }
    }

    /// Today's frame: in the 3 px gap around the cell, so the cell's own colour stays whole.
    func frame(_ origin: (x: Double, y: Double), into svg: inout SVGWriter) {
        svg.rect(x: origin.x - 1.5, y: origin.y - 1.5, width: Self.cellSize + 3, height: Self.cellSize + 3,
                 fill: "none", stroke: Self.todayFrame, strokeWidth: 1.5)
    }
}
