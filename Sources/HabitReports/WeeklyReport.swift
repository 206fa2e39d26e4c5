import Foundation

/// The user base's week by week: the median of users' weekly completion rates as a line, the
/// band between the lower and upper quartile behind it (rate axis 0–100 % on the left), and
/// the number of active users as bars on a second axis (right). Weeks without a rate (no
/// user with something due) leave a gap in the line and the band. A week that is not over
/// (`partial`: counted up to today) is drawn as such: a hollow point reached by a dashed line,
/// labelled "so far", a lighter band and a dashed, lighter bar — so that it does not read as
/// a week like the others.
public struct WeeklyReport {
    public struct Week: Sendable, Equatable {
        public var start: ReportDate
        /// Rates as fractions 0…1; nil when no user had a rate that week.
        public var lowerQuartile: Double?
        public var median: Double?
        public var upperQuartile: Double?
        public var activeUsers: Int
        /// The week is not over: its rates and users count its days up to today only.
        public var partial: Bool

        public init(start: ReportDate, lowerQuartile: Double?, median: Double?, upperQuartile: Double?, activeUsers: Int,
                    partial: Bool = false) {
            self.start = start
            self.lowerQuartile = lowerQuartile
            self.median = median
            self.upperQuartile = upperQuartile
            self.activeUsers = activeUsers
            self.partial = partial
        }
    }

    public var title: String
    public var subtitle: String
    public var weeks: [Week]

    public init(title: String, subtitle: String, weeks: [Week]) {
        self.title = title
        self.subtitle = subtitle
        self.weeks = weeks.sorted { $0.start < $1.start }
    }

    /// The header `habit report weekly` draws: the convention and range, where the rates come
    /// from (and that the week not over, `partialWeek`, is counted up to today), and the most
    /// users of a week.
    public static func header(from: ReportDate, to: ReportDate, weekStart: WeekStartDay, users: Int,
                              partialWeek: ReportDate?) -> (title: String, subtitle: String) {
        ("Weekly completion rate of all users",
         "weeks starting on \(weekStart == .monday ? "Monday" : "Sunday"), \(from) to \(to) · stored counts of habit weekly-counts --store"
             + (partialWeek.map { " · the week of \($0.shortLabel) is not over: counted up to each user's today" } ?? "")
             + " · up to \(users) users a week")
    }

    // MARK: Colours and geometry (public for the tests)

    public static let medianColour = "#c2255c"
    public static let bandColour = "#fcc2d7"
    public static let barColour = "#a5d8ff"
    public static let gridColour = "#e9ecef"
    public static let axisColour = "#495057"
    public static let textColour = "#343a40"
    /// A partial week's bar outline (the bar's blue, darker) and the opacity of its bar and band.
    public static let partialBarOutline = "#4dabf7"
    public static let partialOpacity = 0.45
    /// The hollow point of a partial week's median (stroke 2 px, white inside).
    public static let partialPointRadius = 4.5

    public static let plotLeft = 72.0
    public static let plotHeight = 280.0
    static let rightMargin = 80.0

    /// Horizontal room per week: wide for a few weeks, at least 12 px for long ranges.
    public var slot: Double {
        weeks.isEmpty ? 40 : min(96, max(12, 760 / Double(weeks.count)))
    }

    public var plotWidth: Double { max(Double(max(weeks.count, 1)) * slot, 560) }
    public var width: Double { Self.plotLeft + plotWidth + Self.rightMargin }
    public var height: Double { plotTop + Self.plotHeight + (weeks.contains { $0.partial } ? 116 : 96) }
    var plotBottom: Double { plotTop + Self.plotHeight }

    /// The header's lines with their baselines and sizes: title and subtitle wrapped to the
    /// width from the plot's left edge to 16 px before the picture's right edge.
    var headerLines: [(text: String, y: Double, size: Double, bold: Bool)] {
        let room = width - Self.plotLeft - 16
        var lines: [(text: String, y: Double, size: Double, bold: Bool)] = []
        var y = 24.0
        for line in TextMetrics.wrap(title, width: room, size: 15, bold: true) {
            lines.append((line, y, 15, true))
            y += 19
        }
        y += 1
        for line in TextMetrics.wrap(subtitle, width: room, size: 11) {
            lines.append((line, y, 11, false))
            y += 15
        }
        return lines
    }

    /// The top of the plot (the 100 % line): 20 px below the header's last line.
    public var plotTop: Double { (headerLines.last?.y ?? 44) + 20 }

    /// The x of week `index`'s centre.
    public func x(week index: Int) -> Double { Self.plotLeft + (Double(index) + 0.5) * slot }

    /// The y of a rate (0…1, clamped).
    public func y(rate: Double) -> Double { plotBottom - min(max(rate, 0), 1) * Self.plotHeight }

    /// The top of the active-user axis: a round number ≥ the busiest week.
    public var usersAxisMaximum: Int {
        let most = weeks.map(\.activeUsers).max() ?? 0
        guard most > 0 else { return 4 }
        let magnitude = pow(10, floor(log10(Double(most))))
        for step in [1.0, 2.0, 2.5, 5.0, 10.0] where step * magnitude >= Double(most) {
            let top = Int(step * magnitude)
            return top % 4 == 0 ? top : Int((Double(top) / 4).rounded(.up)) * 4
        }
        return most
    }

    /// The y of an active-user count on the right axis.
    public func y(users: Int) -> Double { plotBottom - Double(users) / Double(usersAxisMaximum) * Self.plotHeight }

    // MARK: Drawing

    public func svg() -> String {
        var svg = SVGWriter(width: width, height: height, title: "\(title) — \(subtitle)")
        let plotTop = self.plotTop
        for line in headerLines {
            svg.text(line.text, x: Self.plotLeft, y: line.y, size: line.size, fill: line.bold ? Self.textColour : "#57606a", bold: line.bold)
        }
        let right = Self.plotLeft + plotWidth

        // Grid and the rate axis (left).
        for tick in stride(from: 0, through: 100, by: 25) {
            let tickY = y(rate: Double(tick) / 100)
            svg.line(x1: Self.plotLeft, y1: tickY, x2: right, y2: tickY, stroke: Self.gridColour)
            svg.text("\(tick) %", x: Self.plotLeft - 6, y: tickY + 4, size: 10, anchor: .end, fill: Self.textColour)
        }
        // The active-user axis (right).
        let usersTop = usersAxisMaximum
        for step in 0...4 {
            let users = usersTop * step / 4
            svg.text("\(users)", x: right + 6, y: y(users: users) + 4, size: 10, fill: Self.textColour)
        }

        // Active users: bars, behind everything else; a partial week's lighter, its outline dashed.
        let barWidth = max(slot * 0.6, 4)
        for (index, week) in weeks.enumerated() where week.activeUsers > 0 {
            let barTop = y(users: week.activeUsers)
            let tooltip = "week of \(week.start)\(week.partial ? " so far" : ""): \(week.activeUsers) active users"
            if week.partial {
                svg.rect(x: x(week: index) - barWidth / 2 + 0.5, y: barTop + 0.5, width: barWidth - 1, height: max(plotBottom - barTop - 0.5, 0),
                         fill: Self.barColour, stroke: Self.partialBarOutline, dash: [3, 2], opacity: Self.partialOpacity, tooltip: tooltip)
            } else {
                svg.rect(x: x(week: index) - barWidth / 2, y: barTop, width: barWidth, height: plotBottom - barTop,
                         fill: Self.barColour, tooltip: tooltip)
            }
        }

        // Quartile band and median line, one piece per run of complete weeks with rates.
        for run in runs() {
            for piece in Self.split(run, where: { !weeks[$0].partial }) {
                let upper = piece.map { (x(week: $0), y(rate: weeks[$0].upperQuartile ?? weeks[$0].median!)) }
                let lower = piece.reversed().map { (x(week: $0), y(rate: weeks[$0].lowerQuartile ?? weeks[$0].median!)) }
                if piece.count == 1 {
                    let index = piece[0]
                    svg.rect(x: x(week: index) - slot * 0.3, y: upper[0].1, width: slot * 0.6, height: max(lower[0].1 - upper[0].1, 0),
                             fill: Self.bandColour, opacity: 0.8)
                    svg.circle(cx: x(week: index), cy: y(rate: weeks[index].median!), r: 3.5, fill: Self.medianColour)
                } else {
                    svg.polygon(upper + lower, fill: Self.bandColour, opacity: 0.8)
                    svg.polyline(piece.map { (x(week: $0), y(rate: weeks[$0].median!)) }, stroke: Self.medianColour, strokeWidth: 3)
                }
            }
            // A week not over: its band lighter, dashed lines to its neighbours in the run, a
            // hollow point and "so far".
            for index in run where weeks[index].partial {
                let week = weeks[index], median = week.median!
                let top = y(rate: week.upperQuartile ?? median), bottom = y(rate: week.lowerQuartile ?? median)
                svg.rect(x: x(week: index) - slot * 0.3, y: top, width: slot * 0.6, height: max(bottom - top, 0),
                         fill: Self.bandColour, opacity: Self.partialOpacity)
                for neighbour in [index - 1, index + 1] where run.contains(neighbour) {
                    svg.polyline([(x(week: neighbour), y(rate: weeks[neighbour].median!)), (x(week: index), y(rate: median))],
                                 stroke: Self.medianColour, strokeWidth: 2, dash: [5, 3])
                }
            }
            for index in run where weeks[index].partial {
                let week = weeks[index], pointY = y(rate: week.median!)
                svg.circle(cx: x(week: index), cy: pointY, r: Self.partialPointRadius, fill: "#ffffff", stroke: Self.medianColour, strokeWidth: 2,
                           tooltip: "week of \(week.start) so far: median \(Self.percent(week.median!))"
                               + (week.lowerQuartile.flatMap { lower in week.upperQuartile.map { ", middle half \(Self.percent(lower))–\(Self.percent($0))" } } ?? ""))
                // Above the band (clear of the dashed line), or below it near the top.
                let top = y(rate: week.upperQuartile ?? week.median!), bottom = y(rate: week.lowerQuartile ?? week.median!)
                let labelY = top - 6 < plotTop + 12 ? max(bottom, pointY + Self.partialPointRadius) + 14 : top - 6
                svg.text("so far", x: x(week: index), y: labelY, size: 10, anchor: .middle, fill: Self.medianColour, bold: true)
            }
        }

        // Axes.
        svg.line(x1: Self.plotLeft, y1: plotTop, x2: Self.plotLeft, y2: plotBottom, stroke: Self.axisColour)
        svg.line(x1: right, y1: plotTop, x2: right, y2: plotBottom, stroke: Self.axisColour)
        svg.line(x1: Self.plotLeft, y1: plotBottom, x2: right, y2: plotBottom, stroke: Self.axisColour)

        // Week labels, as many as fit.
        let every = max(1, Int((56 / slot).rounded(.up)))
        for (index, week) in weeks.enumerated() where index % every == 0 {
            svg.line(x1: x(week: index), y1: plotBottom, x2: x(week: index), y2: plotBottom + 4, stroke: Self.axisColour)
            svg.text(week.start.shortLabel, x: x(week: index), y: plotBottom + 16, size: 10, anchor: .middle, fill: Self.textColour)
        }
        svg.text("week starting", x: Self.plotLeft + plotWidth / 2, y: plotBottom + 34, size: 11, anchor: .middle, fill: Self.textColour)
        let middle = plotTop + Self.plotHeight / 2
        svg.text("completion rate (users' weekly rate)", x: 20, y: middle, size: 11, anchor: .middle, fill: Self.textColour, rotation: -90)
        svg.text("active users", x: right + 56, y: middle, size: 11, anchor: .middle, fill: Self.textColour, rotation: 90)

        if weeks.allSatisfy({ $0.median == nil && $0.activeUsers == 0 }) {
            svg.text("no stored counts in this range (run habit weekly-counts --store)", x: Self.plotLeft + plotWidth / 2,
                     y: middle, size: 12, anchor: .middle, fill: "#868e96")
        }

        // Legend.
        let legendY = plotBottom + 58
        var legendX = Self.plotLeft
        svg.line(x1: legendX, y1: legendY - 4, x2: legendX + 22, y2: legendY - 4, stroke: Self.medianColour, strokeWidth: 3)
        svg.text("median", x: legendX + 28, y: legendY, size: 11, fill: Self.textColour)
        legendX += 90
        svg.rect(x: legendX, y: legendY - 10, width: 22, height: 12, fill: Self.bandColour, opacity: 0.8)
        svg.text("middle half of users (25th–75th percentile)", x: legendX + 28, y: legendY, size: 11, fill: Self.textColour)
        legendX += 290
        svg.rect(x: legendX, y: legendY - 10, width: 22, height: 12, fill: Self.barColour)
        svg.text("active users (right axis)", x: legendX + 28, y: legendY, size: 11, fill: Self.textColour)
        if weeks.contains(where: { $0.partial }) {
            let rowY = legendY + 20
            svg.line(x1: Self.plotLeft, y1: rowY - 4, x2: Self.plotLeft + 22, y2: rowY - 4, stroke: Self.medianColour, strokeWidth: 2, dash: [5, 3])
            svg.circle(cx: Self.plotLeft + 22, cy: rowY - 4, r: Self.partialPointRadius, fill: "#ffffff", stroke: Self.medianColour, strokeWidth: 2)
            svg.text("so far: a week not over, counted up to each user's today (its bar and band lighter)",
                     x: Self.plotLeft + 34, y: rowY, size: 11, fill: Self.textColour)
        }
        return svg.document()
    }

    /// "57.1 %": a rate as a percentage with at most one decimal.
    static func percent(_ rate: Double) -> String {
        let tenths = Int((rate * 1000).rounded())
        return tenths % 10 == 0 ? "\(tenths / 10) %" : "\(tenths / 10).\(tenths % 10) %"
    }

    /// The maximal pieces of consecutive elements of `run` that satisfy `keep`.
    static func split(_ run: [Int], where keep: (Int) -> Bool) -> [[Int]] {
        var pieces: [[Int]] = [], current: [Int] = []
        for index in run {
            if keep(index) {
                current.append(index)
            } else if !current.isEmpty {
                pieces.append(current)
                current = []
            }
        }
        if !current.isEmpty { pieces.append(current) }
        return pieces
    }

    /// Maximal runs of consecutive weeks that have a median.
    func runs() -> [[Int]] {
        var runs: [[Int]] = []
        var current: [Int] = []
        for (index, week) in weeks.enumerated() {
            if week.median != nil {
                current.append(index)
            } else if !current.isEmpty {
                runs.append(current)
                current = []
            }
        }
        if !current.isEmpty { runs.append(current) }
        return runs
    }
}
