import Foundation

/// The user base's week by week: the median of users' weekly completion rates as a line, the
/// band between the lower and upper quartile behind it (rate axis 0–100 % on the left), and
/// the number of active users as bars on a second axis (right). Weeks without a rate (no
/// user with something due) leave a gap in the line and the band.
public struct WeeklyReport {
    public struct Week: Sendable, Equatable {
        public var start: ReportDate
        /// Rates as fractions 0…1; nil when no user had a rate that week.
        public var lowerQuartile: Double?
        public var median: Double?
        public var upperQuartile: Double?
        public var activeUsers: Int

        public init(start: ReportDate, lowerQuartile: Double?, median: Double?, upperQuartile: Double?, activeUsers: Int) {
            self.start = start
            self.lowerQuartile = lowerQuartile
            self.median = median
            self.upperQuartile = upperQuartile
            self.activeUsers = activeUsers
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

    // MARK: Colours and geometry (public for the tests)

    public static let medianColour = "#c2255c"
    public static let bandColour = "#fcc2d7"
    public static let barColour = "#a5d8ff"
    public static let gridColour = "#e9ecef"
    public static let axisColour = "#495057"
    public static let textColour = "#343a40"

    public static let plotLeft = 72.0
    public static let plotTop = 64.0
    public static let plotHeight = 280.0
    static let rightMargin = 80.0

    /// Horizontal room per week: wide for a few weeks, at least 12 px for long ranges.
    public var slot: Double {
        weeks.isEmpty ? 40 : min(96, max(12, 760 / Double(weeks.count)))
    }

    public var plotWidth: Double { max(Double(max(weeks.count, 1)) * slot, 560) }
    public var width: Double { Self.plotLeft + plotWidth + Self.rightMargin }
    public var height: Double { Self.plotTop + Self.plotHeight + 96 }
    var plotBottom: Double { Self.plotTop + Self.plotHeight }

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
        svg.text(title, x: Self.plotLeft, y: 24, size: 15, fill: Self.textColour, bold: true)
        svg.text(subtitle, x: Self.plotLeft, y: 44, size: 11, fill: "#57606a")
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

        // Active users: bars, behind everything else.
        let barWidth = max(slot * 0.6, 4)
        for (index, week) in weeks.enumerated() where week.activeUsers > 0 {
            let barTop = y(users: week.activeUsers)
            svg.rect(x: x(week: index) - barWidth / 2, y: barTop, width: barWidth, height: plotBottom - barTop,
                     fill: Self.barColour, tooltip: "week of \(week.start): \(week.activeUsers) active users")
        }

        // Quartile band and median line, one piece per run of weeks with rates.
        for run in runs() {
            let upper = run.map { (x(week: $0), y(rate: weeks[$0].upperQuartile ?? weeks[$0].median!)) }
            let lower = run.reversed().map { (x(week: $0), y(rate: weeks[$0].lowerQuartile ?? weeks[$0].median!)) }
            if run.count == 1 {
                let index = run[0]
                svg.rect(x: x(week: index) - slot * 0.3, y: upper[0].1, width: slot * 0.6, height: max(lower[0].1 - upper[0].1, 0),
                         fill: Self.bandColour, opacity: 0.8)
                svg.circle(cx: x(week: index), cy: y(rate: weeks[index].median!), r: 3.5, fill: Self.medianColour)
            } else {
                svg.polygon(upper + lower, fill: Self.bandColour, opacity: 0.8)
                svg.polyline(run.map { (x(week: $0), y(rate: weeks[$0].median!)) }, stroke: Self.medianColour, strokeWidth: 3)
            }
        }

        // Axes.
        svg.line(x1: Self.plotLeft, y1: Self.plotTop, x2: Self.plotLeft, y2: plotBottom, stroke: Self.axisColour)
        svg.line(x1: right, y1: Self.plotTop, x2: right, y2: plotBottom, stroke: Self.axisColour)
        svg.line(x1: Self.plotLeft, y1: plotBottom, x2: right, y2: plotBottom, stroke: Self.axisColour)

        // Week labels, as many as fit.
        let every = max(1, Int((56 / slot).rounded(.up)))
        for (index, week) in weeks.enumerated() where index % every == 0 {
            svg.line(x1: x(week: index), y1: plotBottom, x2: x(week: index), y2: plotBottom + 4, stroke: Self.axisColour)
            svg.text(week.start.shortLabel, x: x(week: index), y: plotBottom + 16, size: 10, anchor: .middle, fill: Self.textColour)
        }
        svg.text("week starting", x: Self.plotLeft + plotWidth / 2, y: plotBottom + 34, size: 11, anchor: .middle, fill: Self.textColour)
        let middle = Self.plotTop + Self.plotHeight / 2
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
        return svg.document()
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
