import Foundation
import PostgresClient
import TestSupport
import Testing

/// Issue 13 #5: a malformed database URL never reaches a log or an error message verbatim
/// (libpq's own parse errors quote the string, password included, and a string libpq takes
/// for a database name comes back in the server's "database … does not exist"). Every
/// command that connects says which part is wrong, without its value, and exits 64.
@Suite("deployment: a malformed database URL is reported without its secret")
struct DatabaseURLSecrecyTests {
    static let cases: [(url: String, secret: String, complaint: String)] = [
        ("postgres://user:s3cretpass@host:notaport/db", "s3cretpass", "invalid port"),
        ("postgresql://u:s3cret@/db?sslmode=bogus&host=/tmp", "s3cret", "invalid sslmode"),
        ("s3cretgarbage not a url", "s3cretgarbage", "a word without \"=\""),
        ("postgres://u:s3cret%zz@h/db", "s3cret", "percent-encoding"),
        ("postgres://u:s3cret@[::1/db", "s3cret", "IPv6 host address"),
        ("postgres://u@h/db?s3cret", "s3cret", "URI query parameter without \"=\""),
        ("host=h password='s3cret", "s3cret", "closing quote"),
        // Multi-host URLs (failover, docs/admin.md): a wrong part in the second host's port or in
        // target_session_attrs is named, the password never shown.
        ("postgresql://u:s3cret@h1:5432,h2:notaport/db?target_session_attrs=read-write", "s3cret", "invalid port"),
        ("postgresql://u:s3cret@/db?host=/a,/b&target_session_attrs=primaryish", "s3cret", "invalid target_session_attrs"),
    ]

    static let commands: [[String]] = [
        ["serve"],
        ["serve", "--migrate"],
        ["migrate", "--migrations-dir", TestDatabase.migrationsDirectory],
        ["weekly-counts", "--from", "2026-01-05", "--to", "2026-01-11"],
    ]

    @Test("habit serve, migrate and weekly-counts name the wrong part of --database-url/DATABASE_URL and never print the secret")
    func malformedURLsNeverShowTheirSecret() throws {
        let binary = try WorkerProcess.binaryPath()
        // The suite's server stays reachable through PG* variables: a string libpq would take
        // for a database name would otherwise come back in the server's own error.
        for (url, secret, complaint) in Self.cases {
            for command in Self.commands {
                for viaEnvironment in [false, true] {
                    let arguments = viaEnvironment ? command : command + ["--database-url", url]
                    let environment = WorkerProcess.childEnvironment(viaEnvironment ? ["DATABASE_URL": url] : [:])
                    let result = try WorkerProcess.run(binary, arguments, environment: environment, timeout: 30)
                    let what = "\(arguments.prefix(2).joined(separator: " ")) with \(viaEnvironment ? "DATABASE_URL" : "--database-url") \(url)"
                    #expect(result.status == 64, "\(what): exit \(result.status), stderr \(result.stderr)")
                    #expect(!result.stdout.contains(secret), "\(what): the secret is on stdout: \(result.stdout)")
                    #expect(!result.stderr.contains(secret), "\(what): the secret is on stderr: \(result.stderr)")
                    // serve's usage error is a JSON log line: its quotes are escaped.
                    let said = result.stderr.replacingOccurrences(of: "\\\"", with: "\"")
                    #expect(said.contains(complaint), "\(what): stderr does not say \(complaint): \(result.stderr)")
                    #expect(result.stderr.contains(viaEnvironment ? "DATABASE_URL" : "--database-url"), "\(what): \(result.stderr)")
                }
            }
        }
    }

    @Test("habit serve names the wrong part of --listen-url/HABIT_LISTEN_URL and never prints the secret")
    func malformedListenURLsNeverShowTheirSecret() throws {
        let binary = try WorkerProcess.binaryPath()
        for (url, secret, complaint) in Self.cases {
            for viaEnvironment in [false, true] {
                let arguments = ["serve", "--database-url", "postgresql:///habit?host=/nonexistent-habit"] + (viaEnvironment ? [] : ["--listen-url", url])
                let environment = WorkerProcess.childEnvironment(viaEnvironment ? ["HABIT_LISTEN_URL": url] : [:])
                let result = try WorkerProcess.run(binary, arguments, environment: environment, timeout: 30)
                let what = "serve with \(viaEnvironment ? "HABIT_LISTEN_URL" : "--listen-url") \(url)"
                #expect(result.status == 64, "\(what): exit \(result.status), stderr \(result.stderr)")
                #expect(!result.stdout.contains(secret) && !result.stderr.contains(secret), "\(what): the secret is shown: \(result.stderr)")
                let said = result.stderr.replacingOccurrences(of: "\\\"", with: "\"")
                #expect(said.contains(complaint) && said.contains(viaEnvironment ? "HABIT_LISTEN_URL" : "--listen-url"), "\(what): \(result.stderr)")
            }
        }
    }

    @Test("habit weekly-counts --store names the wrong part of --store-url/HABIT_STORE_URL and never prints the secret")
    func malformedStoreURLsNeverShowTheirSecret() throws {
        let binary = try WorkerProcess.binaryPath()
        for (url, secret, complaint) in Self.cases {
            for viaEnvironment in [false, true] {
                let arguments = ["weekly-counts", "--store", "--from", "2026-01-05", "--to", "2026-01-11",
                                 "--database-url", "postgresql:///habit?host=/nonexistent-habit"] + (viaEnvironment ? [] : ["--store-url", url])
                let environment = WorkerProcess.childEnvironment(viaEnvironment ? ["HABIT_STORE_URL": url] : [:])
                let result = try WorkerProcess.run(binary, arguments, environment: environment, timeout: 30)
                let what = "weekly-counts with \(viaEnvironment ? "HABIT_STORE_URL" : "--store-url") \(url)"
                #expect(result.status == 64, "\(what): exit \(result.status), stderr \(result.stderr)")
                #expect(!result.stdout.contains(secret) && !result.stderr.contains(secret), "\(what): the secret is shown: \(result.stderr)")
                #expect(result.stderr.contains(complaint) && result.stderr.contains(viaEnvironment ? "HABIT_STORE_URL" : "--store-url"), "\(what): \(result.stderr)")
            }
        }
    }

    @Test("Connection and ConnectionString refuse the same strings with the same safe message")
    func theLibraryNeverQuotesAMalformedString() throws {
        for (url, secret, complaint) in Self.cases {
            for attempt in [{ try ConnectionString.validate(url) }, { _ = try Connection(url, connectTimeoutSeconds: 2) },
                            { _ = try ConnectionString.applying(["user": "x"], to: url) }] as [() throws -> Void] {
                let error = try #require(throws: PostgresError.self, "\(url)") { try attempt() }
                #expect(error.kind == .connectionFailed)
                for text in [error.message, error.description, error.debugDescription, String(reflecting: error)] {
                    #expect(!text.contains(secret), "\(url): \(text)")
                }
                #expect(error.message.contains(complaint), "\(url): \(error.message)")
            }
        }
        // What libpq accepts still passes: URLs, conninfo, port lists, the empty string.
        for good in ["", "postgresql://u:p@/db?host=/tmp&port=5432&sslmode=verify-full", "host=/tmp,/var/run port=5432,",
                     "postgres://h1:5432,h2:6432/db?target_session_attrs=read-write&connect_timeout=3", TestDatabase.serverURL] {
            #expect(throws: Never.self, "\(good)") { try ConnectionString.validate(good) }
        }
    }
}
