import Foundation
import PostgresClient

// widget.get (issue 33, item 4): what a home-screen widget shows of a day, in one statement.

/// One habit as a widget shows it: a habit due on the day, its state, value against its target
/// (counted habits), current streak and Loop's score.
public struct WidgetItem: Sendable, Equatable {
    public let templateID: UUID
    public let name: String
    public let icon: String?
    public let color: String?
    public let kind: HabitKind
    public let state: DayState
    /// Counted habits (measurable, or boolean with a target above 1): the day's value
    /// (a weekly target: the week's) and the target; nil otherwise.
    public let value: DecimalValue?
    public let target: DecimalValue?
    public let unit: String?
    /// The current streak at the day, in the habit's slots (days or weeks).
    public let streak: Int
    /// Loop's score at the day, "0.0000" … "1.0000".
    public let score: String
    /// The habit's area (sql/0037); nil for none.
    public let areaID: UUID?
}

public struct WidgetDay: Sendable, Equatable {
    public let date: CalendarDate
    public let items: [WidgetItem]
}

extension HabitRepository {
    /// The habits due on `date` (nil: the user's today), in `day.get`'s order, with what a
    /// widget shows. One statement: the day's habits as `day.get` reads them
    /// (habit.day_habits), only the due ones, with the current streak (habit.current_streak)
    /// and Loop's score (habit.habit_scores_at, the due habits in one call, four decimals as
    /// habit.habit_scores).
    /// With `area`, only that area's habits; `notFound` when it is not one of the user's areas.
    public func widgetStatement(user: UUID, date: CalendarDate?, area: UUID? = nil) -> UserStatement<WidgetDay> {
        // A generic plan from the first request on, as day.get's (UserStatement.genericPlan).
        UserStatement(user: user, statement: """
            WITH header AS MATERIALIZED (
                SELECT coalesce(\(date)::date, habit.local_day(now(), coalesce(p.timezone, 'UTC'), coalesce(p.day_starts_at, '00:00'))) AS day,
                       habit.local_day(now(), coalesce(p.timezone, 'UTC'), coalesce(p.day_starts_at, '00:00')) AS today,
                       coalesce(p.timezone, 'UTC') AS tz, coalesce(p.day_starts_at, '00:00') AS ds,
                       CASE p.week_start WHEN 'sunday' THEN 7 ELSE 1 END AS wk,
                       (\(area)::uuid IS NULL OR EXISTS (SELECT 1 FROM public.habit_areas a WHERE a.user_id = \(user) AND a.id = \(area))) AS area_found
                FROM (SELECT 1) AS one LEFT JOIN public.profiles p ON p.user_id = \(user)
            ), items AS MATERIALIZED (
                SELECT h.id, h.name, h.icon, h.color, h.kind, d.done, d.skipped, h.sort_order, h.created_at,
                       habit.is_counted(h.kind, h.target, h.target_type) AS counted,
                       -- The day's value (a weekly target: the week's), as day.get answers it.
                       CASE WHEN h.target_period = 'week' THEN coalesce(wv.week_value, 0)
                            WHEN coalesce(ci.checkin_count, 0) = 0 AND d.done THEN habit.done_value(h.target, h.target_type)
                            ELSE coalesce(ci.checkin_sum, 0) END AS value,
                       h.target, h.unit, coalesce(streak.current_length, 0) AS streak, h.area_id
                FROM header
                CROSS JOIN LATERAL habit.day_habits(\(user), header.day, header.today, header.tz, header.wk, header.ds) d
                JOIN public.habit_templates h ON h.id = d.template_id AND h.user_id = \(user) AND h.archived_at IS NULL
                LEFT JOIN LATERAL (SELECT sum(x.value) AS checkin_sum, count(*) AS checkin_count FROM public.habit_checkins x
                                   WHERE habit.is_counted(h.kind, h.target, h.target_type)
                                     AND x.user_id = \(user) AND x.template_id = h.id AND x.checkin_date = header.day
                                   HAVING habit.is_counted(h.kind, h.target, h.target_type)) ci ON true
                LEFT JOIN LATERAL (SELECT coalesce(sum(x.value), 0) AS week_value FROM public.habit_checkins x
                                   WHERE h.target_period = 'week' AND x.user_id = \(user) AND x.template_id = h.id
                                     AND x.checkin_date >= habit.week_start(header.day, header.wk)
                                     AND x.checkin_date < habit.week_start(header.day, header.wk) + 7
                                   HAVING h.target_period = 'week') wv ON true
                LEFT JOIN LATERAL habit.current_streak(h.user_id, h.id, header.day, header.today) streak ON true
                WHERE d.due AND (\(area)::uuid IS NULL OR h.area_id = \(area))
            ), scores AS MATERIALIZED (
                -- Loop's score of the due habits only, in one call (habit.habit_scores_at: walked
                -- from their checkpoints in one read of their last events), with the header's
                -- zone and day start. Materialized: called once, whatever side of a join the
                -- planner would put it on.
                SELECT s.template_id, round(s.score::numeric, 4) AS score
                FROM header CROSS JOIN LATERAL habit.habit_scores_at(\(user), (SELECT coalesce(array_agg(i.id), '{}') FROM items i),
                                                                     header.day, header.tz, header.ds) s
            )
            SELECT header.day, t.id, t.name, t.icon, t.color, t.kind, t.done, t.skipped, t.counted, t.value, t.target, t.unit, t.streak,
                   sc.score, t.area_id, header.area_found
            FROM header LEFT JOIN items t ON true LEFT JOIN scores sc ON sc.template_id = t.id
            ORDER BY t.sort_order NULLS LAST, t.created_at, t.id
            """, genericPlan: true) { rows in
            let header = try rows.found()
            let date = try header.decode(CalendarDate.self, at: 0)
            guard try header.decode(Bool.self, at: 15) else { throw StoreError.notFound }
            return WidgetDay(date: date, items: try rows.filter { !$0.isNull(at: 1) }.map { row in
                guard let kind = HabitKind(rawValue: try row.decode(String.self, at: 5)) else {
                    throw PostgresError(kind: .decoding, message: "unknown habit kind")
                }
                let counted = try row.decode(Bool.self, at: 8)
                let state: DayState = try row.decode(Bool.self, at: 6) ? .done : try row.decode(Bool.self, at: 7) ? .skipped : .none
                return WidgetItem(templateID: try row.decode(UUID.self, at: 1), name: try row.decode(String.self, at: 2),
                                  icon: try row.decode(String?.self, at: 3), color: try row.decode(String?.self, at: 4),
                                  kind: kind, state: state,
                                  value: counted ? try DecimalValue(row.decode(PostgresNumeric.self, at: 9)) : nil,
                                  target: counted ? try DecimalValue(row.decode(PostgresNumeric.self, at: 10)) : nil,
                                  unit: try row.decode(String?.self, at: 11),
                                  streak: Int(try row.decode(Int32.self, at: 12)),
                                  score: try HabitRepository.score(row.decode(PostgresNumeric.self, at: 13)),
                                  areaID: try row.decode(UUID?.self, at: 14))
            })
        }
    }
}
