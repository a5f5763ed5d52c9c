import Foundation
import LiveBusCore
import LiveBusWire

@testable import LiveBusDaemon

/// Log lines an embedded daemon wrote (the test's one thread only).
final class EmbeddedLog: @unchecked Sendable {  // @unchecked: written and read only on the test's thread.
    private(set) var lines: [String] = []
    func append(_ s: String) { lines.append(s) }
    /// Lines containing every one of `parts`.
    func lines(_ parts: String...) -> [String] { lines.filter { l in parts.allSatisfy { l.contains($0) } } }
    var logger: Logger {
        Logger(minimumLevel: .debug) { [self] level, message, meta in
            self.append("\(level) \(message) " + meta.map { "\($0.0)=\($0.1)" }.joined(separator: " "))
        }
    }
}

/// An embedded daemon with its log captured.
func embeddedDaemon(
    scenario: String? = nil,
    timeScale: Double = 1,
    configure: (inout DaemonOptions) -> Void = { _ in }
) throws -> (EmbeddedDaemon, EmbeddedLog) {
    var o = DaemonOptions.embedded(scenario: scenario, timeScale: timeScale)
    configure(&o)
    let log = EmbeddedLog()
    return (try EmbeddedDaemon(options: o, logger: log.logger), log)
}

/// A HELLO frame (role, name, versions, device), its clientTime `clientTime` (ms, client clock).
func helloFrame(
    role: ClientRole = .session,
    name: String? = nil,
    versions: [Int] = Frame.supportedVersions,
    device: String? = "iphone-16-pro",
    clientTime: Int64 = 1_767_225_600_000,
    resume: ResumeBody? = nil,
    configure: (inout HelloBody) -> Void = { _ in }
) -> Frame {
    var body = HelloBody(
        versions: versions,
        client: "embedded-test",
        role: role,
        name: name,
        device: device,
        posture: device == nil ? nil : PostureBody(foldState: "flat", orientation: "portrait"),
        appState: "foreground",
        clientTime: clientTime
    )
    body.resume = resume
    configure(&body)
    return Frame(type: .hello, body: try! WireJSON.encode(body))
}

func frame(_ type: FrameType, sequence: UInt64 = 0, topic: String = "", _ body: some Encodable) -> Frame {
    Frame(type: type, sequence: sequence, topic: topic, body: try! WireJSON.encode(body))
}

/// The test event body (server-clock instants) with status `status`, event `event`.
func eventBody(_ event: String = "update", status: String = "cooking", summary: String = "Cooking") -> EventBody {
    EventBody(
        event: event,
        timestamp: 1_767_225_600_000,
        contentState: ContentStateBody(
            status: status,
            summary: SummaryBody(ko: "조리 중", en: summary),
            etaTarget: 1_767_226_800_000,
            progress: 0.25,
            riderPosition: nil,
            lastConfirmed: 1_767_225_600_000
        ),
        staleDate: 1_767_225_900_000,
        relevanceScore: 50,
        dismissalDate: nil,
        priority: 10
    )
}

func publishFrame(topic: String, id: UInt64, _ body: EventBody = eventBody()) -> Frame {
    Frame(type: .publish, sequence: id, topic: topic, body: try! EventJSON.encode(body))
}

extension Array where Element == Frame {
    var types: [FrameType] { map(\.type) }
    var errors: [ErrorBody] {
        filter { $0.type == .error }.compactMap { try? WireJSON.decode(ErrorBody.self, from: $0.body) }
    }
    func first<T: Decodable>(_ type: FrameType, as: T.Type) -> T? {
        first { $0.type == type }.flatMap { try? WireJSON.decode(T.self, from: $0.body) }
    }
}

extension EmbeddedConnection {
    /// Sends HELLO and returns the WELCOME's body (and every frame read with it).
    @discardableResult
    func attach(_ hello: Frame = helloFrame()) throws -> (WelcomeBody?, [Frame]) {
        try writeInbound(hello)
        let frames = try readOutboundFrames()
        return (frames.first(.welcome, as: WelcomeBody.self), frames)
    }
}
