import Foundation
import PostgresClient
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Spawn the worker, load it, stop it with EOF or SIGTERM while requests are in flight —
/// again and again. Each cycle: the worker exits 0, leaves no process behind (found by a
/// unique marker in its environment) and no backend behind, and every request it was sent
/// was either answered, or never applied (a write without an answer left no row).
///
/// Exit durations are recorded, not asserted (scripts/reliability.sh lifecycle checks the
/// 2 s bound). Size: RELIABILITY_LIFECYCLE_CYCLES per stop mode (default 5; full run 100).
@Suite("Reliability: process lifecycle", .serialized)
struct LifecycleTests {
    enum Stop: String, CaseIterable { case eof, sigterm }

    @Test("spawn / load / EOF or SIGTERM cycles: exit 0, no orphan, no backend left, every request answered or not applied",
          arguments: Stop.allCases)
    func cycles(stop: Stop) throws {
        let cycles = Scale.int("LIFECYCLE_CYCLES", default: 5)
        let load = 40
        try TestDatabase.with { database in
            let admin = try database.connect()
            defer { admin.close() }
            let user = UUID()
            var exitSeconds: [Double] = []
            var answered = 0
            var unanswered = 0
            var written = 0
            for cycle in 0..<cycles {
                let marker = "HABIT_RELIABILITY_MARKER=\(UUID().uuidString)"
                let worker = try WorkerProcess.serve(databaseURL: try database.workerURL(), arguments: ["--pool-size", "2"],
                                                     environment: ["HABIT_RELIABILITY_MARKER": String(marker.split(separator: "=")[1])])
                defer { worker.forceStop() }
                // Serving (signal handlers installed, a connection up) before the load starts.
                #expect(try worker.request("profile.get", params: params(user), id: "ready").isSuccess)

                // The load: unique writes (one task per request, found by its title) and reads.
                var titles: [String: String] = [:] // id → title
                var bytes: [UInt8] = []
                for index in 0..<load {
                    let id = "c\(cycle)-\(index)"
                    let request: WireJSON
                    if index % 2 == 0 {
                        let title = "\(stop.rawValue)-\(cycle)-\(index)"
                        titles[id] = title
                        request = WorkerProcess.envelope(method: "tasks.create", params: params(user, ["title": .string(title)]), id: .string(id))
                    } else {
                        request = WorkerProcess.envelope(method: index % 3 == 0 ? "day.get" : "habits.list",
                                                         params: index % 3 == 0 ? params(user, ["date": "2021-01-01"]) : params(user), id: .string(id))
                    }
                    bytes += Array(request.encoded.utf8) + [0x0A]
                }
                // The marker finds the worker while it runs (so finding nothing later means something).
                #expect(ProcessInspection.processes(withEnvironment: marker) == [worker.pid])
                try worker.sendRaw(bytes)
                let stoppedAt = monotonicSeconds()
                switch stop {
                case .eof: worker.closeInput()
                case .sigterm: #expect(worker.terminate(signal: SIGTERM))
                }
                let status = worker.waitForExit(timeout: 60)
                exitSeconds.append(monotonicSeconds() - stoppedAt)
                worker.closeInput()
                let lines = try worker.remainingOutput(timeout: 60)
                #expect(status == 0, "cycle \(cycle): exit status \(String(describing: status))\n\(worker.stderrText.suffix(1_000))")

                // Answers: each id at most once (all of them after EOF).
                var seen: [String: Int] = [:]
                for line in lines {
                    let response = try WorkerResponse(line: Array(line.utf8))
                    let id = response.id?.stringValue ?? "?"
                    seen[id, default: 0] += 1
                    if titles[id] != nil { #expect(response.isSuccess, "\(response.raw)") }
                }
                #expect(seen.values.allSatisfy { $0 == 1 }, "an id answered twice: \(seen.filter { $0.value > 1 })")
                if stop == .eof { #expect(seen.count == load, "cycle \(cycle): \(seen.count) of \(load) answered after EOF") }
                answered += seen.count
                unanswered += load - seen.count

                // Writes: answered ⇒ row present; unanswered ⇒ no row.
                let rows = Set(try admin.query("SELECT title FROM public.tasks WHERE user_id = \(user)").map { try $0.decode(String.self, at: 0) })
                for (id, title) in titles {
                    #expect(rows.contains(title) == (seen[id] != nil), "cycle \(cycle): \(id) answered=\(seen[id] != nil) row=\(rows.contains(title))")
                }
                written += titles.keys.filter { seen[$0] != nil }.count

                // Nothing left behind: no process carrying the marker, no backend of this worker.
                #expect(ProcessInspection.processes(withEnvironment: marker).isEmpty, "cycle \(cycle): orphan processes")
                let backends = try admin.workerBackends()
                // A backend's exit trails the client's by a moment: wait for those pids (pidfd, hang guard).
                let stuck = ProcessInspection.waitForExit(backends.map { pid_t($0) }, timeout: 30)
                #expect(stuck.isEmpty, "cycle \(cycle): backends still running after the worker exited: \(stuck)")
                #expect(try admin.workerBackends().isEmpty, "cycle \(cycle): backends left")
            }
            Figures.record("lifecycle-\(stop.rawValue)", [
                "cycles": cycles, "requests_per_cycle": load, "answered": answered, "unanswered_not_applied": unanswered,
                "writes_committed": written, "exit_max_ms": (exitSeconds.max() ?? 0) * 1_000,
                "exit_p50_ms": percentile(exitSeconds, 0.5) * 1_000, "exit_p99_ms": percentile(exitSeconds, 0.99) * 1_000,
            ])
        }
    }
}
