import Foundation
import HabitStore
import PostgresClient

/// `habit weekly-counts`: weekly completion counts for every user (or one), computed by one
/// set-based query in PostgreSQL (`habit.weekly_counts`, sql/functions/weekly_counts.sql) and streamed to the
/// output as it arrives — COPY for CSV and JSON, single-row mode for the table — so the
/// job's memory does not grow with the number of users.
public struct WeeklyCountsJob {
    public enum Format: String, Sendable, CaseIterable { case csv, json, table }

    public var from: CalendarDate
    public var to: CalendarDate
    public var weekStart: WeekStart = .monday
    public var user: UUID?
    public var format: Format = .csv
    /// The server's work_mem for the run (e.g. "1GB"; nil: the server's setting).
    public var workMemory: String? = WeeklyCountsJob.defaultWorkMemory

    /// Enough for the full run's sorts to stay in memory on the 10 M-completion data set
    /// (it spilled about 900 MB on disk at the default 4MB); see docs/performance.md.
    public static let defaultWorkMemory = "1GB"

    public init(from: CalendarDate, to: CalendarDate) {
        self.from = from
        self.to = to
    }

    static let columns = ["user_id", "week_start", "completions", "days_with_completion", "active_habit_days",
                          "due_habit_days", "skipped_habit_days", "completion_rate"]

    /// The job acts as the least-privileged batch role whatever the login role is.
    /// Custom plans always: the job's statements are prepared and run again with other
    /// users and weeks (an incremental run stores one window after another), and only a
    /// custom plan folds the user list of habit.weekly_counts_of into index scans (a generic
    /// plan took seconds where the custom one takes milliseconds).
    /// No JIT: the batch's statement is big and its estimated cost far above jit_above_cost,
    /// so PostgreSQL compiles it on every run, about 1.4 s here whatever the data: a full run
    /// over 200,000 completions took 2.2 s with JIT and 0.7 s without, an incremental window of
    /// 19 users 1.36 s and 12 ms (docs/performance.md, "Incremental runs and work_mem").
    /// The role by set_config(…, true), the same as SET LOCAL ROLE, because on a Citus
    /// coordinator a SET LOCAL travels to the workers' connections (propagate_set_commands):
    /// there it would also hold inside SECURITY DEFINER functions, whose writes (e.g. the
    /// tracking state of an incremental run) the batch role may not make.
    static let prelude: [Query] = ["SELECT set_config('role', 'habit_batch', true)", "SELECT set_config('plan_cache_mode', 'force_custom_plan', true)",
                                   "SELECT set_config('jit', 'off', true)"]

    public struct StoreReport: Sendable, Equatable {
        /// Rows inserted or changed (unchanged rows keep their computed_at).
        public var written: Int
        /// Stored rows of the run's weeks, convention and users that the run did not produce
        /// (e.g. a user who no longer has a habit or a profile).
        public var deleted: Int = 0

        public init(written: Int, deleted: Int = 0) {
            self.written = written
            self.deleted = deleted
        }
    }

    /// Streams the rows to `output`; `progress` (if given) hears of each row.
    public func run(on connection: Connection, output: OutputSink, progress: ProgressReporter? = nil) throws {
        try connection.withTransaction(prelude: Self.prelude + memorySettings + parameterSettings) { connection in
            progress?.start(totalRows: try expectedRows(connection))
            switch format {
            case .csv:
                try connection.copyOut("""
                    COPY (SELECT * FROM \(unsafeSQL: Self.functionCallFromSettings)) TO STDOUT WITH (FORMAT csv, HEADER)
                    """) { chunk in
                    try output.write(chunk)
                    progress?.rowDone()
                }
            case .json:
                // JSON text of uuids, dates and numbers never holds the characters COPY's
                // text format escapes (backslash, tab, newline), so each line is the JSON.
                try connection.copyOut("""
                    COPY (SELECT json_build_object('user_id', user_id, 'week_start', week_start, 'completions', completions,
                                                   'days_with_completion', days_with_completion,
                                                   'active_habit_days', active_habit_days, 'due_habit_days', due_habit_days,
                                                   'skipped_habit_days', skipped_habit_days, 'completion_rate', completion_rate)
                          FROM \(unsafeSQL: Self.functionCallFromSettings)) TO STDOUT
                    """) { chunk in
                    try output.write(chunk)
                    progress?.rowDone()
                }
            case .table:
                try output.write(Self.tableLine(Self.columns))
                try output.write(Self.tableLine(Self.columnWidths.map { String(repeating: "-", count: $0) }))
                try connection.stream("SELECT * FROM \(unsafeSQL: Self.functionCallFromSettings)") { row in
                    try output.write(Self.tableLine([
                        try row.decode(UUID.self, at: 0).lowercaseString,
                        try row.decode(CalendarDate.self, at: 1).description,
                        String(try row.decode(Int.self, at: 2)),
                        String(try row.decode(Int.self, at: 3)),
                        String(try row.decode(Int.self, at: 4)),
                        String(try row.decode(Int.self, at: 5)),
                        String(try row.decode(Int.self, at: 6)),
                        try row.decode(PostgresNumeric?.self, at: 7)?.text ?? "",
                    ]))
                    progress?.rowDone()
                }
            }
            try output.flush()
        }
        progress?.finish()
    }

    static let valueColumns = ["user_id", "template_id", "week_start", "value"]

    /// `habit weekly-counts --values`: per habit counted from check-ins (measurable, a target
    /// other than 1, at most, or weekly) and week of the run with an entry, the week's value —
    /// its check-ins' sum, a day done without any counting habit.done_value
    /// (`habit.weekly_values`, sql/functions/weekly_counts.sql) — sorted by user, habit and week,
    /// streamed as `run` streams the counts.
    public func runValues(on connection: Connection, output: OutputSink) throws {
        try connection.withTransaction(prelude: Self.prelude + memorySettings + parameterSettings) { connection in
            let query = "SELECT * FROM \(Self.valuesCallFromSettings) v ORDER BY v.user_id, v.template_id, v.week_start"
            switch format {
            case .csv:
                try connection.copyOut("COPY (\(unsafeSQL: query)) TO STDOUT WITH (FORMAT csv, HEADER)") { try output.write($0) }
            case .json:
                try connection.copyOut("""
                    COPY (SELECT json_build_object('user_id', w.user_id, 'template_id', w.template_id, 'week_start', w.week_start,
                                                   'value', trim_scale(w.value)::text)
                          FROM (\(unsafeSQL: query)) w) TO STDOUT
                    """) { try output.write($0) }
            case .table:
                let widths = [36, 36, 10, 16]
                func line(_ cells: [String]) -> [UInt8] {
                    Array((zip(cells, widths).enumerated().map { index, pair in
                        let padding = String(repeating: " ", count: max(0, pair.1 - pair.0.count))
                        return index < 3 ? pair.0 + padding : padding + pair.0
                    }.joined(separator: " | ") + "\n").utf8)
                }
                try output.write(line(Self.valueColumns))
                try output.write(line(widths.map { String(repeating: "-", count: $0) }))
                try connection.stream(Query(unsafeSQL: query)) { row in
                    try output.write(line([try row.decode(UUID.self, at: 0).lowercaseString, try row.decode(UUID.self, at: 1).lowercaseString,
                                           try row.decode(CalendarDate.self, at: 2).description,
                                           try DecimalValueText.text(row.decode(PostgresNumeric.self, at: 3))]))
                }
            }
            try output.flush()
        }
    }

    static let valuesCallFromSettings = """
        habit.weekly_values(current_setting('habit.weekly_from')::date, current_setting('habit.weekly_to')::date,
                            current_setting('habit.weekly_week_start'), nullif(current_setting('habit.weekly_user'), '')::uuid)
        """

    /// Replaces the stored rows of the run in one statement (one transaction): upserts the
    /// rows it produces into weekly_completion_counts and deletes the rows of the same week
    /// convention, in the weeks of [from, to], of the run's users (every user without `user`)
    /// that it did not produce. Safe to run while the worker writes and safe to repeat:
    /// unchanged rows are left alone. Rows of the other week convention are never touched.
    public func runStore(on connection: Connection) throws -> StoreReport {
        try connection.withTransaction(prelude: Self.prelude + memorySettings) { connection in
            try store(on: connection, from: from, to: to, users: user?.lowercaseString)
        }
    }

    /// The store statement for the weeks of [from, to] and `users` (uuids joined by commas;
    /// nil for every user), in the caller's transaction. The users travel as one text
    /// parameter (the client binds no arrays) that the statement splits, a constant to the
    /// planner, so habit.weekly_counts_of reads only their rows by the user_id indexes.
    func store(on connection: Connection, from: CalendarDate, to: CalendarDate, users: String?) throws -> StoreReport {
        try Self.report(connection.queryOne(storeStatement(produced: Self.computed, from: from, to: to, users: users)))
    }

    /// The rows of the weeks and users of $1…$4, computed where the statement runs.
    static let computed = "SELECT * FROM habit.weekly_counts_of($1, $2, $3, pg_catalog.string_to_array($4, ',')::uuid[])"

    /// `runStore` across two servers: computes on `source` (e.g. a hot standby, which only
    /// reads) and stores on `target` (the primary), with the same upsert and delete. The rows
    /// are streamed from `source` in one read transaction and loaded in batches into a
    /// temporary table of `target`'s one write transaction, so a failure anywhere leaves the
    /// stored table as it was. Both sides act as habit_batch.
    public func runStore(readingFrom source: Connection, writingTo target: Connection, batchRows: Int = 5_000) throws -> StoreReport {
        try target.withTransaction(prelude: Self.prelude) { target in
            try target.execute("""
                CREATE TEMP TABLE weekly_counts_produced (
                    user_id uuid, week_start date, completions bigint, days_with_completion bigint,
                    active_habit_days bigint, due_habit_days bigint, skipped_habit_days bigint, completion_rate numeric
                ) ON COMMIT DROP
                """)
            // One JSON array per batch: the rows travel as one bound parameter, never as SQL text.
            var batch: [UInt8] = [], rowsInBatch = 0
            func load() throws {
                guard rowsInBatch > 0 else { return }
                batch.append(UInt8(ascii: "]"))
                try target.execute("""
                    INSERT INTO pg_temp.weekly_counts_produced
                    SELECT * FROM json_populate_recordset(NULL::pg_temp.weekly_counts_produced, \(String(decoding: batch, as: UTF8.self))::json)
                    """)
                batch.removeAll(keepingCapacity: true)
                rowsInBatch = 0
            }
            try source.withTransaction(prelude: Self.prelude + memorySettings + parameterSettings) { source in
                // JSON text of uuids, dates and numbers holds nothing COPY's text format escapes.
                try source.copyOut("""
                    COPY (SELECT row_to_json(w) FROM \(unsafeSQL: Self.functionCallFromSettings) w) TO STDOUT
                    """) { chunk in
                    batch.append(UInt8(ascii: rowsInBatch == 0 ? "[" : ","))
                    // Each chunk is one row and its newline.
                    batch.append(contentsOf: chunk.prefix(while: { $0 != UInt8(ascii: "\n") }))
                    rowsInBatch += 1
                    if rowsInBatch == batchRows { try load() }
                }
            }
            try load()
            // The store's delete is an anti join of the stored rows against these. Read through
            // a materialized CTE and without statistics (autovacuum never analyzes a temporary
            // table; the stored table's estimate is often 1 row right after a load), the planner
            // took a nested loop over both, O(stored × produced): 0.8 s for 4,000 rows, 335 s
            // for 40,000, never ending for the 2,000,000 of 100,000 users × 20 weeks. Indexed,
            // analyzed and read in place (not materialized), it is a hash or index anti join.
            try target.execute("CREATE INDEX ON pg_temp.weekly_counts_produced (user_id, week_start)")
            try target.execute("ANALYZE pg_temp.weekly_counts_produced")
            return try Self.report(target.queryOne(storeStatement(produced: "SELECT * FROM pg_temp.weekly_counts_produced", inPlace: true, from: from, to: to,
                                                                  users: user?.lowercaseString)))
        }
    }

    /// True when `connection`'s server cannot take the stored rows: a hot standby (in recovery)
    /// or a server whose sessions are read-only (default_transaction_read_only).
    public static func isReadOnly(_ connection: Connection) throws -> Bool {
        try connection.queryOne("SELECT pg_is_in_recovery() OR current_setting('transaction_read_only')::boolean")
            .decode(Bool.self, at: 0)
    }

    private static func report(_ row: Row) throws -> StoreReport {
        StoreReport(written: try row.decode(Int.self, at: 0), deleted: try row.decode(Int.self, at: 1))
    }

    /// The store statement: upserts the rows of `produced` (SQL chosen by this file, which may
    /// use $1 from, $2 to, $3 the week convention, $4 the users as text, uuids joined by
    /// commas, or NULL for every user) and deletes the stored rows of those weeks, convention
    /// and users that it did not produce.
    /// `inPlace`: `produced` is a plain read of a table, inlined where it is used (NOT
    /// MATERIALIZED) so that the delete's anti join can use its index; otherwise (a function
    /// call) it runs once.
    private func storeStatement(produced: String, inPlace: Bool = false, from: CalendarDate, to: CalendarDate, users: String?) -> Query {
        var bindings = Query.Bindings()
        bindings.append(from)
        bindings.append(to)
        bindings.append(weekStart.rawValue)
        if let users { bindings.append(users) } else { bindings.appendNull(of: String.postgresType) }
        return Query(unsafeSQL: """
            WITH produced AS \(inPlace ? "NOT MATERIALIZED " : "")(
                \(produced)
            ),
            written AS (
                INSERT INTO public.weekly_completion_counts AS stored
                    (user_id, week_starts_on, week_start, completions, days_with_completion, active_habit_days,
                     due_habit_days, skipped_habit_days, completion_rate)
                SELECT p.user_id, $3, p.week_start, p.completions, p.days_with_completion,
                       p.active_habit_days, p.due_habit_days, p.skipped_habit_days, p.completion_rate
                FROM produced p
                ON CONFLICT (user_id, week_starts_on, week_start) DO UPDATE SET
                    completions = EXCLUDED.completions,
                    days_with_completion = EXCLUDED.days_with_completion,
                    active_habit_days = EXCLUDED.active_habit_days,
                    due_habit_days = EXCLUDED.due_habit_days,
                    skipped_habit_days = EXCLUDED.skipped_habit_days,
                    completion_rate = EXCLUDED.completion_rate,
                    -- The column's default, now(), as the insert would have set it: Citus refuses
                    -- a non-IMMUTABLE function in DO UPDATE SET on a distributed table.
                    computed_at = EXCLUDED.computed_at
                WHERE (stored.completions, stored.days_with_completion, stored.active_habit_days,
                       stored.due_habit_days, stored.skipped_habit_days, stored.completion_rate)
                      IS DISTINCT FROM
                      (EXCLUDED.completions, EXCLUDED.days_with_completion, EXCLUDED.active_habit_days,
                       EXCLUDED.due_habit_days, EXCLUDED.skipped_habit_days, EXCLUDED.completion_rate)
                RETURNING 1
            ),
            deleted AS (
                DELETE FROM public.weekly_completion_counts AS stored
                WHERE stored.week_starts_on = $3
                  AND stored.week_start >= habit.week_start($1, habit.week_start_isodow($3))
                  AND stored.week_start <= habit.week_start($2, habit.week_start_isodow($3))
                  AND ($4::text IS NULL OR stored.user_id = ANY (pg_catalog.string_to_array($4, ',')::uuid[]))
                  AND NOT EXISTS (SELECT 1 FROM produced p WHERE p.user_id = stored.user_id AND p.week_start = stored.week_start)
                RETURNING 1
            )
            SELECT (SELECT count(*) FROM written), (SELECT count(*) FROM deleted)
            """, bindings: bindings)
    }

    /// work_mem for the batch's transaction (SET LOCAL through set_config(…, true)): the run
    /// is one big aggregate whose sorts and hashes spill to disk at the server's default.
    /// Transaction-local rather than ALTER ROLE habit_batch SET work_mem because the job
    /// becomes habit_batch by SET ROLE, and a role's settings apply only at login.
    var memorySettings: [Query] {
        guard let workMemory else { return [] }
        return ["SELECT set_config('work_mem', \(workMemory), true)"]
    }

    // COPY takes no bind parameters, so the arguments travel as bound parameters of
    // set_config(…, true) (transaction-local) and the COPY query reads them back.
    var parameterSettings: [Query] {
        ["""
        SELECT set_config('habit.weekly_from', \(from.description), true),
               set_config('habit.weekly_to', \(to.description), true),
               set_config('habit.weekly_week_start', \(weekStart.rawValue), true),
               set_config('habit.weekly_user', \(user?.uuidString ?? ""), true)
        """]
    }

    static let functionCallFromSettings = """
        habit.weekly_counts(current_setting('habit.weekly_from')::date, current_setting('habit.weekly_to')::date,
                            current_setting('habit.weekly_week_start'), nullif(current_setting('habit.weekly_user'), '')::uuid)
        """

    private func expectedRows(_ connection: Connection) throws -> Int {
        let firstWeek = weekStart.weekStart(containing: from)
        let weeks = from <= to ? firstWeek.days(until: weekStart.weekStart(containing: to)) / 7 + 1 : 0
        let users = try connection.queryOne("""
            SELECT count(*) FROM (SELECT user_id FROM public.habit_templates WHERE \(user)::uuid IS NULL OR user_id = \(user)
                                  UNION SELECT user_id FROM public.profiles WHERE \(user)::uuid IS NULL OR user_id = \(user)) u
            """).decode(Int.self, at: 0)
        return users * weeks
    }

    static let columnWidths = [36, 10, 11, 20, 17, 14, 18, 15]

    static func tableLine(_ cells: [String]) -> [UInt8] {
        var line = ""
        for (index, cell) in cells.enumerated() {
            let width = columnWidths[index]
            let padding = String(repeating: " ", count: max(0, width - cell.count))
            line += index == 0 || index == 1 ? cell + padding : padding + cell
            line += index == cells.count - 1 ? "\n" : " | "
        }
        return Array(line.utf8)
    }
}

/// A numeric's text without its scale's trailing zeros ("5.500" → "5.5"), as the protocol writes values.
enum DecimalValueText {
    static func text(_ numeric: PostgresNumeric) -> String {
        var text = numeric.text
        if text.contains(".") {
            while text.hasSuffix("0") { text.removeLast() }
            if text.hasSuffix(".") { text.removeLast() }
        }
        return text
    }
}
