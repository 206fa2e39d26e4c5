import Foundation
import PostgresClient

// TEMPORARY (helper C, branch i18-worker): the store API of /work/prompts18/sync-design.md,
// declared so the worker half compiles before helper B's SyncRepository lands. Deleted in the
// commit that merges i18-store.

public struct SyncCursor: Sendable, Hashable {
    public var text: String
    public init(text: String) throws(StoreError) { self.text = text }
}
public struct DayKey: Sendable, Hashable { public var templateID: UUID; public var date: String }
public struct SyncCompletion: Sendable, Equatable { public var templateID: UUID; public var date: String; public var createdAt: PostgresTimestamp }
public struct SyncPeriod: Sendable, Equatable {
    public var id: UUID; public var templateID: UUID; public var startedAt: PostgresTimestamp; public var endedAt: PostgresTimestamp?
    public var schedule: HabitSchedule
}
public struct SyncDeletions: Sendable, Equatable {
    public var habits: [UUID] = [], periods: [UUID] = [], lists: [UUID] = [], tasks: [UUID] = []
    public var completions: [DayKey] = [], skips: [DayKey] = []
    public var profile = false
}
public struct SyncPage: Sendable {
    public var profile: Profile?
    public var habits: [Habit] = [], periods: [SyncPeriod] = [], completions: [SyncCompletion] = [], skips: [DayKey] = []
    public var lists: [TaskList] = [], tasks: [TaskItem] = []
    public var deleted = SyncDeletions()
    public var cursor: SyncCursor
    public var hasMore = false
}
public struct SyncRepository {
    let scope: UserScope
    public init(connection: Connection, settings: StoreSettings = StoreSettings()) { scope = UserScope(connection: connection, settings: settings) }
    public func pull(user: UUID, cursor: SyncCursor?, limit: Int, retention: Duration) throws -> SyncPage {
        throw PostgresError(kind: .misuse, message: "SyncRepository is not there yet")
    }
    public func currentCursor(user: UUID) throws -> SyncCursor {
        let seq = try scope.query(as: user, "SELECT coalesce((SELECT seq FROM habit.sync_clocks WHERE user_id = \(user)), 0)")[0].decode(Int64.self, at: 0)
        let raw = "\(seq).7..\(seq).\(Int(Date().timeIntervalSince1970))"
        let text = Data(raw.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        return try SyncCursor(text: "v1." + text)
    }
}
