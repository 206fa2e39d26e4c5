import ArgumentParser
import Foundation
import HabitBatch
import HabitStore
import PostgresClient

struct DevCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev",
        abstract: "Developer tools (data generation).",
        subcommands: [Seed.self]
    )

    struct Seed: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Fill a database with generated users, habits and completions (set-based SQL).",
            discussion: "Needs a role that may write every user's rows: a superuser, or the embedded server's default."
        )

        @OptionGroup var database: DatabaseOptions
        @Option(help: "Number of users.") var users = 100_000
        @Option(help: "Habits per user.") var habits = 5
        @Option(help: "Weeks of completions, ending at --end-date.") var weeks = 20
        @Option(help: "Probability that a habit is completed on a day.") var rate = 0.7
        @Option(help: ArgumentHelp("Last day with completions (default: 2026-11-15).", valueName: "date"))
        var endDate: CalendarDate = CalendarDate(year: 2026, month: 11, day: 15)!

        func validate() throws {
            guard users >= 0, habits >= 0, weeks >= 1, (0...1).contains(rate) else {
                throw ValidationError("--users, --habits ≥ 0, --weeks ≥ 1 and --rate in 0…1")
            }
        }

        func run() throws {
            try reportingFailures {
                let url = try database.connectionURL(embedded: \.adminConnectionString, migrating: true)
                let connection = try database.connect(url, applicationName: "habit-seed")
                defer { connection.close() }
                var seeder = Seeder(endDate: endDate)
                seeder.users = users
                seeder.habitsPerUser = habits
                seeder.weeks = weeks
                seeder.completionRate = rate
                let report = try seeder.run(on: connection)
                FileHandle.standardError.write(Data("habit: seeded \(users) users, \(report.habits) habits, \(report.completions) completions (\(seeder.startDate)…\(endDate))\n".utf8))
            }
        }
    }
}
