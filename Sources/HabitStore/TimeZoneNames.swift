import Foundation
import PostgresClient

/// PostgreSQL's IANA time-zone names (habit.time_zones, copied from pg_timezone_names by the
/// migrations), read once per process so per-request overrides cost no query.
public final class TimeZoneNames: @unchecked Sendable {
    public static let shared = TimeZoneNames()

    private let lock = NSLock()
    private var names: Set<String>?

    public func isValid(_ zone: String, using connection: Connection) throws -> Bool {
        if let names = lock.withLock({ names }) { return names.contains(zone) }
        let loaded = Set(try connection.query("SELECT name FROM habit.time_zones").map { try $0.decode(String.self, at: 0) })
        lock.withLock { names = loaded }
        return loaded.contains(zone)
    }
}
