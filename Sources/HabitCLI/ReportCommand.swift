import ArgumentParser
import Foundation
import HabitBatch
import HabitReports
import HabitStore
import PostgresClient

/// `habit report calendar|weekly`: pictures for admins and exports, written as SVG.
struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Pictures for admins and exports, as SVG: a user's calendar heatmap, the user base's weekly completion.",
        discussion: """
            Both read as the habit_admin role (SET LOCAL ROLE habit_admin: read every user's rows, \
            write nothing), so the connecting role must be a member of habit_admin; without \
            --database-url or DATABASE_URL the embedded server's superuser connects. \
            See docs/admin.md ("Pictures").

            Exit status: 0 written; 64 bad arguments; 3 database unreachable or lost; 1 any other error.
            """,
        subcommands: [Calendar.self, Weekly.self]
    )

    /// Writes `svg` to `path` (atomically: a reader never sees half a picture), or to stdout for "-".
    static func write(_ svg: String, to path: String) throws {
        if path == "-" {
            FileHandle.standardOutput.write(Data(svg.utf8))
        } else {
            try Data(svg.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        }
    }

    static func connection(_ database: DatabaseOptions, _ application: String) throws -> Connection {
        try database.connect(try database.connectionURL(embedded: \.adminConnectionString), applicationName: application)
    }

    struct Calendar: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A user's year as a heatmap: weeks as columns, weekdays as rows, five shades.",
            discussion: """
                One cell per day of [--from, --to] (at most 366 days), from habit.stats_calendar over \
                the user's habits (or --habit): blank (outline only) when nothing was due or every due \
                habit was skipped; the lightest shade when something was due and nothing done; darker \
                as more of it was done (level = ceil(4 × done ÷ (due − skipped))); the darkest when \
                all was done. Weeks start on the user's week start (profiles.week_start).
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Option(help: ArgumentHelp("The user.", valueName: "uuid"))
        var user: String

        @Option(help: ArgumentHelp("Only this habit of the user.", valueName: "uuid"))
        var habit: String?

        @Option(help: ArgumentHelp("First day (YYYY-MM-DD).", valueName: "date"))
        var from: CalendarDate

        @Option(help: ArgumentHelp("Last day (YYYY-MM-DD), inclusive; at most 366 days after --from counted inclusively.", valueName: "date"))
        var to: CalendarDate

        @Option(help: ArgumentHelp("Where to write the SVG (- for stdout).", valueName: "file.svg"))
        var out: String

        func validate() throws {
            guard UUID(uuidString: user) != nil, user.utf8.count == 36 else { throw ValidationError("--user must be a UUID") }
            if let habit, UUID(uuidString: habit) == nil || habit.utf8.count != 36 {
                throw ValidationError("--habit must be a UUID")
            }
            guard from <= to else { throw ValidationError("--from \(from) is after --to \(to)") }
            guard from.days(until: to) < 366 else {
                throw ValidationError("--from \(from) to --to \(to) is \(from.days(until: to) + 1) days; at most 366")
            }
        }

        func run() throws {
            try reportingFailures {
                let connection = try ReportCommand.connection(database, "habit-report-calendar")
                defer { connection.close() }
                let heatmap = try AdminReports.calendar(on: connection, user: UUID(uuidString: user)!,
                                                        habit: habit.flatMap(UUID.init(uuidString:)), from: from, to: to)
                try ReportCommand.write(heatmap.svg(), to: out)
            }
        }
    }

    struct Weekly: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The user base's weekly completion rate (median, quartile band) and active users per week.",
            discussion: """
                Reads the batch job's stored counts (weekly_completion_counts, written by \
                `habit weekly-counts --store` with the same --week-start) for every week overlapping \
                [--from, --to]: the line is the median of users' weekly completion_rate, the band the \
                middle half (25th to 75th percentile) — users with nothing due that week have no rate \
                and are left out — and the bars (right axis) count users with a habit on that week \
                (active_habit_days > 0). A week without stored rows is a gap.
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Option(help: ArgumentHelp("First day of the range (YYYY-MM-DD).", valueName: "date"))
        var from: CalendarDate

        @Option(help: ArgumentHelp("Last day of the range (YYYY-MM-DD), inclusive.", valueName: "date"))
        var to: CalendarDate

        @Option(help: "The stored counts' week convention: monday or sunday (as given to weekly-counts --store).")
        var weekStart: WeekStart = .monday

        @Option(help: ArgumentHelp("Where to write the SVG (- for stdout).", valueName: "file.svg"))
        var out: String

        func validate() throws {
            guard from <= to else { throw ValidationError("--from \(from) is after --to \(to)") }
            guard from.days(until: to) < 7 * 520 else { throw ValidationError("--from to --to spans more than 520 weeks") }
        }

        func run() throws {
            try reportingFailures {
                let connection = try ReportCommand.connection(database, "habit-report-weekly")
                defer { connection.close() }
                let report = try AdminReports.weekly(on: connection, from: from, to: to, weekStart: weekStart)
                try ReportCommand.write(report.svg(), to: out)
            }
        }
    }
}
