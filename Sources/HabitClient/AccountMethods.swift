import Foundation
import JSONRPC

/// One page of `account.export`: the document's header (and profile, on the first page) with
/// this page's slice of each array, kept as JSON (a gateway passes it on); concatenating the
/// pages' arrays gives the whole habit-account document (docs/protocol.md "Accounts").
public struct AccountExportPage: Sendable, Equatable {
    public var document: JSONObject
    public var cursor: String?
    public var hasMore: Bool

    init(_ value: JSONValue) throws {
        guard case .object(let result) = value, case .object(let document)? = result["document"],
              let hasMore = result["has_more"]?.boolValue else {
            throw HabitClientError.unexpectedResult(method: "account.export", problem: "no document or has_more")
        }
        self.document = document
        self.cursor = result["cursor"]?.stringValue
        self.hasMore = hasMore
    }
}

/// `account.import`'s answer: rows per kind and the converter's warnings.
public struct AccountImportResult: Codable, Sendable, Equatable {
    public struct Counts: Codable, Sendable, Equatable {
        public var inserted: Int
        public var updated: Int
        public var deleted: Int
        public var unchanged: Int
        public init(inserted: Int, updated: Int, deleted: Int, unchanged: Int) {
            (self.inserted, self.updated, self.deleted, self.unchanged) = (inserted, updated, deleted, unchanged)
        }
    }
    /// What the Loop converter read (`source: "loop"` only).
    public struct LoopReport: Codable, Sendable, Equatable {
        /// habits, archived_habits, completions, skips, numeric_habits_not_imported, checkmarks_without_row, …
        public var counts: [String: Int]
        public var numericHabitsNotImported: [String]
        public var warnings: [String]
        enum CodingKeys: String, CodingKey { case counts, numericHabitsNotImported = "numeric_habits_not_imported", warnings }
    }
    /// By kind: profile, habits, completions, skips, lists, tasks.
    public var counts: [String: Counts]
    public var warnings: [String]
    public var loop: LoopReport?
}

extension HabitCalling {
    /// `cursor` nil: the first page. Retry-safe; follow `hasMore` with the answer's cursor; a
    /// write of the user in between answers `export_changed` (start again).
    public func accountExport(userID: UUID, cursor: String? = nil, limit: Int? = nil,
                              options: CallOptions = CallOptions()) async throws -> AccountExportPage {
        var params = Params(user: userID)
        params.add("cursor", cursor)
        params.add("limit", limit)
        return try AccountExportPage(try await call(method: "account.export", params: params.object, options: options))
    }

    /// `mode` "merge" or "replace". All or nothing; idempotent, so retry-safe.
    public func accountImport(userID: UUID, document: JSONObject, mode: String,
                              options: CallOptions = CallOptions()) async throws -> AccountImportResult {
        var params = Params(user: userID)
        params.object.append(key: "document", value: .object(document))
        params.add("mode", mode)
        return try await call("account.import", params.object, options: options)
    }

    /// A Loop Habit Tracker CSV export (its files by path in the zip, each its text), converted
    /// in the user's zone and imported like a document (docs/protocol.md "account.import").
    public func accountImportLoop(userID: UUID, files: [String: String], mode: String,
                                  options: CallOptions = CallOptions()) async throws -> AccountImportResult {
        var params = Params(user: userID)
        params.add("source", "loop")
        params.object.append(key: "files", value: .object(JSONObject(files.sorted { $0.key < $1.key }.map { ($0.key, JSONValue.string($0.value)) })))
        params.add("mode", mode)
        return try await call("account.import", params.object, options: options)
    }
}
