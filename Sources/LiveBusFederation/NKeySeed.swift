import COpenSSL
import Foundation

/// A NATS user nkey seed (`SU…`, as `nk -gen user` writes it), read and checked before libnats gets its file:
/// `livebusd --federate-nkey FILE` (issue 19, "credentials or an nkey file").
///
/// libnats 3.4.1's `natsOptions_SetNKeyFromSeed(opts, publicKey, seedFile)` needs the user's public key beside the
/// seed file (it sends it in CONNECT and signs the server's nonce with the seed); the public key is derived here
/// from the seed, as the NATS tools do.
///
/// Format (the nkeys encoding of nats-io/nkeys, used by every NATS client and server): base32 (RFC 4648
/// alphabet, no padding) of 2 prefix bytes (seed `S` and key type `U`, packed in 5 + 5 bits), the 32-byte Ed25519
/// seed, and a CRC-16/XMODEM of those bytes, little-endian: 58 characters. A public user key is the base32 of the
/// prefix byte `U` (20 << 3), the 32-byte Ed25519 public key and the CRC: 56 characters, `U…`. The Ed25519 public
/// key comes from OpenSSL (`EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, …)`, RFC 8032 §5.1.5).
public struct NKeyUserSeed: Sendable, Equatable {
    /// The seed as written (`SU…`, 58 characters).
    public let seed: String
    /// The user's public key (`U…`, 56 characters), the one a server lists in `authorization { users: [{ nkey }] }`.
    public let publicKey: String

    /// Prefix byte of a seed (`S`), nkeys' `PrefixByteSeed`.
    static let seedPrefix: UInt8 = 18 << 3
    /// Prefix byte of a user key (`U`), nkeys' `PrefixByteUser`.
    static let userPrefix: UInt8 = 20 << 3
    /// The other key types' prefix bytes, to say which kind of seed was given instead.
    static let typeNames: [UInt8: String] = [
        0: "an account", 14 << 3: "an operator", 13 << 3: "a server", 2 << 3: "a cluster", 23 << 3: "a curve (xkey)",
    ]
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    /// Checks `seed` and derives its public key.
    /// - Parameter seed: A user seed, `SU…` (58 base32 characters), surrounding white space ignored.
    /// - Throws: ``FederationError`` saying what is wrong with it (length, a character that is not base32, a
    ///   checksum that does not match, another kind of seed than a user's).
    public init(_ seed: String) throws(FederationError) {
        let text = seed.trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.utf8.count == 58 else {
            throw FederationError(
                "the seed has \(text.utf8.count) characters; a user nkey seed has 58 (SU…, as `nk -gen user` writes it)"
            )
        }
        let raw = try Self.base32Decode(text)
        guard raw.count == 36 else {
            throw FederationError("the seed decodes to \(raw.count) bytes, not 36")
        }
        let body = Array(raw[0..<34])
        let crc = UInt16(raw[34]) | UInt16(raw[35]) << 8
        guard Self.crc16(body) == crc else {
            throw FederationError("the seed's checksum does not match: it is damaged or mistyped; copy it again")
        }
        guard body[0] & 0xF8 == Self.seedPrefix else {
            throw FederationError(
                "it is not a seed (it starts with \(text.prefix(1)), a seed with S); a public key cannot sign in"
            )
        }
        let type = (body[0] & 0x07) << 5 | (body[1] & 0xF8) >> 3
        guard type == Self.userPrefix else {
            throw FederationError(
                "it is \(Self.typeNames[type] ?? "an unknown kind of") seed (S\(text.dropFirst().prefix(1))…), not a user's (SU…): give the seed of the user the server lists"
            )
        }
        let pub = try Self.ed25519PublicKey(seed: Array(body[2..<34]))
        var key = [Self.userPrefix] + pub
        let keyCRC = Self.crc16(key)
        key += [UInt8(keyCRC & 0xFF), UInt8(keyCRC >> 8)]
        self.seed = text
        publicKey = Self.base32Encode(key)
    }

    /// Reads the seed from a file the way libnats does (`natsOptions_SetNKeyFromSeed`): the line inside the second
    /// `-----BEGIN … -----` block of a decorated file (a `.creds` or `nsc` file), else the first line whose first
    /// non-blank characters are `SU`.
    /// - Parameter path: The file (flag `--federate-nkey`).
    /// - Returns: The seed and its public key.
    /// - Throws: ``FederationError`` naming the file, what is wrong and what to give instead.
    public static func read(file path: String) throws(FederationError) -> NKeyUserSeed {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw FederationError(
                "--federate-nkey \(path): no readable file there; give the file of a user nkey seed (SU…)"
            )
        }
        let text = String(decoding: data, as: UTF8.self)
        guard let line = seedLine(text) else {
            throw FederationError(
                "--federate-nkey \(path): no user nkey seed in the file (a line SU…, as `nk -gen user` writes it)"
            )
        }
        do {
            return try NKeyUserSeed(line)
        } catch {
            throw FederationError("--federate-nkey \(path): \(error.message)")
        }
    }

    /// The seed line of a seed file's text, found as libnats finds it, or `nil`.
    static func seedLine(_ text: String) -> String? {
        let lines = text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }).map(String.init)
        // Decorated: "-----BEGIN …-----", the value, "------END …------"; the seed is the second block.
        let isHeader = { (l: String) in l.hasPrefix("---") && l.hasSuffix("---") }
        var blocks: [String] = []
        var i = 0
        while i + 2 < lines.count {
            if isHeader(lines[i]), !isHeader(lines[i + 1]), isHeader(lines[i + 2]) {
                blocks.append(lines[i + 1])
                i += 3
            } else {
                i += 1
            }
        }
        if blocks.count >= 2 { return blocks[1].trimmingCharacters(in: .whitespaces) }
        return lines.lazy.map { $0.trimmingCharacters(in: .whitespaces) }.first { $0.hasPrefix("SU") }
    }

    /// A user seed (`SU…`) for the 32-byte Ed25519 seed `raw` (what `nk -gen user` writes, for random bytes).
    /// - Parameter raw: 32 bytes.
    /// - Returns: The 58-character seed.
    public static func encode(rawSeed raw: [UInt8]) -> String {
        precondition(raw.count == 32, "an Ed25519 seed has 32 bytes")
        var body = [seedPrefix | userPrefix >> 5, (userPrefix & 0x1F) << 3] + raw
        let crc = crc16(body)
        body += [UInt8(crc & 0xFF), UInt8(crc >> 8)]
        return base32Encode(body)
    }

    /// CRC-16/XMODEM (polynomial 0x1021, initial 0), nkeys' checksum.
    static func crc16(_ bytes: [UInt8]) -> UInt16 {
        var crc: UInt16 = 0
        for b in bytes {
            crc ^= UInt16(b) << 8
            for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
        }
        return crc
    }

    static func base32Encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for b in bytes {
            buffer = buffer << 8 | UInt32(b)
            bits += 8
            while bits >= 5 {
                out.append(alphabet[Int((buffer >> UInt32(bits - 5)) & 0x1F)])
                bits -= 5
            }
        }
        if bits > 0 { out.append(alphabet[Int((buffer << UInt32(5 - bits)) & 0x1F)]) }
        return String(decoding: out, as: UTF8.self)
    }

    static func base32Decode(_ text: String) throws(FederationError) -> [UInt8] {
        var out: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for (column, c) in text.utf8.enumerated() {
            guard let v = alphabet.firstIndex(of: c) else {
                let shown =
                    c >= 0x21 && c < 0x7F ? "'\(Character(Unicode.Scalar(c)))'" : String(format: "byte 0x%02X", c)
                throw FederationError(
                    "character \(column + 1) of the seed, \(shown), is not base32 (A–Z, 2–7): the file holds something else"
                )
            }
            buffer = buffer << 5 | UInt32(v)
            bits += 5
            if bits >= 8 {
                out.append(UInt8((buffer >> UInt32(bits - 8)) & 0xFF))
                bits -= 8
            }
        }
        return out
    }

    /// The Ed25519 public key of a 32-byte seed (RFC 8032 §5.1.5), by OpenSSL.
    static func ed25519PublicKey(seed: [UInt8]) throws(FederationError) -> [UInt8] {
        guard let key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, seed, seed.count) else {
            throw FederationError("OpenSSL cannot make an Ed25519 key of the seed")
        }
        defer { EVP_PKEY_free(key) }
        var pub = [UInt8](repeating: 0, count: 32)
        var len = pub.count
        guard EVP_PKEY_get_raw_public_key(key, &pub, &len) == 1, len == 32 else {
            throw FederationError("OpenSSL cannot derive the Ed25519 public key of the seed")
        }
        return pub
    }
}
