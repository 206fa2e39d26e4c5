import Foundation
import HabitStore
import PostgresClient

// TEMPORARY (helper D, branch i18-listen): the caught-up cursor of the contract's text form
// (/work/prompts18/sync-design.md, "Cursors"), until helper B's SyncRepository.cursor(user:seq:)
// and currentCursor(user:) land; replaced in the commit that merges i18-store.
extension ChangeListener.Cursors {
    static func store(settings: StoreSettings) -> Self {
        Self(caughtUp: { _, seq in caughtUpText(seq: seq) },
             current: { connection, user in
                 let rows = try UserScope(connection: connection, settings: settings)
                     .query(as: user, "SELECT seq FROM habit.sync_clocks WHERE user_id = \(user)")
                 return caughtUpText(seq: try rows.first?.decode(Int64.self, at: 0) ?? 0)
             })
    }

    /// "v1." + base64url("<seq>.7..<seq>.<issued>"): everything through `seq` consumed.
    private static func caughtUpText(seq: Int64) -> String {
        let body = "\(seq).7..\(seq).\(Int(Date().timeIntervalSince1970))"
        let base64 = Data(body.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        return "v1." + base64
    }
}
