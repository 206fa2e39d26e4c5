import Foundation
import HabitStore
import PostgresClient

/// `habit weekly-counts --store --incremental`: recomputes only the (user, week) pairs whose
/// counts may have changed since the convention's last incremental run, from the dirty set
/// the database keeps (habit.weekly_counts_dirty, sql/functions/weekly_counts.sql).
extension WeeklyCountsJob {
    public struct IncrementalReport: Sendable, Equatable {
        /// Rows inserted or changed, and stored rows deleted (as `StoreReport`).
        public var store: StoreReport
        /// Users recomputed for dirty days (not counting the weeks computed in full).
        public var users: Int
        /// Weeks computed for every user because no incremental run kept them before (all of
        /// the range on the first run; a week entering a rolling range later).
        public var fullWeeks: Int

        public init(store: StoreReport, users: Int, fullWeeks: Int) {
            self.store = store
            self.users = users
            self.fullWeeks = fullWeeks
        }
    }

    /// One run, in two transactions:
    ///  1. habit.weekly_counts_start_tracking: the first time for the convention, waits for
    ///     the writers in flight and starts marking (committed, so every later change marks).
    ///  2. Locks the convention's state row (incremental runs of a convention take turns;
    ///     writers are not blocked), marks the days "today" moved over since the last run,
    ///     claims (deletes) every mark of the convention, computes in full the weeks of
    ///     [from, to] that the last run did not keep, recomputes the claimed users' weeks
    ///     within the rest, and records [from, to] and now(). Claims and stores commit
    ///     together: a crash loses nothing, and a write that commits during the run keeps
    ///     its mark for the next run (the claim sees only what committed before it).
    /// Marks outside [from, to] are dropped with the claim: weeks outside the range are no
    /// longer kept (their stored rows stay as they are), and a later run that takes them in
    /// again computes them in full.
    public func runIncremental(on connection: Connection) throws -> IncrementalReport {
        let convention = weekStart.rawValue
        try connection.withTransaction(prelude: Self.prelude) { connection in
            _ = try connection.queryOne("SELECT habit.weekly_counts_start_tracking(\(convention))")
        }
        return try connection.withTransaction(prelude: Self.prelude + memorySettings) { connection in
            _ = try connection.queryOne("""
                SELECT 1 FROM habit.weekly_counts_state WHERE week_starts_on = \(convention) FOR NO KEY UPDATE
                """)
            try connection.execute("""
                SELECT habit.weekly_counts_mark_days_passed(week_starts_on, last_run_at)
                FROM habit.weekly_counts_state WHERE week_starts_on = \(convention) AND last_run_at IS NOT NULL
                """)
            // The run's days: whole weeks of its convention, [runStart, runEnd).
            let runStart = weekStart.weekStart(containing: from)
            let runEnd = weekStart.weekStart(containing: to).adding(days: 7)
            let newPieces = try connection.query("""
                SELECT pg_catalog.lower(p.days), pg_catalog.upper(p.days) - 1
                FROM habit.weekly_counts_state s, (SELECT pg_catalog.daterange(\(runStart), \(runEnd), '[)') AS days) run,
                     pg_catalog.unnest(pg_catalog.datemultirange(run.days) - pg_catalog.datemultirange(s.covered)) AS p(days)
                WHERE s.week_starts_on = \(convention)
                ORDER BY 1
                """).map { (try $0.decode(CalendarDate.self, at: 0), try $0.decode(CalendarDate.self, at: 1)) }
            // Claim every mark; group the users by the weeks to recompute: the union of their
            // marks within the kept part of the run (the run minus the new pieces).
            let groups = try connection.query("""
                WITH claimed AS (
                    DELETE FROM habit.weekly_counts_dirty d WHERE d.week_starts_on = \(convention) RETURNING d.user_id, d.days
                ),
                kept AS (
                    SELECT pg_catalog.datemultirange(run.days) * pg_catalog.datemultirange(s.covered) AS days
                    FROM habit.weekly_counts_state s, (SELECT pg_catalog.daterange(\(runStart), \(runEnd), '[)') AS days) run WHERE s.week_starts_on = \(convention)
                ),
                windows AS (
                    SELECT c.user_id, pg_catalog.min(pg_catalog.lower(w.days)) AS first_day, pg_catalog.max(pg_catalog.upper(w.days)) - 1 AS last_day
                    FROM claimed c, kept k, pg_catalog.unnest(pg_catalog.datemultirange(c.days) * k.days) AS w(days)
                    GROUP BY c.user_id
                )
                SELECT habit.week_start(first_day, habit.week_start_isodow(\(convention))) AS first_week,
                       habit.week_start(last_day, habit.week_start_isodow(\(convention))) AS last_week,
                       pg_catalog.count(*), pg_catalog.string_agg(user_id::text, ',' ORDER BY user_id)
                FROM windows GROUP BY 1, 2 ORDER BY 1, 2
                """).map { (try $0.decode(CalendarDate.self, at: 0), try $0.decode(CalendarDate.self, at: 1),
                            try $0.decode(Int.self, at: 2), try $0.decode(String.self, at: 3)) }
            var report = IncrementalReport(store: StoreReport(written: 0), users: 0, fullWeeks: 0)
            func add(_ part: StoreReport) {
                report.store.written += part.written
                report.store.deleted += part.deleted
            }
            for (first, last) in newPieces {
                add(try store(on: connection, from: first, to: last, users: nil))
                report.fullWeeks += first.days(until: last) / 7 + 1
            }
            for (firstWeek, lastWeek, count, users) in groups {
                add(try store(on: connection, from: firstWeek, to: lastWeek.adding(days: 6), users: users))
                report.users += count
            }
            try connection.execute("""
                UPDATE habit.weekly_counts_state s SET covered = run.days, last_run_at = now()
                FROM (SELECT pg_catalog.daterange(\(runStart), \(runEnd), '[)') AS days) run WHERE s.week_starts_on = \(convention)
                """)
            return report
        }
    }
}
