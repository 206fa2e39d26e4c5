import Foundation
import PostgresClient

/// PostgreSQL's IANA time-zone names (pg_timezone_names), read once per process: reading
/// the view scans the zoneinfo directory (milliseconds), too slow for every request.
public final class TimeZoneNames: @unchecked Sendable {
    public static let shared = TimeZoneNames()

    private let lock = NSLock()
    private var names: Set<String>?

    public func isValid(_ zone: String, using connection: Connection) throws -> Bool {
        if let names = lock.withLock({ names }) { return names.contains(zone) }
        let loaded = Set(try connection.query("SELECT name FROM pg_catalog.pg_timezone_names").map { try $0.decode(String.self, at: 0) })
        lock.withLock { names = loaded }
        return loaded.contains(zone)
    }
}
