import Foundation
import LiveBusClient
import LiveBusLoop
import LiveBusScheduler
import LiveBusWire
import Testing

@testable import LiveBusCLI
@testable import LiveBusDaemon

/// Phones that change posture and app state while attached, over a real socket.
/// Source: issue 4 and issue 6 "Done when".
@Suite(.serialized)
struct E2EPhoneBehaviourTests {
    /// Unfold, fold and half-open during a live session change the layout at once (before the daemon answers), and
    /// the daemon then reports the new posture.
    @Test func postureChangesRelayoutAndReachTheDaemon() throws {
        let bus = try TestBus(scenario: "demo-120s", timeScale: 20)
        let duo = bus.session("duo") { o in
            o.device = "iphone-duo"
            o.posture = PostureBody(foldState: "folded", orientation: "portrait")
        }
        var layouts: [AppliedLayout] = []
        duo.onLayout = { r, _, _ in if r.trigger != "update" { layouts.append(r) } }
        duo.start()
        #expect(bus.run(timeoutMs: 5000) { duo.syncState == .live && !layouts.isEmpty })
        #expect(layouts.last?.arrangement == "vertical", "folded is compact width: cards at the bottom")
        let steps: [(String, String, String)] = [
            ("flat", "landscape", "horizontal"), ("half-opened", "landscape", "horizontal"),
            ("folded", "portrait", "vertical"),
        ]
        for (fold, orientation, arrangement) in steps {
            let before = layouts.count
            duo.change(posture: PostureBody(foldState: fold, orientation: orientation))
            // Synchronous: the new layout exists before the loop runs again.
            #expect(layouts.count == before + 1)
            let r = try #require(layouts.last)
            #expect(r.foldState == fold && r.arrangement == arrangement && r.invariantsHeld, "\(r)")
            #expect((r.reservedRegion != nil) == (fold == "half-opened"))
            let reported = bus.run(timeoutMs: 2000) {
                bus.daemon.sessions.values.first { $0.name == "duo" }?.posture?.foldState == fold
            }
            #expect(reported, "the daemon reports \(fold)")
        }
        duo.close()
        bus.shutdown()
    }

    /// A backgrounded phone with a small push budget through the demo: updates are delayed and coalesced, its stale
    /// mark shows during the gaps, it never shows a status out of the backend's order, and it ends delivered.
    @Test func backgroundedPhoneWithSmallBudgetGoesStaleButEndsDelivered() throws {
        var config = SchedulerConfig.default
        // A small budget over a short window (ours to choose: Apple publishes none), so the test sees the budget spent,
        // the throttle, and its release within seconds at 20×.
        config.priority10BudgetPerHour = 3
        config.budgetWindowMilliseconds = 180_000
        let bus = try TestBus(scenario: "demo-120s", timeScale: 20) { o in o.scheduler = config }
        let fg = bus.session("fg")
        let bg = bus.session("bg")
        var applied: [String: [AppliedUpdate]] = [:]
        var staleMarks = 0
        var delivered = Set<String>()
        for s in [fg, bg] {
            s.onUpdate = { u in
                if u.type == "update" { applied[u.session, default: []].append(u) }
                if u.type == "stale" && u.session == "bg" { staleMarks += 1 }
                if u.status == "delivered" { delivered.insert(u.session) }
                // The order was placed in the foreground (an activity starts only there), then the app left.
                if s === bg && u.event == "start" && u.applied { bg.change(appState: "background") }
            }
            s.start()
        }
        let done = bus.run(timeoutMs: 30_000) { delivered.count == 2 }
        #expect(done, "delivered: \(delivered)")
        let order = E2EDaemonTests.fullSequence
        for (name, list) in applied {
            let ranks = list.compactMap { order.firstIndex(of: $0.status) }
            #expect(ranks == ranks.sorted(), "\(name) showed statuses out of order: \(list.map(\.status))")
            #expect(list.map(\.seq) == list.map(\.seq).sorted(), "\(name) sequences went backwards")
        }
        let fgCount = applied["fg"]?.count ?? 0
        let bgCount = applied["bg"]?.count ?? 0
        #expect(bgCount < fgCount, "the background phone got \(bgCount) updates, the foreground one \(fgCount)")
        #expect(staleMarks >= 1, "the background phone showed its stale mark during a gap")
        #expect(applied["bg"]?.contains { $0.delivery == "snapshot" } == true, "coalesced updates arrive as snapshots")
        let sched = bus.daemon.sessions.values.first { $0.name == "bg" }?.scheduler
        #expect((sched?.status(at: bus.daemon.clock.now()).coalescedCount ?? 0) + bgCount < fgCount + 5)
        fg.close()
        bg.close()
        bus.shutdown()
    }
}

/// The demo's and attach's box is exactly 78 columns at its top and bottom, also when the heading (name, device,
/// posture, app state, clock) is longer than fits: it is cut with "…". Source: review finding (a top border one
/// column wider than the box).
struct SessionViewBoxTests {
    @Test func boxEdgesAreTheBoxWidth() throws {
        let loop = try EventLoop()
        defer { _ = loop.close() }
        for name in ["pro", "duo-half-with-a-rather-long-session-name"] {
            let s = ClientSession(
                loop: loop,
                options: ClientOptions(
                    socketPath: "/tmp/none.sock",
                    name: name,
                    device: "iphone-duo",
                    posture: PostureBody(foldState: "half-opened", orientation: "landscape"),
                    appState: "background",
                    clockSkewMilliseconds: 90_000,
                    clockDriftPPM: 120
                ),
                trueClock: SystemServerClock()
            )
            let lines = SessionView.render(s)
            #expect(lines.first?.count == SessionView.width, "\(lines.first ?? "")")
            #expect(lines.last?.count == SessionView.width, "\(lines.last ?? "")")
        }
    }
}
