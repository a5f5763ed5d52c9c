import Foundation
import LiveBusCore
import LiveBusWire
import Testing

@testable import LiveBusDaemon

/// A PUBLISH whose topic ``Topic/validate(_:)`` refuses is refused alone, as a bad body is: a non-fatal ERROR
/// `invalidTopic` with its request id (and its topic when a frame can carry it), the connection kept, nothing stored
/// (fresh-user review 2026-12-03: `orders/a\u{0}b` was ACKed and stored cut at the NUL, so the next start refused the
/// data directory as damaged; a bad topic closed the publisher's connection). PROTOCOL.md §3, §5.1, §6.
@Suite struct EmbeddedPublishTopicTests {
    static let good = "orders/P1"

    /// A PUBLISH frame with any topic bytes, even more than a frame's topic may hold (``Frame`` refuses to encode
    /// those), as a careless client could write it.
    static func rawPublish(topic: [UInt8], id: UInt64, body: [UInt8]) -> [UInt8] {
        var header = [UInt8](repeating: 0, count: Frame.headerSize)
        let length = UInt32(Frame.headerSize - 4 + topic.count + body.count)
        withUnsafeBytes(of: length.bigEndian) { header.replaceSubrange(0..<4, with: $0) }
        header[4] = Frame.version
        header[5] = FrameType.publish.rawValue
        withUnsafeBytes(of: id.bigEndian) { header.replaceSubrange(8..<16, with: $0) }
        withUnsafeBytes(of: UInt16(topic.count).bigEndian) { header.replaceSubrange(16..<18, with: $0) }
        let crc = CRC32.checksum(Array(header[4..<20]) + topic + body)
        withUnsafeBytes(of: crc.bigEndian) { header.replaceSubrange(20..<24, with: $0) }
        return header + topic + body
    }

    /// Each kind of bad topic, pipelined with a good PUBLISH behind it on the same connection: ERROR (non-fatal,
    /// `invalidTopic`, the PUBLISH's id, its message naming the problem), then ACK; only the good ones are stored.
    @Test func aBadTopicIsRefusedAloneAndTheNextPublishIsAcknowledged() throws {
        let (bus, log) = try embeddedDaemon()
        let publisher = bus.connect()
        try publisher.attach(helloFrame(role: .publisher, name: "pub", device: nil))
        let body = try EventJSON.encode(eventBody())
        let cases: [(String, [UInt8], String)] = [
            ("NUL", Array("orders/a\u{0}b".utf8), "the control character U+0000 at byte 8"),
            ("U+0001", Array("orders/a\u{1}b".utf8), "the control character U+0001 at byte 8"),
            ("ESC", Array("orders/\u{1B}[31m".utf8), "the control character U+001B at byte 7"),
            ("DEL", Array("orders/a\u{7F}".utf8), "the control character U+007F at byte 8"),
            ("NBSP", Array("orders/a\u{A0}b".utf8), "whitespace U+00A0 at byte 8"),
            ("U+2028", Array("orders/a\u{2028}b".utf8), "whitespace U+2028 at byte 8"),
            ("a wildcard", Array("orders/*".utf8), "contains a wildcard"),
            ("an empty segment", Array("orders//a".utf8), "has an empty segment"),
            ("empty", [], "topic is empty"),
            (
                "300 bytes", Array(("orders/" + String(repeating: "x", count: 293)).utf8),
                "topic is 300 bytes; at most 255"
            ),
        ]
        var id: UInt64 = 0
        for (what, topic, words) in cases {
            id += 1
            publisher.writeInbound(Self.rawPublish(topic: topic, id: id, body: body))
            try publisher.writeInbound(publishFrame(topic: Self.good, id: id + 100))
            let frames = try publisher.readOutboundFrames()
            #expect(frames.types == [.error, .ack], "\(what): \(frames.types)")
            let error = try #require(frames.first, "\(what)")
            #expect(error.sequence == id, "\(what): the ERROR carries the PUBLISH's request id")
            // Its topic, as the ACK would; one longer than a frame's topic may be is left out (empty).
            let echoed = topic.count <= Frame.maximumTopicLength ? String(decoding: topic, as: UTF8.self) : ""
            #expect(error.topic == echoed, "\(what): \(error.topic.utf8.count) bytes")
            let e = try #require(frames.errors.first, "\(what)")
            #expect(e.name == "invalidTopic" && !e.fatal, "\(what): \(e)")
            #expect(e.message.contains(words), "\(what): \(e.message)")
            #expect(frames.last?.sequence == id + 100, "\(what): the good PUBLISH after it is acknowledged")
            #expect(!publisher.isClosed, "\(what): the connection stays open")
        }
        #expect(bus.engine.store.topics == [Self.good], "only the good topic is stored")
        #expect(bus.engine.store.latest(topic: Self.good)?.sequence == UInt64(cases.count))
        // The log names the refusal, with the topic escaped rather than its raw control characters.
        #expect(!log.lines("publish refused", "code=invalidTopic", #"topic="orders/a\0b""#).isEmpty)
        #expect(log.lines("\u{0}").isEmpty && log.lines("\u{1B}").isEmpty, "no raw control character in the log")
    }

    /// With a data directory: a PUBLISH to `orders/a\u{0}b` is refused with `invalidTopic`, nothing of it is stored,
    /// and the directory opens again at the next start with the good event in it (before: ACKed, then "damaged").
    @Test func aNULTopicIsNotStoredAndTheDataDirectoryReopens() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("livebus-nul-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        var o = DaemonOptions.embedded()
        o.dataDirectory = dir.path
        do {
            let bus = try EmbeddedDaemon(options: o)
            let publisher = bus.connect()
            try publisher.attach(helloFrame(role: .publisher, name: "pub", device: nil))
            try publisher.writeInbound([
                publishFrame(topic: "orders/a\u{0}b", id: 1), publishFrame(topic: "orders/a", id: 2),
            ])
            let frames = try publisher.readOutboundFrames()
            #expect(frames.types == [.error, .ack], "\(frames.types)")
            #expect(frames.errors.first.map { $0.name == "invalidTopic" && !$0.fatal } == true, "\(frames.errors)")
            #expect(bus.engine.store.topics == ["orders/a"])
            bus.engine.shutdown(reason: "test")
        }
        let again = try EmbeddedDaemon(options: o)
        #expect(again.engine.store.topics == ["orders/a"])
        #expect(again.engine.store.latest(topic: "orders/a")?.sequence == 1)
        again.engine.shutdown(reason: "test")
    }
}
