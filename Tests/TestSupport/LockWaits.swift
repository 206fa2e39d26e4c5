import Foundation
import PostgresClient

/// The worker's backends (`application_name` habit-serve) seen waiting for a lock.
public struct LockWaitTimedOut: Error, CustomStringConvertible {
    public let wanted: Int
    public var description: String { "fewer than \(wanted) of the worker's statements waited for a lock within the hang guard" }
}

extension Connection {
    /// Polls `pg_stat_activity` from this (observer) connection until at least `count` of the
    /// worker's backends wait for a lock (of wait event `event`, e.g. "advisory", when given) and
    /// returns their pids. The 20 s limit is a hang guard, not a speed check.
    public func workerBackendsWaitingForLocks(atLeast count: Int = 1, event: String? = nil) throws -> [Int32] {
        let deadline = Date(timeIntervalSinceNow: 20)
        while true {
            // On Citus the statement waits on the worker node holding the user's shards: the wait
            // shows there, under the global pid of the worker's backend on the coordinator.
            let pids = try query(CitusCluster.current == nil ? """
                SELECT pid FROM pg_stat_activity
                WHERE datname = current_database() AND application_name = 'habit-serve'
                  AND wait_event_type = 'Lock' AND (\(event)::text IS NULL OR wait_event = \(event))
                ORDER BY pid
                """ : """
                SELECT a.pid FROM pg_stat_activity a
                WHERE a.datname = current_database() AND a.application_name = 'habit-serve'
                  AND EXISTS (SELECT 1 FROM citus_stat_activity w
                              WHERE w.global_pid = citus_calculate_gpid(
                                        (SELECT n.nodeid FROM pg_dist_node n WHERE n.groupid = 0), a.pid)
                                AND w.wait_event_type = 'Lock' AND (\(event)::text IS NULL OR w.wait_event = \(event)))
                ORDER BY a.pid
                """).map { try $0.decode(Int32.self, at: 0) }
            if pids.count >= count { return pids }
            guard Date() < deadline else { throw LockWaitTimedOut(wanted: count) }
            usleep(5_000)
        }
    }
}

extension Connection {
    /// Locks the row of `table` (a user table, schema-qualified) with id `id` FOR UPDATE, in this
    /// connection's transaction, naming its user: on a Citus coordinator a row lock must be a
    /// single-shard statement (docs/scaling.md, "Still refused"); on PostgreSQL it is the same lock.
    public func lockUserRowForUpdate(_ table: String, id: UUID) throws {
        let user = try queryOne("SELECT user_id FROM \(unsafeSQL: table) WHERE id = \(id)").decode(UUID.self, at: 0)
        try execute("SELECT 1 FROM \(unsafeSQL: table) WHERE id = \(id) AND user_id = \(user) FOR UPDATE")
    }
}
