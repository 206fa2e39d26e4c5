import ArgumentParser
import Foundation
import HabitBatch
import HabitStore
import PostgresClient

extension CalendarDate: ExpressibleByArgument {
    public init?(argument: String) { self.init(iso8601: argument) }
}

extension WeekStart: ExpressibleByArgument {}
extension WeeklyCountsJob.Format: ExpressibleByArgument {}

struct WeeklyCountsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "weekly-counts",
        abstract: "Weekly completion counts for every user (or one), computed in PostgreSQL and streamed.",
        discussion: """
            For every user with a habit or a profile and every week overlapping [--from, --to], one row:
              user_id,week_start,completions,days_with_completion,active_habit_days,due_habit_days,skipped_habit_days,completion_rate
            sorted by user_id then week_start. active_habit_days counts habit-days on (a deactivated \
            habit on the days it was active), due_habit_days those its schedule asked for, \
            skipped_habit_days the due ones skipped; completion_rate = completions on due days ÷ (due − \
            skipped), NULL when that is 0. CSV (with that header) by default; --format json writes \
            one object per line; --format table an aligned table. --store upserts the rows into \
            weekly_completion_counts instead of printing them, keyed by user, week convention and week, and \
            deletes the stored rows of the same convention, weeks and users (every user without --user) \
            that the run did not produce; re-running changes nothing that did not change.

            The computation only reads, so --database-url may be a hot standby (a read replica). With \
            --store the rows are written through --store-url (env HABIT_STORE_URL, e.g. the primary) when \
            given, else through --database-url; --store against a read-only server without --store-url is \
            refused (exit 64) before anything is computed.

            --store --incremental recomputes only the (user, week) pairs of [--from, --to] whose \
            counts may have changed since the last incremental run of the same --week-start: the \
            database marks the days every write touches (sql/functions/weekly_counts.sql), whoever writes. The first \
            incremental run of a convention computes the whole range (and from then on the \
            database marks changes); later runs compute in full only the weeks of the range the \
            last one did not keep (a rolling range adds a week), and the dirty users' weeks in the \
            rest. Weeks the range leaves are no longer kept (their rows stay as they were).

            --values prints instead, for every habit counted from check-ins (measurable, a target \
            other than 1, at most, or a weekly target) and every week of the range in which it has \
            an entry: user_id,template_id,week_start,value — the week's value, its check-ins' sum \
            (a day done without check-ins counts the target, or 0 at most), in the run's weeks; \
            sorted by user, habit and week. Weeks without an entry have no row.

            Runs as the habit_batch role (set transaction-locally), which reads every user's rows and writes only \
            summary tables. Progress goes to stderr when stderr is a terminal.

            Exit status: 0 done; 64 bad arguments or --store on a read-only server; 3 database unreachable \
            or lost; 1 any other error.
            """
    )

    @OptionGroup var database: DatabaseOptions

    @Option(help: ArgumentHelp("First day of the range (YYYY-MM-DD).", valueName: "date"))
    var from: CalendarDate

    @Option(help: ArgumentHelp("Last day of the range (YYYY-MM-DD), inclusive.", valueName: "date"))
    var to: CalendarDate

    @Option(help: "First day of the week: monday or sunday.")
    var weekStart: WeekStart = .monday

    @Option(help: "csv, json or table.")
    var format: WeeklyCountsJob.Format = .csv

    @Flag(help: "Replace the run's rows in weekly_completion_counts instead of printing.")
    var store = false

    @Flag(help: "Print each counted habit's value per week (user_id,template_id,week_start,value) instead of the counts.")
    var values = false

    @Flag(help: "With --store: recompute only the (user, week) pairs changed since the last incremental run.")
    var incremental = false

    @Option(help: ArgumentHelp("The server's work_mem for the run (e.g. 1GB, 64MB; 'default': the server's setting).", valueName: "size"))
    var workMem: String = WeeklyCountsJob.defaultWorkMemory

    @Option(help: ArgumentHelp("Only this user.", valueName: "uuid"))
    var user: String?

    @Option(name: .customLong("store-url"),
            help: ArgumentHelp("With --store: write the rows through this server (env HABIT_STORE_URL), e.g. the primary while --database-url is a standby.", valueName: "url"))
    var storeURLFlag: String?

    /// --store-url, else HABIT_STORE_URL (only with --store), checked by libpq's parser; set by validate().
    private var storeURL: String?

    private enum CodingKeys: String, CodingKey {
        case database, from, to, weekStart, format, store, values, incremental, workMem, user, storeURLFlag
    }

    mutating func validate() throws {
        guard from <= to else { throw ValidationError("--from \(from) is after --to \(to)") }
        if let user, UUID(uuidString: user) == nil || user.utf8.count != 36 {
            throw ValidationError("--user must be a UUID")
        }
        if incremental && !store { throw ValidationError("--incremental needs --store") }
        if values && store { throw ValidationError("--values prints; it takes no --store") }
        if incremental && user != nil { throw ValidationError("--incremental covers every user; it takes no --user") }
        if workMem != "default", workMem.range(of: #"^[0-9]{1,9}(kB|MB|GB)?$"#, options: .regularExpression) == nil {
            throw ValidationError("--work-mem must be a size such as 64MB or 1GB, or 'default'")
        }
        if storeURLFlag.map({ !$0.isEmpty }) == true && !store {
            throw ValidationError("--store-url is only used with --store")
        }
        if store {
            storeURL = try Setting.resolve(storeURLFlag, flag: "--store-url", variable: "HABIT_STORE_URL", default: nil,
                                           expected: "a PostgreSQL URL or conninfo") { url in
                do { try ConnectionString.validate(url) } catch let error as PostgresError { throw ValidationError(error.message) }
            }
            if incremental && storeURL != nil {
                throw ValidationError("--incremental reads and stores on one server (the database marks changes there); it takes no --store-url or HABIT_STORE_URL")
            }
        }
    }

    func run() throws {
        try reportingFailures {
            let connection = try database.connect(try database.connectionURL(embedded: \.batchConnectionString), applicationName: "habit-weekly-counts")
            defer { connection.close() }
            var job = WeeklyCountsJob(from: from, to: to)
            job.weekStart = weekStart
            job.format = format
            job.user = user.flatMap(UUID.init(uuidString:))
            job.workMemory = workMem == "default" ? nil : workMem
            if values {
                try job.runValues(on: connection, output: OutputSink())
            } else if incremental {
                // Its marks live on the server it reads: it reads and stores there.
                if try WeeklyCountsJob.isReadOnly(connection) { try refuseReadOnly("the --database-url server") }
                let report = try job.runIncremental(on: connection)
                FileHandle.standardError.write(Data("habit: weekly-counts stored \(report.store.written) changed row(s), deleted \(report.store.deleted) stale row(s); recomputed \(report.users) changed user(s), \(report.fullWeeks) new week(s) in full\n".utf8))
            } else if store {
                let report: WeeklyCountsJob.StoreReport
                if let storeURL {
                    let target = try database.connect(storeURL, applicationName: "habit-weekly-counts")
                    defer { target.close() }
                    if try WeeklyCountsJob.isReadOnly(target) { try refuseReadOnly("the --store-url server") }
                    report = try job.runStore(readingFrom: connection, writingTo: target)
                } else {
                    if try WeeklyCountsJob.isReadOnly(connection) { try refuseReadOnly("the --database-url server") }
                    report = try job.runStore(on: connection)
                }
                FileHandle.standardError.write(Data("habit: weekly-counts stored \(report.written) changed row(s), deleted \(report.deleted) stale row(s)\n".utf8))
            } else {
                try job.run(on: connection, output: OutputSink(), progress: ProgressReporter.forStandardError())
            }
            if ProcessInfo.processInfo.environment["HABIT_REPORT_PEAK_RSS"] == "1" {
                FileHandle.standardError.write(Data("peak_rss_kib=\(Self.peakResidentKiB())\n".utf8))
            }
        }
    }

    /// --store on a server that cannot write (checked before computing): a usage error.
    private func refuseReadOnly(_ which: String) throws -> Never {
        FileHandle.standardError.write(Data("""
            habit: weekly-counts --store: \(which) is read-only (a hot standby or default_transaction_read_only); \
            give the primary with --store-url (env HABIT_STORE_URL) and keep --database-url for reading

            """.utf8))
        throw ExitCode.validationFailure
    }

    /// VmHWM from /proc: the most resident memory this process ever had.
    static func peakResidentKiB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }) else { return -1 }
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
    }
}
