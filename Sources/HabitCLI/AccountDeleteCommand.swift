import ArgumentParser
import Foundation
import HabitStore
import PostgresClient

extension AccountCommand {
    /// `habit account delete --user ID --yes`: habit.delete_account (sql/functions/accounts.sql) as habit_admin.
    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete every row a user owns, in one transaction; prints the rows deleted per table.",
            discussion: """
                Calls habit.delete_account (sql/functions/accounts.sql) as the habit_admin role (SET LOCAL ROLE), so the \
                connecting role must be a member of habit_admin; without --database-url or DATABASE_URL \
                the embedded server's superuser connects. Keeps the user's sync clock and the \
                content-free tombstones of the deleted rows (other devices learn of the deletion on \
                their next sync.pull; habit.prune_sync drops them after the retention), and leaves the \
                identity (Supabase's auth.users) to the auth provider: docs/schema.md, "What account \
                deletion keeps". Running it again deletes nothing and prints zeros.

                --yes is required: the deletion cannot be undone (restore a backup, or import an \
                export taken before).

                Output: one line per table, `<schema.table> <rows deleted>`, then `total <sum>`.

                Exit status: 0 done; 64 bad arguments (no --yes, not a UUID); 3 database unreachable \
                or lost; 1 any other error (e.g. the role is not a member of habit_admin).
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Option(help: ArgumentHelp("The user whose account is deleted.", valueName: "uuid"))
        var user: String

        @Flag(help: "Confirm the deletion (required: it cannot be undone).")
        var yes = false

        func validate() throws {
            guard UUID(canonical: user) != nil else { throw ValidationError("--user must be a UUID") }
            guard yes else {
                throw ValidationError("deleting an account cannot be undone; add --yes to delete user \(user)")
            }
        }

        func run() throws {
            try reportingFailures {
                let connection = try database.connect(try database.connectionURL(embedded: \.adminConnectionString),
                                                      applicationName: "habit-account-delete")
                defer { connection.close() }
                let deletion = try AccountRepository.deleteAsAdmin(connection, user: UUID(canonical: user)!)
                var output = ""
                for table in deletion.tables { output += "\(table.name) \(table.deleted)\n" }
                output += "total \(deletion.total)\n"
                FileHandle.standardOutput.write(Data(output.utf8))
            }
        }
    }
}
