import Foundation
import LiveBusWire

/// The golden frames of `Protocol/vectors/frames.json`: one or more per frame type, built from message values.
/// The Swift codec and the second-language client both test against the same bytes.
enum GoldenVectors {
    struct Vector {
        var name: String
        var frame: Frame
        var note: String
    }

    static let contentState = ContentStateBody(
        status: "cooking",
        summary: SummaryBody(ko: "조리 중", en: "Cooking"),
        etaTarget: 1_767_226_800_000,
        progress: 0.25,
        riderPosition: nil,
        lastConfirmed: 1_767_225_600_000
    )

    static let event = EventBody(
        event: "update",
        timestamp: 1_767_225_600_000,
        contentState: contentState,
        staleDate: 1_767_225_900_000,
        relevanceScore: 50,
        dismissalDate: nil,
        priority: 10
    )

    static var endEvent: EventBody {
        var endEvent = event
        endEvent.event = "end"
        endEvent.contentState.status = "delivered"
        endEvent.contentState.summary = SummaryBody(ko: "배달 완료", en: "Delivered")
        endEvent.contentState.progress = 1
        endEvent.contentState.riderPosition = PositionBody(latitude: 37.5, longitude: 127.03)
        endEvent.dismissalDate = 1_767_229_200_000
        return endEvent
    }

    static func json(_ v: some Encodable) -> [UInt8] {
        // swift-format-ignore: NeverUseForceTry
        try! WireJSON.encode(v)
    }

    static var all: [Vector] {
        var eventFrame = Frame(type: .event, sequence: 2, topic: "orders/A1001")
        eventFrame.body = try! EventJSON.encode(event)
        eventFrame.trailer = EventTrailer(
            timestamp: 1_767_225_690_000,
            etaTarget: 1_767_226_890_000,
            lastConfirmed: 1_767_225_690_000,
            staleDate: 1_767_225_990_000,
            dismissalDate: nil,
            uncertaintyMs: 3
        )
        var endFrame = Frame(type: .event, flags: [.terminal], sequence: 7, topic: "orders/A1001")
        endFrame.body = try! EventJSON.encode(endEvent)
        endFrame.trailer = EventTrailer(
            timestamp: 1_767_225_510_000,
            etaTarget: 1_767_226_710_000,
            lastConfirmed: 1_767_225_510_000,
            staleDate: 1_767_225_810_000,
            dismissalDate: 1_767_229_110_000,
            uncertaintyMs: 1
        )
        let hello = HelloBody(
            client: "livebus-swift/0.1",
            role: .session,
            name: "pro",
            device: "iphone-16-pro",
            posture: PostureBody(foldState: "flat", orientation: "portrait"),
            appState: "foreground",
            os: "27.1",
            clientTime: 1_767_225_690_000,
            features: [HelloBody.syncFeature]
        )
        let resumeHello = HelloBody(
            client: "livebus-swift/0.1",
            role: .session,
            name: "duo",
            device: "iphone-duo",
            posture: PostureBody(foldState: "half-opened", orientation: "landscape", hingeAngle: 95),
            appState: "background",
            clientTime: 1_767_225_690_000,
            resume: ResumeBody(
                token: "00112233445566778899aabbccddeeff",
                topics: ["orders/A1001": 4],
                patterns: ["orders/>"]
            )
        )
        return [
            Vector(name: "hello", frame: Frame(type: .hello, body: json(hello)), note: "session HELLO"),
            Vector(
                name: "hello-resume",
                frame: Frame(type: .hello, body: json(resumeHello)),
                note: "HELLO with resume (its patterns too)"
            ),
            Vector(
                name: "hello-admin",
                frame: Frame(
                    type: .hello,
                    body: json(HelloBody(client: "livebus-cli/0.1", role: .admin, clientTime: 1_767_225_600_000))
                ),
                note: "admin HELLO"
            ),
            Vector(
                name: "welcome",
                frame: Frame(
                    type: .welcome,
                    body: json(
                        WelcomeBody(
                            version: 2,
                            session: "s1",
                            name: "pro",
                            resumeToken: "00112233445566778899aabbccddeeff",
                            serverTime: 1_767_225_600_000,
                            resumed: false,
                            maxFrameSize: 65536
                        )
                    )
                ),
                note: "WELCOME"
            ),
            Vector(
                name: "subscribe",
                frame: Frame(type: .subscribe, body: json(SubscribeBody(patterns: ["orders/>"]))),
                note: "SUBSCRIBE to every order"
            ),
            Vector(
                name: "unsubscribe",
                frame: Frame(type: .unsubscribe, body: json(SubscribeBody(patterns: ["orders/*"]))),
                note: "UNSUBSCRIBE"
            ),
            Vector(
                name: "publish",
                frame: Frame(type: .publish, sequence: 41, topic: "orders/A1001", body: json(event)),
                note: "PUBLISH with request id 41"
            ),
            Vector(name: "event", frame: eventFrame, note: "EVENT seq 2, client clock +90 s"),
            Vector(
                name: "event-reconvert",
                frame: Frame(
                    type: .event,
                    flags: [.reconvert],
                    sequence: 2,
                    topic: "orders/A1001",
                    body: eventFrame.body,
                    trailer: eventFrame.trailer
                ),
                note: "the same EVENT seq 2 re-sent with instants re-converted for the client's clock (flag bit 3)"
            ),
            Vector(name: "event-end", frame: endFrame, note: "terminal EVENT (end, delivered)"),
            Vector(
                name: "ack-publish",
                frame: Frame(type: .ack, sequence: 41, topic: "orders/A1001", body: json(AckBody(sequence: 3))),
                note: "ACK of PUBLISH 41: assigned sequence 3"
            ),
            Vector(
                name: "ack-event",
                frame: Frame(type: .ack, sequence: 2, topic: "orders/A1001"),
                note: "client ACK of event seq 2 (empty body; {} is accepted too)"
            ),
            Vector(
                name: "ping",
                frame: Frame(type: .ping, body: json(PingBody(t1: 1_767_225_600_000))),
                note: "PING t1 server clock"
            ),
            Vector(
                name: "pong",
                frame: Frame(
                    type: .pong,
                    body: json(PongBody(t1: 1_767_225_600_000, t2: 1_767_225_690_001, t3: 1_767_225_690_001))
                ),
                note: "PONG from a client 90 s fast"
            ),
            Vector(
                name: "error",
                frame: Frame(
                    type: .error,
                    body: json(
                        ErrorBody(
                            WireError(.frameTooLarge, "frame of 70000 bytes announced; the limit is 65536"),
                            fatal: true
                        )
                    )
                ),
                note: "fatal ERROR"
            ),
            Vector(name: "bye", frame: Frame(type: .bye, body: json(ByeBody(reason: "client exit"))), note: "BYE"),
            Vector(
                name: "posture",
                frame: Frame(
                    type: .posture,
                    body: json(
                        PostureChangeBody(
                            posture: PostureBody(foldState: "folded", orientation: "portrait"),
                            appState: "background"
                        )
                    )
                ),
                note: "POSTURE change"
            ),
            Vector(
                name: "resend",
                frame: Frame(type: .resend, topic: "orders/A1001", body: json(ResendBody(fromSequence: 3))),
                note: "RESEND from 3"
            ),
            Vector(
                name: "uptodate",
                frame: Frame(type: .upToDate, topic: "orders/A1001", body: json(UpToDateBody(sequence: 7))),
                note: "UPTODATE at 7"
            ),
            Vector(
                name: "sync-degraded",
                frame: Frame(
                    type: .sync,
                    body: json(
                        SyncBody(
                            state: .degraded,
                            since: 1_767_225_690_000,
                            uncertaintyMs: 3,
                            reason: "NATS link reconnecting: PUBLISH is refused (federationUnavailable)"
                        )
                    )
                ),
                note: "SYNC: the federation is lost (since: client clock, 90 s fast)"
            ),
            Vector(
                name: "sync-catching-up",
                frame: Frame(
                    type: .sync,
                    body: json(SyncBody(state: .catchingUp, since: 1_767_225_720_000, uncertaintyMs: 3))
                ),
                note: "SYNC: the link is back, the daemon takes what it missed"
            ),
            Vector(
                name: "sync-live",
                frame: Frame(
                    type: .sync,
                    body: json(SyncBody(state: .live, since: 1_767_225_721_000, uncertaintyMs: 3))
                ),
                note: "SYNC: caught up, live again"
            ),
            Vector(
                name: "command",
                frame: Frame(type: .command, sequence: 1, body: json(CommandBody(command: "status"))),
                note: "COMMAND status"
            ),
            Vector(
                name: "result",
                frame: Frame(
                    type: .result,
                    sequence: 1,
                    body: json(ResultBody(ok: true, data: .object(["sessions": .array([])])))
                ),
                note: "RESULT ok"
            ),
        ]
    }

    /// `frame` with its CRC-32 recomputed (so that a later check, not the CRC, rejects it).
    static func recrc(_ frame: [UInt8]) -> [UInt8] {
        var f = frame
        let crc = CRC32.checksum(f[4..<20] + f[24...])
        f[20] = UInt8(crc >> 24)
        f[21] = UInt8((crc >> 16) & 0xFF)
        f[22] = UInt8((crc >> 8) & 0xFF)
        f[23] = UInt8(crc & 0xFF)
        return f
    }

    /// Byte strings that must be rejected, with the error code a decoder reports.
    static var malformed: [(name: String, bytes: [UInt8], code: WireError.Code)] {
        let ping = try! Frame(type: .ping, body: json(PingBody(t1: 1))).encoded()
        var badVersion = ping
        badVersion[4] = 1
        var badType = ping
        badType[5] = 0x7F
        var badCRC = ping
        badCRC[ping.count - 2] ^= 0x01
        var badFlags = ping
        badFlags[7] = 0x80
        var pingWithTrailer = ping
        pingWithTrailer[19] = 48
        let event = try! all.first { $0.name == "event" }!.frame.encoded()
        var shortTrailer = event
        shortTrailer[18] = 0
        shortTrailer[19] = 47
        var trailerBits = event
        trailerBits[trailerBits.count - 4] = 0x04  // present bit 2
        var topicPast = ping
        topicPast[16] = 0xFF
        topicPast[17] = 0xFF
        return [
            ("too-large", [0x00, 0x01, 0x11, 0x6C] + [UInt8](repeating: 0, count: 20), .frameTooLarge),
            ("too-short", [0x00, 0x00, 0x00, 0x04, 1, 8, 0, 0, 0, 0, 0, 0], .malformedFrame),
            ("bad-version", badVersion, .unsupportedVersion),
            ("unknown-type", badType, .unknownFrameType),
            ("bad-crc", badCRC, .checksumMismatch),
            ("unknown-flags", badFlags, .malformedFrame),
            ("trailer-on-ping", pingWithTrailer, .malformedFrame),
            ("event-trailer-short", shortTrailer, .malformedFrame),
            ("event-trailer-bits", recrc(trailerBits), .malformedFrame),
            ("topic-past-end", topicPast, .malformedFrame),
            ("http-garbage", Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8), .frameTooLarge),
        ]
    }
}
