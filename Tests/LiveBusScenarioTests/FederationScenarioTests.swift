import LiveBusScenario
import Testing

/// The federation block of the e2e scenario format (Protocol/E2E.md §2.5): daemons and NATS nodes by name, sessions
/// placed on daemons, and the fault actions; every mistake is named with the file, the line and the field.
/// Source: ISSUE-19 ("The e2e scenario format can place sessions on different daemons and kill or partition a
/// daemon or a NATS node").
struct FederationScenarioTests {
    static func scenario(federation: String, sessions: String, actions: String) -> String {
        """
        {
          "version": 1,
          "name": "fed",
          "duration": "60s",
          \(federation)
          "sessions": [\(sessions)],
          "actions": [\(actions)]
        }
        """
    }

    static let federation = "\"federation\": { \"nats\": 3, \"replicas\": 3, \"daemons\": 3 },"

    static func error(_ text: String) -> E2EScenarioError? { ScenarioDecoderTests.error(text) }

    /// A full federated scenario decodes: three daemons d1…d3 on every node, sessions placed (default d1), every
    /// federation action with its daemon or node, and a refused create expected.
    @Test func federatedScenarioDecodes() throws {
        let text = Self.scenario(
            federation: Self.federation,
            sessions: """
                { "name": "a" }, { "name": "b", "daemon": "d2" }, { "name": "c", "daemon": "d3", "count": 2 }
                """,
            actions: """
                { "at": "1s", "type": "moveSession", "session": "a", "daemon": "d3" },
                { "at": "2s", "type": "killDaemon", "daemon": "d2" },
                { "at": "3s", "type": "restartDaemon", "daemon": "d2" },
                { "at": "4s", "type": "killNats", "node": "n1" },
                { "at": "5s", "type": "restartNats", "node": "n1" },
                { "at": "6s", "type": "suspendNats", "node": "n2" },
                { "at": "7s", "type": "resumeNats", "node": "n2" },
                { "at": "8s", "type": "partitionDaemon", "daemon": "d3" },
                { "at": "9s", "type": "createOrder", "order": "X1", "daemon": "d3", "expect": "federationUnavailable" },
                { "at": "9s", "type": "cancelOrder", "order": "A1001", "daemon": "d1", "expect": "any" },
                { "at": "10s", "type": "healDaemon", "daemon": "d3" }
                """
        )
        let s = try ScenarioDecoderTests.decode(text)
        let f = try #require(s.federation)
        #expect(f.natsNodes == 3 && f.replicas == 3)
        #expect(f.daemons.map(\.name) == ["d1", "d2", "d3"])
        #expect(f.daemons.allSatisfy { $0.connect == ["n1", "n2", "n3"] })
        #expect(s.sessions.map { s.daemon(of: $0) } == ["d1", "d2", "d3", "d3"])
        #expect(
            s.actions.map(\.kind) == [
                .moveSession(.named("a"), daemon: "d3"), .killDaemon(daemon: "d2"), .restartDaemon(daemon: "d2"),
                .killNats(node: "n1"), .restartNats(node: "n1"), .suspendNats(node: "n2"), .resumeNats(node: "n2"),
                .partitionDaemon(daemon: "d3"),
                .createOrder(id: "X1", customer: nil, daemon: "d3", expect: .federationUnavailable),
                .cancelOrder(order: "A1001", expect: .any, daemon: "d1"), .healDaemon(daemon: "d3"),
            ]
        )
        #expect(E2EFederation.partitioned(s.actions) == ["d3"])
    }

    /// Named daemons with the nodes they connect to; replicas default to min(3, nats).
    @Test func namedDaemonsAndConnectLists() throws {
        let text = Self.scenario(
            federation: """
                "federation": { "nats": 2, "daemons": ["east", { "name": "west", "connect": ["n2"] }] },
                """,
            sessions: "{ \"name\": \"a\", \"daemon\": \"west\" }",
            actions: ""
        )
        let s = try ScenarioDecoderTests.decode(text)
        #expect(s.federation?.replicas == 2)
        #expect(
            s.federation?.daemons == [
                E2EDaemonSpec(name: "east", connect: ["n1", "n2"]), E2EDaemonSpec(name: "west", connect: ["n2"]),
            ]
        )
        #expect(s.sessions[0].daemon == "west")
    }

    /// A scenario without a federation block is unchanged: no daemons to name, killDaemon means its daemon.
    @Test func withoutAFederationNothingChanges() throws {
        let s = try ScenarioDecoderTests.decode(ScenarioDecoderTests.valid)
        #expect(s.federation == nil)
        #expect(s.daemonNames.isEmpty)
        #expect(s.sessions.allSatisfy { s.daemon(of: $0) == nil })
        #expect(s.actions.contains { $0.kind == .killDaemon(daemon: nil) })
    }

    /// Each mistake gets its own message, with the line and the field.
    @Test(arguments: [
        // An unknown daemon, with the near match and the list.
        (
            Self.scenario(
                federation: Self.federation,
                sessions: "{ \"name\": \"a\", \"daemon\": \"d4\" }",
                actions: ""
            ),
            "field 'sessions[0].daemon': no daemon named 'd4' (did you mean 'd1'?); the federation's daemons: d1, d2, d3"
        ),
        // A daemon named without a federation block.
        (
            Self.scenario(federation: "", sessions: "{ \"name\": \"a\", \"daemon\": \"d1\" }", actions: ""),
            "field 'sessions[0].daemon': names daemon 'd1' but the scenario has no federation block (one daemon)"
        ),
        // NATS actions without a federation.
        (
            Self.scenario(
                federation: "",
                sessions: "{ \"name\": \"a\" }",
                actions: "{ \"at\": \"1s\", \"type\": \"killNats\", \"node\": \"n1\" }"
            ),
            "field 'actions[0].type': killNats needs a federation block (NATS nodes)"
        ),
        // An unknown node.
        (
            Self.scenario(
                federation: Self.federation,
                sessions: "{ \"name\": \"a\" }",
                actions: "{ \"at\": \"1s\", \"type\": \"suspendNats\", \"node\": \"n4\" }"
            ),
            "field 'actions[0].node': no NATS node named 'n4'; the federation's nodes: n1, n2, n3"
        ),
        // More replicas than nodes.
        (
            Self.scenario(
                federation: "\"federation\": { \"nats\": 1, \"replicas\": 3, \"daemons\": 2 },",
                sessions: "{ \"name\": \"a\" }",
                actions: ""
            ),
            "field 'federation.replicas': 3 replicas need at least 3 NATS nodes; nats is 1"
        ),
        // A federation without daemons.
        (
            Self.scenario(federation: "\"federation\": { \"nats\": 3 },", sessions: "{ \"name\": \"a\" }", actions: ""),
            "field 'federation.daemons': missing required field"
        ),
        // A daemon named twice.
        (
            Self.scenario(
                federation: "\"federation\": { \"daemons\": [\"x\", \"x\"] },",
                sessions: "{ \"name\": \"a\" }",
                actions: ""
            ),
            "field 'federation.daemons[1]': daemon name 'x' is used twice"
        ),
        // A partition never healed.
        (
            Self.scenario(
                federation: Self.federation,
                sessions: "{ \"name\": \"a\" }",
                actions: "{ \"at\": \"1s\", \"type\": \"partitionDaemon\", \"daemon\": \"d2\" }"
            ),
            "daemon d2 is partitioned and never healed; add a healDaemon action"
        ),
        // A killed daemon of the federation killed again.
        (
            Self.scenario(
                federation: Self.federation,
                sessions: "{ \"name\": \"a\" }",
                actions: """
                    { "at": "1s", "type": "killDaemon", "daemon": "d2" }, { "at": "2s", "type": "killDaemon", "daemon": "d2" }
                    """
            ),
            "field 'actions[1].type': daemon d2 is already killed; restart it first"
        ),
        // Restarting a daemon that was not killed (another was).
        (
            Self.scenario(
                federation: Self.federation,
                sessions: "{ \"name\": \"a\" }",
                actions: """
                    { "at": "1s", "type": "killDaemon", "daemon": "d2" }, { "at": "2s", "type": "restartDaemon", "daemon": "d3" }
                    """
            ),
            "field 'actions[1].type': restartDaemon needs an earlier killDaemon of d3"
        ),
        // A suspended node never resumed.
        (
            Self.scenario(
                federation: Self.federation,
                sessions: "{ \"name\": \"a\" }",
                actions: "{ \"at\": \"1s\", \"type\": \"suspendNats\", \"node\": \"n2\" }"
            ),
            "NATS node n2 is suspended and never resumed; add a resumeNats action"
        ),
        // Killing a suspended node.
        (
            Self.scenario(
                federation: Self.federation,
                sessions: "{ \"name\": \"a\" }",
                actions: """
                    { "at": "1s", "type": "suspendNats", "node": "n2" }, { "at": "2s", "type": "killNats", "node": "n2" }
                    """
            ),
            "field 'actions[1].node': node n2 is suspended; resume it first"
        ),
        // A move to an unknown daemon.
        (
            Self.scenario(
                federation: Self.federation,
                sessions: "{ \"name\": \"a\" }",
                actions: "{ \"at\": \"1s\", \"type\": \"moveSession\", \"session\": \"a\", \"daemon\": \"d9\" }"
            ),
            "field 'actions[0].daemon': no daemon named 'd9'"
        ),
        // Expecting federationUnavailable without a federation.
        (
            Self.scenario(
                federation: "",
                sessions: "{ \"name\": \"a\" }",
                actions: "{ \"at\": \"1s\", \"type\": \"createOrder\", \"expect\": \"federationUnavailable\" }"
            ),
            "field 'actions[0].expect': federationUnavailable needs a federation block"
        ),
        // An unknown field in a daemon.
        (
            Self.scenario(
                federation: "\"federation\": { \"daemons\": [{ \"name\": \"x\", \"host\": \"a\" }] },",
                sessions: "{ \"name\": \"a\" }",
                actions: ""
            ),
            "field 'federation.daemons[0].host': unknown field; allowed here: connect, name"
        ),
    ])
    func mistakesAreNamed(text: String, expected: String) {
        let e = Self.error(text)
        #expect(e?.description.contains(expected) == true, "\(e?.description ?? "decoded")")
        #expect(e?.file == "Protocol/scenarios/x.json")
        #expect((e?.line ?? 0) > 0)
    }

    /// What the host lacks is named before anything starts: nats-server for a federation (run tools/setup), root
    /// and iproute2 for a partition; a scenario without a federation needs neither.
    @Test func hostProblemsAreNamed() throws {
        let text = Self.scenario(
            federation: Self.federation,
            sessions: "{ \"name\": \"a\" }",
            actions: """
                { "at": "1s", "type": "partitionDaemon", "daemon": "d2" }, { "at": "2s", "type": "healDaemon", "daemon": "d2" }
                """
        )
        let s = try ScenarioDecoderTests.decode(text)
        let noNATS = s.hostProblem(file: "x.json", natsServer: false, namespaces: true)
        #expect(noNATS?.field == "federation")
        #expect(noNATS?.line == 5)
        #expect(noNATS?.message.contains("nats-server, which is not installed: run tools/setup") == true)
        let noRoot = s.hostProblem(file: "x.json", natsServer: true, namespaces: false)
        #expect(noRoot?.field == "partitionDaemon")
        #expect(noRoot?.message.contains("daemon d2 needs a network namespace of its own, which needs root") == true)
        #expect(s.hostProblem(file: "x.json", natsServer: true, namespaces: true) == nil)
        let plain = try ScenarioDecoderTests.decode(ScenarioDecoderTests.valid)
        #expect(plain.hostProblem(file: "x.json", natsServer: false, namespaces: false) == nil)
    }
}
