import Foundation
import PostgresClient
import TestSupport
import Testing

/// The test scripts' servers trust every local connection, so only their owner may reach the
/// sockets: scripts/pg-tmp and scripts/pgbouncer-tmp make the directory, the socket directory
/// and the socket 0700 (before: pgbouncer's socket was 0777 in a 0755 directory).
@Suite("deployment: test servers listen on private sockets")
struct PrivateSocketsTests {
    static func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as? Int) ?? -1
    }

    static func expectPrivate(_ directory: String, port: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let parent = URL(fileURLWithPath: directory).deletingLastPathComponent().path
        for path in [parent, directory, "\(directory)/.s.PGSQL.\(port)"] {
            let mode = try Self.mode(path)
            #expect(mode & 0o077 == 0, "\(path) has mode \(String(mode, radix: 8))", sourceLocation: sourceLocation)
        }
    }

    @Test("the suite's PostgreSQL (scripts/pg-tmp) and a pgbouncer (scripts/pgbouncer-tmp)")
    func socketsAreOwnerOnly() throws {
        let (host, port) = try PgBouncer.suiteServerAddress()
        // Only when the suite's server is scripts/pg-tmp's (a directory habit-pg.*/socket).
        if host.contains("/habit-pg.") { try Self.expectPrivate(host, port: port) }
        try PgBouncer.with(poolSize: 1) { bouncer in
            try Self.expectPrivate(bouncer.socketDirectory, port: bouncer.port)
        }
    }
}
