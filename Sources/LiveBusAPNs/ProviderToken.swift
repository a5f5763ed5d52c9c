import COpenSSL
import Foundation
import LiveBusClock

/// The team's APNs signing key (an EC P-256 key): the `.p8` file Apple hands out (PKCS#8 PEM, "BEGIN PRIVATE
/// KEY"), or its public half ("BEGIN PUBLIC KEY"). Only verification uses it.
///
/// Source: Apple, "Establishing a token-based connection to APNs",
/// https://developer.apple.com/documentation/usernotifications/establishing-a-token-based-connection-to-apns
/// ("encrypt it using the ES256 algorithm", the key is "a text file with a .p8 file extension").
public final class ProviderKey: @unchecked Sendable {
    // @unchecked: the EVP_PKEY is never changed after init; OpenSSL allows concurrent verifications with it.
    let pkey: OpaquePointer

    /// Reads a PEM private key (`.p8`) or public key.
    /// - Throws: ``ProviderKeyError`` naming what is wrong (not PEM, not EC P-256).
    public init(pem: String) throws(ProviderKeyError) {
        let bytes = Array(pem.utf8)
        var key: OpaquePointer?
        for readPrivate in [true, false] {
            bytes.withUnsafeBufferPointer { buf in
                guard let bio = BIO_new_mem_buf(buf.baseAddress, Int32(buf.count)) else { return }
                defer { BIO_free(bio) }
                key =
                    readPrivate ? PEM_read_bio_PrivateKey(bio, nil, nil, nil) : PEM_read_bio_PUBKEY(bio, nil, nil, nil)
            }
            ERR_clear_error()
            if key != nil { break }
        }
        guard let key else {
            throw ProviderKeyError(
                "not a PEM private key (.p8, BEGIN PRIVATE KEY) or public key (BEGIN PUBLIC KEY)"
            )
        }
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC, EVP_PKEY_get_bits(key) == 256 else {
            EVP_PKEY_free(key)
            throw ProviderKeyError("the key is not an EC P-256 key; APNs provider tokens are signed with ES256")
        }
        pkey = key
    }

    deinit { EVP_PKEY_free(pkey) }

    /// Whether `signature` (JWS ES256 form: r ‖ s, 32 bytes each, RFC 7518 §3.4) signs `message` with this key
    /// (ECDSA over SHA-256).
    public func verifyES256(message: [UInt8], signature: [UInt8]) -> Bool {
        guard signature.count == 64, let sig = ECDSA_SIG_new() else { return false }
        defer { ECDSA_SIG_free(sig) }
        let r = signature[0..<32].withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        let s = signature[32..<64].withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        guard let r, let s, ECDSA_SIG_set0(sig, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return false
        }
        var der: UnsafeMutablePointer<UInt8>?
        let derLength = i2d_ECDSA_SIG(sig, &der)
        guard derLength > 0, let der else { return false }
        defer { COpenSSL_free(der) }
        guard let ctx = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestVerifyInit(ctx, nil, EVP_sha256(), nil, pkey) == 1 else {
            ERR_clear_error()
            return false
        }
        let ok = message.withUnsafeBufferPointer { m in
            EVP_DigestVerify(ctx, der, Int(derLength), m.baseAddress, m.count)
        }
        ERR_clear_error()
        return ok == 1
    }
}

/// Why a provider key could not be read.
public struct ProviderKeyError: Error, Sendable, CustomStringConvertible {
    /// What is wrong with the key.
    public var description: String
    init(_ description: String) { self.description = description }
}

/// A provider token (JWT) as APNs reads it from `authorization: bearer <token>`: its header's `alg` and `kid`,
/// its claims' `iss` (team id) and `iat` (Unix seconds), and the signed bytes.
///
/// Source: Apple, "Establishing a token-based connection to APNs" (header `alg` ES256 and `kid`; claims `iss`
/// and `iat`; "APNs rejects push notifications with an Expired Provider Token error if the token issue timestamp
/// isn't within the last hour"; "Refresh your token no more than once every 20 minutes and no less than once
/// every 60 minutes").
public struct ProviderToken: Sendable, Equatable {
    /// The header's `alg` (APNs accepts only `ES256`).
    public var algorithm: String
    /// The header's `kid`: the 10-character key id of the team's key.
    public var keyID: String
    /// The claim `iss`: the 10-character team id.
    public var issuer: String
    /// The claim `iat`: when the token was made, in seconds since the Unix epoch.
    public var issuedAtSeconds: Int64
    /// `base64url(header) "." base64url(claims)`: what the signature signs.
    public var signingInput: [UInt8]
    /// The signature, decoded (64 bytes for ES256).
    public var signature: [UInt8]

    /// Reads the value of an `authorization` header.
    /// - Throws: ``APNsRejection`` with `MissingProviderToken` (no value, or a scheme without a token) or
    ///   `InvalidProviderToken` (not `bearer`, not three base64url parts, a header or claims that are not JSON
    ///   objects with `alg`, `kid`, `iss` and an integer `iat`), naming what is missing.
    public static func parse(authorization value: String?) throws(APNsRejection) -> ProviderToken {
        guard let value, !value.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw APNsRejection(.missingProviderToken, "no authorization header: send `authorization: bearer <JWT>`")
        }
        let parts = value.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            if parts.count == 1 && parts[0].lowercased() == "bearer" {
                throw APNsRejection(.missingProviderToken, "authorization: bearer without a token")
            }
            throw APNsRejection(.invalidProviderToken, "authorization must be `bearer <JWT>`")
        }
        let jwt = parts[1].trimmingCharacters(in: .whitespaces)
        let segments = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count == 3 else {
            throw APNsRejection(
                .invalidProviderToken,
                "the provider token is not a JWT (header.claims.signature; \(segments.count) parts)"
            )
        }
        struct Header: Decodable { var alg: String?, kid: String? }
        struct Claims: Decodable {
            var iss: String?
            var iat: Int64?
        }
        guard let headerBytes = Base64URL.decode(segments[0]),
            (try? JSONSerialization.jsonObject(with: Data(headerBytes))) is [String: Any],
            let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes))
        else {
            throw APNsRejection(.invalidProviderToken, "the JWT header is not base64url JSON with string alg and kid")
        }
        guard let claimBytes = Base64URL.decode(segments[1]),
            (try? JSONSerialization.jsonObject(with: Data(claimBytes))) is [String: Any]
        else { throw APNsRejection(.invalidProviderToken, "the JWT claims are not base64url JSON") }
        guard let claims = try? JSONDecoder().decode(Claims.self, from: Data(claimBytes)) else {
            throw APNsRejection(
                .invalidProviderToken,
                "the JWT claims need a string iss (your team id) and an integer iat (Unix seconds)"
            )
        }
        guard let signature = Base64URL.decode(segments[2]), !signature.isEmpty else {
            throw APNsRejection(.invalidProviderToken, "the JWT signature is not base64url")
        }
        guard let alg = header.alg else {
            throw APNsRejection(.invalidProviderToken, "the JWT header has no alg (APNs wants ES256)")
        }
        guard let kid = header.kid, !kid.isEmpty else {
            throw APNsRejection(.invalidProviderToken, "the JWT header has no kid (your key id)")
        }
        guard let iss = claims.iss, !iss.isEmpty else {
            throw APNsRejection(.invalidProviderToken, "the JWT claims have no iss (your team id)")
        }
        guard let iat = claims.iat else {
            throw APNsRejection(.invalidProviderToken, "the JWT claims have no iat (Unix seconds)")
        }
        return ProviderToken(
            algorithm: alg,
            keyID: kid,
            issuer: iss,
            issuedAtSeconds: iat,
            signingInput: Array("\(segments[0]).\(segments[1])".utf8),
            signature: signature
        )
    }
}

/// How LiveBus checks provider tokens, and its memory of the token in use (for `TooManyProviderTokenUpdates`).
///
/// Without a key (``key`` `nil`) every well-formed token is accepted, whatever its signature, `iss`, `kid` or
/// age. With a key: `alg` must be ES256, `kid` and `iss` must match, the signature must verify, `iat` must be
/// at most 1 hour old (3 600 000 ms) and a token with a new `iat` is refused with 429
/// `TooManyProviderTokenUpdates` when the one before it was first used less than 20 minutes (1 200 000 ms)
/// ago. Apple states both numbers ("Establishing a token-based connection to APNs"). An `iat` in the future is
/// not refused: Apple states no rule for it.
public struct ProviderTokenVerifier: Sendable {
    /// The team's key, or `nil` to accept any well-formed token.
    public var key: ProviderKey?
    /// The team id `iss` must equal (when a key is set).
    public var teamID: String?
    /// The key id `kid` must equal (when a key is set).
    public var keyID: String?
    /// Longest accepted token age, in milliseconds (Apple: one hour).
    public var maximumAgeMilliseconds: Int64 = 3_600_000
    /// Shortest time between token updates, in milliseconds (Apple: 20 minutes).
    public var minimumUpdateIntervalMilliseconds: Int64 = 1_200_000
    /// The `iat` of the token in use, with when it was first accepted.
    private var current: (issuedAtSeconds: Int64, firstUsed: ServerInstant)?

    /// A verifier; `key` `nil` accepts every well-formed token.
    public init(key: ProviderKey? = nil, teamID: String? = nil, keyID: String? = nil) {
        self.key = key
        self.teamID = teamID
        self.keyID = keyID
    }

    /// Checks the `authorization` header of a request received at `now` (server clock).
    /// - Returns: the parsed token.
    /// - Throws: ``APNsRejection``: `MissingProviderToken`, `InvalidProviderToken`, `ExpiredProviderToken` or
    ///   `TooManyProviderTokenUpdates`, with what was wrong.
    public mutating func verify(authorization: String?, at now: ServerInstant) throws(APNsRejection) -> ProviderToken {
        let token = try ProviderToken.parse(authorization: authorization)
        guard let key else { return token }
        guard token.algorithm == "ES256" else {
            throw APNsRejection(.invalidProviderToken, "the JWT alg is \(token.algorithm); APNs accepts ES256 only")
        }
        if let keyID, token.keyID != keyID {
            throw APNsRejection(.invalidProviderToken, "the JWT kid \(token.keyID) is not the configured key \(keyID)")
        }
        if let teamID, token.issuer != teamID {
            throw APNsRejection(.invalidProviderToken, "the JWT iss \(token.issuer) is not the team \(teamID)")
        }
        guard key.verifyES256(message: token.signingInput, signature: token.signature) else {
            throw APNsRejection(.invalidProviderToken, "the JWT signature does not verify with the configured key")
        }
        let ageMs = now.millisecondsSinceEpoch.saturatingSubtracting(token.issuedAtSeconds.saturatingMultiplying(1000))
        if ageMs > maximumAgeMilliseconds {
            throw APNsRejection(
                .expiredProviderToken,
                "the JWT iat \(token.issuedAtSeconds) is \(ageMs / 1000) s old; APNs accepts tokens up to 1 h old: make a new one"
            )
        }
        if let c = current, c.issuedAtSeconds != token.issuedAtSeconds {
            let sinceMs = c.firstUsed.milliseconds(to: now)
            if token.issuedAtSeconds > c.issuedAtSeconds, sinceMs < minimumUpdateIntervalMilliseconds {
                throw APNsRejection(
                    .tooManyProviderTokenUpdates,
                    "a new provider token (iat \(token.issuedAtSeconds)) \(sinceMs / 1000) s after the last one (iat \(c.issuedAtSeconds)); refresh at most once every 20 minutes"
                )
            }
        }
        if current == nil || token.issuedAtSeconds > current!.issuedAtSeconds {
            current = (token.issuedAtSeconds, now)
        }
        return token
    }
}

extension Int64 {
    fileprivate func saturatingMultiplying(_ other: Int64) -> Int64 {
        let (r, overflow) = multipliedReportingOverflow(by: other)
        return overflow ? ((self < 0) != (other < 0) ? .min : .max) : r
    }
}

/// Base64url without padding (RFC 4648 §5), as JWTs use it.
public enum Base64URL {
    /// The bytes of `text`, or `nil` when it is not base64url.
    public static func decode<S: StringProtocol>(_ text: S) -> [UInt8]? {
        var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        if s.contains("=") || s.contains("\n") { return nil }
        switch s.count % 4 {
        case 2: s += "=="
        case 3: s += "="
        case 1: return nil
        default: break
        }
        return Data(base64Encoded: s).map { Array($0) }
    }

    /// `bytes` in base64url without padding.
    public static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}

/// Makes provider tokens as an APNs client library does (header `alg` ES256 + `kid`, claims `iss` + `iat`,
/// signed with the team's `.p8` key): LiveBus's own clients (`livebus push --via http2`, tests) use it.
public struct ProviderTokenSigner: Sendable {
    let key: ProviderKey
    /// The key id (`kid`).
    public var keyID: String
    /// The team id (`iss`).
    public var teamID: String

    /// A signer with the private key `pem` (a `.p8` file's text).
    /// - Throws: ``ProviderKeyError`` when it is not an EC P-256 private key.
    public init(pem: String, keyID: String, teamID: String) throws(ProviderKeyError) {
        key = try ProviderKey(pem: pem)
        self.keyID = keyID
        self.teamID = teamID
    }

    /// A token issued at `issuedAtSeconds` (Unix seconds), or `nil` when signing failed.
    public func token(issuedAtSeconds: Int64) -> String? {
        let header = Base64URL.encode(Array(#"{"alg":"ES256","kid":"\#(keyID)"}"#.utf8))
        let claims = Base64URL.encode(Array(#"{"iss":"\#(teamID)","iat":\#(issuedAtSeconds)}"#.utf8))
        let input = "\(header).\(claims)"
        guard let signature = key.signES256(Array(input.utf8)) else { return nil }
        return "\(input).\(Base64URL.encode(signature))"
    }
}

extension ProviderKey {
    /// ES256 over `message` in JWS form (r ‖ s, 32 bytes each), or `nil` (a public key cannot sign).
    func signES256(_ message: [UInt8]) -> [UInt8]? {
        guard let ctx = EVP_MD_CTX_new() else { return nil }
        defer { EVP_MD_CTX_free(ctx) }
        defer { ERR_clear_error() }
        guard EVP_DigestSignInit(ctx, nil, EVP_sha256(), nil, pkey) == 1 else { return nil }
        var length = 0
        guard EVP_DigestSign(ctx, nil, &length, message, message.count) == 1 else { return nil }
        var der = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(ctx, &der, &length, message, message.count) == 1 else { return nil }
        let sig: OpaquePointer? = der.withUnsafeBufferPointer { b in
            var p: UnsafePointer<UInt8>? = b.baseAddress
            return d2i_ECDSA_SIG(nil, &p, length)
        }
        guard let sig else { return nil }
        defer { ECDSA_SIG_free(sig) }
        var r: OpaquePointer?
        var s: OpaquePointer?
        ECDSA_SIG_get0(sig, &r, &s)
        var out = [UInt8](repeating: 0, count: 64)
        let ok = out.withUnsafeMutableBufferPointer { b in
            BN_bn2binpad(r, b.baseAddress, 32) == 32 && BN_bn2binpad(s, b.baseAddress! + 32, 32) == 32
        }
        return ok ? out : nil
    }
}
