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
    public init(connection: Connection, settings: StoreSettings = StoreSettings()) {}
    public func pull(user: UUID, cursor: SyncCursor?, limit: Int, retention: Duration) throws -> SyncPage {
        throw PostgresError(kind: .misuse, message: "SyncRepository is not there yet")
    }
    public func currentCursor(user: UUID) throws -> SyncCursor {
        throw PostgresError(kind: .misuse, message: "SyncRepository is not there yet")
    }
}
