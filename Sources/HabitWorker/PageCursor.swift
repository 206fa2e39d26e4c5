import Foundation
import HabitStore
import JSONRPC
import PostgresClient

/// The `limit`/`cursor` params of the list methods and the `next_cursor` of their results
/// (docs/protocol.md, "Pagination").
///
/// A cursor is opaque to clients: base64url of `v1|kind|field|…`, where `kind` names the
/// listing it belongs to, so a cursor of another listing (or a damaged one) is refused as
/// -32602 on `cursor` instead of silently starting elsewhere. It holds the sort key of the
/// page's last row (keyset pagination), never an offset.
enum PageCursor {
    static let limitRange = 1...PageRequest<HabitSortKey>.maxLimit

    static func encode(kind: String, _ fields: [String]) -> String {
        let text = (["v1", kind] + fields).joined(separator: "|")
        return Data(text.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The fields of a cursor of `kind`; nil when the params hold no cursor (first page).
    static func fields(_ params: ParamsReader, kind: String, count: Int) throws(RPCError) -> [String]? {
        guard let text = try params.optionalString("cursor", description: "The next_cursor of the previous page, unchanged; absent or null: the first page.") else { return nil }
        guard text.utf8.count <= 512, text.utf8.allSatisfy({ $0.isBase64URL }) else { throw invalid() }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), let decoded = String(data: data, encoding: .utf8) else { throw invalid() }
        let parts = decoded.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == count + 2, parts[0] == "v1", parts[1] == kind else { throw invalid() }
        return Array(parts.dropFirst(2))
    }

    static func limit(_ params: ParamsReader) throws(RPCError) -> Int {
        try params.optionalInt("limit", range: limitRange, description: "Rows per page; default \(PageRequest<HabitSortKey>.defaultLimit).")
            ?? PageRequest<HabitSortKey>.defaultLimit
    }

    // MARK: - Sort keys as fields

    static func field(_ value: Int?) -> String { value.map(String.init) ?? "~" }
    static func field(_ value: PostgresTimestamp) -> String { String(value.microsecondsSincePostgresEpoch) }
    static func field(_ value: UUID) -> String { value.lowercaseString }
    static func field(_ value: CalendarDate?) -> String { value?.description ?? "~" }

    static func int(_ text: String) -> Int?? { text == "~" ? .some(nil) : Int(text).map { .some($0) } }
    static func timestamp(_ text: String) -> PostgresTimestamp? { Int64(text).map(PostgresTimestamp.init(microsecondsSincePostgresEpoch:)) }
    static func uuid(_ text: String) -> UUID? { UUID(canonical: text) }
    static func date(_ text: String) -> CalendarDate?? { text == "~" ? .some(nil) : CalendarDate(iso8601: text).map { .some($0) } }

    static func invalid() -> RPCError {
        .invalidParams(field: "cursor", reason: InputFailure.invalidCursor, message: "not a cursor of this listing (pass next_cursor back unchanged)")
    }
}

private extension UInt8 {
    var isBase64URL: Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || self == UInt8(ascii: "-") || self == UInt8(ascii: "_")
    }
}

extension HabitSortKey {
    static let cursorKind = "habits"

    var cursorFields: [String] { [PageCursor.field(sortOrder), PageCursor.field(createdAt), PageCursor.field(id)] }

    init(cursorFields fields: [String]) throws(RPCError) {
        guard let sortOrder = PageCursor.int(fields[0]), let createdAt = PageCursor.timestamp(fields[1]),
              let id = PageCursor.uuid(fields[2]) else { throw PageCursor.invalid() }
        self.init(sortOrder: sortOrder, createdAt: createdAt, id: id)
    }
}

extension TaskListSortKey {
    static let cursorKind = "lists"

    var cursorFields: [String] { [PageCursor.field(createdAt), PageCursor.field(id)] }

    init(cursorFields fields: [String]) throws(RPCError) {
        guard let createdAt = PageCursor.timestamp(fields[0]), let id = PageCursor.uuid(fields[1]) else { throw PageCursor.invalid() }
        self.init(createdAt: createdAt, id: id)
    }
}

extension TaskSortKey {
    var cursorFields: [String] {
        [state.rawValue, PageCursor.field(scheduledDate), PageCursor.field(position), PageCursor.field(createdAt), PageCursor.field(id)]
    }

    init(cursorFields fields: [String]) throws(RPCError) {
        guard let state = TaskState(rawValue: fields[0]), let date = PageCursor.date(fields[1]),
              let position = PageCursor.int(fields[2]) ?? nil, let createdAt = PageCursor.timestamp(fields[3]),
              let id = PageCursor.uuid(fields[4]) else { throw PageCursor.invalid() }
        self.init(state: state, scheduledDate: date, position: position, createdAt: createdAt, id: id)
    }
}

extension ParamsReader {
    /// `limit` and `cursor` of a habits listing.
    func habitPage() throws(RPCError) -> PageRequest<HabitSortKey> {
        let fields = try PageCursor.fields(self, kind: HabitSortKey.cursorKind, count: 3)
        return PageRequest(limit: try PageCursor.limit(self), after: try fields.map { fields throws(RPCError) in try HabitSortKey(cursorFields: fields) })
    }

    func taskListPage() throws(RPCError) -> PageRequest<TaskListSortKey> {
        let fields = try PageCursor.fields(self, kind: TaskListSortKey.cursorKind, count: 2)
        return PageRequest(limit: try PageCursor.limit(self), after: try fields.map { fields throws(RPCError) in try TaskListSortKey(cursorFields: fields) })
    }

    /// `limit` and `cursor` of a task listing named `kind`; `extra` fields of the listing
    /// (Today's date) come before the key's and are returned with it.
    func taskPage(kind: String, extra: Int = 0) throws(RPCError) -> (PageRequest<TaskSortKey>, [String]) {
        guard let fields = try PageCursor.fields(self, kind: kind, count: extra + 5) else {
            return (PageRequest(limit: try PageCursor.limit(self)), [])
        }
        let key = try TaskSortKey(cursorFields: Array(fields.dropFirst(extra)))
        return (PageRequest(limit: try PageCursor.limit(self), after: key), Array(fields.prefix(extra)))
    }
}

extension Page {
    /// `next_cursor`: the last item's key as a cursor of `kind`, or nil at the end.
    func nextCursor(kind: String, extra: [String] = [], _ key: (Item) -> [String]) -> String? {
        guard hasMore, let last = items.last else { return nil }
        return PageCursor.encode(kind: kind, extra + key(last))
    }
}
