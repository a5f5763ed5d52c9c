import Foundation
import LiveBusWire
import Testing

/// Frame codec: golden vectors both ways (the same file the Python client checks), split points, malformed input.
/// Source: Protocol/PROTOCOL.md §2–§3; nats-server `server/parser_test.go` (feed every split).
struct GoldenVectorTests {
    static let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().resolvingSymlinksInPath()
        .deletingLastPathComponent().deletingLastPathComponent()
    static let vectorsFile = repoRoot.appendingPathComponent("Protocol/vectors/frames.json")

    static func hex(_ b: [UInt8]) -> String { b.map { String(format: "%02x", $0) }.joined() }
    static func unhex(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = s.startIndex
        while i < s.endIndex {
            let j = s.index(i, offsetBy: 2)
            out.append(UInt8(s[i..<j], radix: 16)!)
            i = j
        }
        return out
    }

    struct FileVector: Codable {
        var name: String
        var note: String
        var type: String
        var typeByte: Int
        var flags: Int
        var sequence: UInt64
        var topic: String
        var body: String
        /// EVENT: the 48 trailer bytes in hex (PROTOCOL.md §5.1) and their fields; else absent.
        var trailer: String?
        var client: ClientInstantsBody?
        var hex: String
    }

    struct FileMalformed: Codable {
        var name: String
        var hex: String
        var error: String
        var code: Int
    }

    struct VectorFile: Codable {
        var comment: String
        var frames: [FileVector]
        var malformed: [FileMalformed]
    }

    static func current() throws -> VectorFile {
        VectorFile(
            comment:
                "Golden frames of LiveBus wire protocol v2 (Protocol/PROTOCOL.md). Regenerate with RECORD_VECTORS=1 swift test --filter GoldenVectorTests.",
            frames: try GoldenVectors.all.map { v in
                FileVector(
                    name: v.name,
                    note: v.note,
                    type: v.frame.type.description,
                    typeByte: Int(v.frame.type.rawValue),
                    flags: Int(v.frame.flags.rawValue),
                    sequence: v.frame.sequence,
                    topic: v.frame.topic,
                    body: String(decoding: v.frame.body, as: UTF8.self),
                    trailer: v.frame.trailer.map { hex($0.bytes) },
                    client: v.frame.trailer.map(ClientInstantsBody.init),
                    hex: hex(try v.frame.encoded())
                )
            },
            malformed: GoldenVectors.malformed.map {
                FileMalformed(name: $0.name, hex: hex($0.bytes), error: $0.code.name, code: Int($0.code.rawValue))
            }
        )
    }

    /// The committed vectors file equals what the codec produces (RECORD_VECTORS=1 rewrites it and fails).
    @Test func vectorsFileMatchesCodec() throws {
        let now = try Self.current()
        if ProcessInfo.processInfo.environment["RECORD_VECTORS"] != nil {
            let e = JSONEncoder()
            e.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            try FileManager.default.createDirectory(
                at: Self.vectorsFile.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            try (try e.encode(now) + Data("\n".utf8)).write(to: Self.vectorsFile)
            Issue.record("Recorded new golden vectors at \(Self.vectorsFile.path); unset RECORD_VECTORS and rerun")
            return
        }
        let committed = try JSONDecoder().decode(VectorFile.self, from: Data(contentsOf: Self.vectorsFile))
        #expect(committed.frames.map(\.name) == now.frames.map(\.name))
        for (c, n) in zip(committed.frames, now.frames) {
            #expect(c.hex == n.hex, "vector \(c.name) differs from the codec's bytes")
        }
        #expect(committed.malformed.map(\.hex) == now.malformed.map(\.hex))
    }

    /// Every golden frame decodes to exactly the frame it was made from, whole.
    @Test func decodeGoldenWhole() throws {
        let file = try JSONDecoder().decode(VectorFile.self, from: Data(contentsOf: Self.vectorsFile))
        for v in file.frames {
            var d = FrameDecoder()
            d.append(Self.unhex(v.hex))
            let f = try #require(try d.next(), "\(v.name) did not decode")
            #expect(f.type.rawValue == UInt8(v.typeByte))
            #expect(Int(f.flags.rawValue) == v.flags)
            #expect(f.sequence == v.sequence)
            #expect(f.topic == v.topic)
            #expect(String(decoding: f.body, as: UTF8.self) == v.body)
            #expect(f.trailer.map { Self.hex($0.bytes) } == v.trailer)
            #expect(f.trailer.map(ClientInstantsBody.init) == v.client)
            #expect(try d.next() == nil)
            #expect(d.bufferedByteCount == 0)
        }
    }

    /// Split at every index: the decoder returns nothing until the last byte, then exactly the frame.
    @Test func decodeGoldenAtEverySplit() throws {
        for v in GoldenVectors.all {
            let bytes = try v.frame.encoded()
            for split in 1..<bytes.count {
                var d = FrameDecoder()
                d.append(Array(bytes[..<split]))
                #expect(try d.next() == nil, "\(v.name) decoded early at split \(split)")
                d.append(Array(bytes[split...]))
                #expect(try d.next() == v.frame)
            }
        }
    }

    /// Byte by byte, and all frames back to back in one buffer.
    @Test func decodeByteByByteAndConcatenated() throws {
        var all: [UInt8] = []
        for v in GoldenVectors.all { try v.frame.encode(into: &all) }
        var d = FrameDecoder()
        var got: [Frame] = []
        for b in all {
            d.append([b])
            while let f = try d.next() { got.append(f) }
        }
        #expect(got == GoldenVectors.all.map(\.frame))
        var d2 = FrameDecoder()
        d2.append(all)
        var got2: [Frame] = []
        while let f = try d2.next() { got2.append(f) }
        #expect(got2 == got)
    }

    /// Each malformed input is rejected with its specific code.
    @Test(arguments: GoldenVectors.malformed.map(\.name))
    func malformedIsRejected(name: String) throws {
        let m = GoldenVectors.malformed.first { $0.name == name }!
        var d = FrameDecoder()
        d.append(m.bytes)
        #expect(throws: WireError.self) { _ = try d.next() }
        do {
            _ = try d.next()
        } catch {
            #expect(error.code == m.code, "\(name): got \(error.code)")
        }
    }

    /// Encoding refuses frames over the 64 KiB limit and topics over 255 bytes.
    @Test func encodeLimits() {
        #expect(throws: WireError(.frameTooLarge, "frame would be 65560 bytes; the limit is 65536")) {
            _ = try Frame(type: .publish, topic: "", body: [UInt8](repeating: 0x20, count: 65536)).encoded()
        }
        #expect(throws: WireError.self) {
            _ = try Frame(type: .publish, topic: String(repeating: "a", count: 256)).encoded()
        }
        #expect((try? Frame(type: .publish, body: [UInt8](repeating: 0x20, count: 65536 - 24)).encoded()) != nil)
    }

    /// CRC-32 matches the published check value (IEEE, "123456789" → 0xCBF43926).
    @Test func crcCheckValue() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum([UInt8]()) == 0)
    }

    /// Wire error codes equal `Protocol/errors.json`, the single source of truth.
    @Test func errorCodesMatchProtocolFile() throws {
        struct Entry: Codable {
            var code: Int
            var name: String
        }
        let url = Self.repoRoot.appendingPathComponent("Protocol/errors.json")
        let entries = try JSONDecoder().decode([String: [Entry]].self, from: Data(contentsOf: url))["errors"] ?? []
        #expect(entries.map(\.code) == WireError.Code.all.map { Int($0.rawValue) })
        #expect(entries.map(\.name) == WireError.Code.all.map(\.name))
    }
}
