import Foundation
import Testing

@testable import LiveBusFederation

/// The nkey seed reader of `livebusd --federate-nkey` (``NKeyUserSeed``). The server-side check (a real nats-server
/// accepting the derived public key) is FederationE2ETests' `nkeyUserSignsInAndAWrongSeedIsRefused`.
struct NKeySeedTests {
    /// The user seed and public key of the NATS documentation's nkey example (docs.nats.io, nkey authentication;
    /// also the vector of the nats clients' tests).
    static let docSeed = "SUACSSL3UAHUDXKFSNVUZRF5UHPMWZ6BFDTJ7M6USDXIEDNPPQYYYCU3VY"
    static let docPublic = "UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4"

    @Test func theDocumentedSeedGivesTheDocumentedPublicKey() throws {
        let s = try NKeyUserSeed(Self.docSeed + "\n")
        #expect(s.publicKey == Self.docPublic)
        #expect(s.seed == Self.docSeed)
    }

    @Test func anEncodedSeedDecodesToItsBytesAndBack() throws {
        let raw = try NKeyUserSeed.base32Decode(Self.docSeed)
        #expect(NKeyUserSeed.encode(rawSeed: Array(raw[2..<34])) == Self.docSeed)
        var g = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &g) }
        let seed = NKeyUserSeed.encode(rawSeed: bytes)
        #expect(seed.hasPrefix("SU") && seed.count == 58)
        let k = try NKeyUserSeed(seed)
        #expect(k.publicKey.hasPrefix("U") && k.publicKey.count == 56)
        #expect(Array(try NKeyUserSeed.base32Decode(seed)[2..<34]) == bytes)
    }

    @Test func aDamagedSeedIsRefusedWithWhatIsWrong() {
        func message(_ seed: String) -> String {
            do {
                _ = try NKeyUserSeed(seed)
                return "accepted"
            } catch { return error.message }
        }
        // One character changed: the checksum catches it.
        var chars = Array(Self.docSeed)
        chars[20] = chars[20] == "A" ? "B" : "A"
        #expect(message(String(chars)).contains("checksum does not match"))
        #expect(message(String(Self.docSeed.dropLast())).contains("has 57 characters"))
        #expect(message(Self.docPublic).contains("has 56 characters"))
        let lower = Self.docSeed.prefix(10) + "1" + Self.docSeed.dropFirst(11)
        #expect(message(String(lower)).contains("character 11 of the seed, '1', is not base32"))
        // An account seed (SA…): right checksum, wrong kind.
        var body = [NKeyUserSeed.seedPrefix | 0 >> 5, 0] + [UInt8](repeating: 7, count: 32)
        let crc = NKeyUserSeed.crc16(body)
        body += [UInt8(crc & 0xFF), UInt8(crc >> 8)]
        let account = NKeyUserSeed.base32Encode(body)
        #expect(account.hasPrefix("SA"))
        #expect(message(account).contains("an account seed (SA…), not a user's"))
    }

    @Test func theSeedLineIsFoundAsLibnatsFindsIt() throws {
        #expect(NKeyUserSeed.seedLine("\n  \(Self.docSeed)\n") == Self.docSeed)
        #expect(NKeyUserSeed.seedLine("# my user\nUDXU\n\(Self.docSeed)\n") == Self.docSeed)
        let creds = """
            -----BEGIN NATS USER JWT-----
            eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.e30.sig
            ------END NATS USER JWT------

            ************************* IMPORTANT *************************
            NKEY Seed printed below can be used to sign and prove identity.

            -----BEGIN USER NKEY SEED-----
            \(Self.docSeed)
            ------END USER NKEY SEED------
            """
        #expect(NKeyUserSeed.seedLine(creds) == Self.docSeed)
        #expect(NKeyUserSeed.seedLine("not a seed\n") == nil)
    }

    @Test func aFileIsNamedInEveryRefusal() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("lb-nkey-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        func message(_ path: String) -> String {
            do {
                _ = try NKeyUserSeed.read(file: path)
                return "accepted"
            } catch { return error.message }
        }
        #expect(message(dir + "/missing.nk").hasPrefix("--federate-nkey \(dir)/missing.nk: no readable file there"))
        try "hello\n".write(toFile: dir + "/empty.nk", atomically: true, encoding: .utf8)
        #expect(message(dir + "/empty.nk").hasPrefix("--federate-nkey \(dir)/empty.nk: no user nkey seed in the file"))
        try (String(Self.docSeed.dropLast(2)) + "AA\n").write(
            toFile: dir + "/bad.nk",
            atomically: true,
            encoding: .utf8
        )
        #expect(message(dir + "/bad.nk").hasPrefix("--federate-nkey \(dir)/bad.nk: the seed's checksum does not match"))
        try (Self.docSeed + "\n").write(toFile: dir + "/good.nk", atomically: true, encoding: .utf8)
        #expect(try NKeyUserSeed.read(file: dir + "/good.nk").publicKey == Self.docPublic)
    }
}
