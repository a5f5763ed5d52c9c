import COpenSSL
import Foundation
import LiveBusAPNs
import LiveBusClock

/// 2026-01-01T00:00:00Z, the instant the tests run at (server clock).
let t0 = ServerInstant(millisecondsSinceEpoch: 1_767_225_600_000)

/// `t0` plus `seconds`.
func at(_ seconds: Int64) -> ServerInstant { t0.advanced(byMilliseconds: seconds * 1000) }

let token = String(repeating: "ab", count: 32)
let otherToken = String(repeating: "cd", count: 32)
let bundle = "com.example.delivery"
let laTopic = bundle + ".push-type.liveactivity"
let update = #"{"aps":{"timestamp":1767225600,"event":"update","content-state":{"status":"cooking"}}}"#

/// A P-256 key made in the test with OpenSSL, and an ES256 signer that does not use LiveBus's code.
final class TestKey {
    let pkey: OpaquePointer

    init() { pkey = COpenSSL_generateP256()! }
    deinit { EVP_PKEY_free(pkey) }

    /// The private key as a `.p8` file holds it (PKCS#8 PEM).
    var privatePEM: String {
        let bio = BIO_new(BIO_s_mem())!
        defer { BIO_free(bio) }
        precondition(PEM_write_bio_PrivateKey(bio, pkey, nil, nil, 0, nil, nil) == 1)
        return Self.text(bio)
    }

    /// The public key (SubjectPublicKeyInfo PEM).
    var publicPEM: String {
        let bio = BIO_new(BIO_s_mem())!
        defer { BIO_free(bio) }
        precondition(PEM_write_bio_PUBKEY(bio, pkey) == 1)
        return Self.text(bio)
    }

    static func text(_ bio: OpaquePointer) -> String {
        var p: UnsafeMutablePointer<CChar>?
        let n = COpenSSL_memData(bio, &p)
        return String(decoding: UnsafeRawBufferPointer(start: p, count: n), as: UTF8.self)
    }

    /// ES256 over `message`: r ‖ s, 32 bytes each.
    func sign(_ message: [UInt8]) -> [UInt8] {
        let ctx = EVP_MD_CTX_new()!
        defer { EVP_MD_CTX_free(ctx) }
        precondition(EVP_DigestSignInit(ctx, nil, EVP_sha256(), nil, pkey) == 1)
        var length = 0
        precondition(EVP_DigestSign(ctx, nil, &length, message, message.count) == 1)
        var der = [UInt8](repeating: 0, count: length)
        precondition(EVP_DigestSign(ctx, &der, &length, message, message.count) == 1)
        var p: UnsafePointer<UInt8>? = der.withUnsafeBufferPointer { $0.baseAddress }
        // d2i reads from the array's storage, which lives as long as `der`.
        let sig = withExtendedLifetime(der) { d2i_ECDSA_SIG(nil, &p, length)! }
        defer { ECDSA_SIG_free(sig) }
        var r: OpaquePointer?
        var s: OpaquePointer?
        ECDSA_SIG_get0(sig, &r, &s)
        var out = [UInt8](repeating: 0, count: 64)
        out.withUnsafeMutableBufferPointer { b in
            _ = BN_bn2binpad(r, b.baseAddress, 32)
            _ = BN_bn2binpad(s, b.baseAddress! + 32, 32)
        }
        return out
    }

    /// A provider token: header `{"alg", "kid"}`, claims `{"iss", "iat"}`, signed with this key.
    func jwt(kid: String = "KEY1234567", iss: String = "TEAM123456", iat: Int64, alg: String = "ES256") -> String {
        let header = Base64URL.encode(Array(#"{"alg":"\#(alg)","kid":"\#(kid)"}"#.utf8))
        let claims = Base64URL.encode(Array(#"{"iss":"\#(iss)","iat":\#(iat)}"#.utf8))
        let input = "\(header).\(claims)"
        return "\(input).\(Base64URL.encode(sign(Array(input.utf8))))"
    }
}

/// A well-formed token with a signature nobody made (accepted only when no key is configured).
func unsignedJWT(iat: Int64 = 1_767_225_600) -> String {
    let header = Base64URL.encode(Array(#"{"alg":"ES256","kid":"KEY1234567"}"#.utf8))
    let claims = Base64URL.encode(Array(#"{"iss":"TEAM123456","iat":\#(iat)}"#.utf8))
    return "\(header).\(claims).\(Base64URL.encode([UInt8](repeating: 7, count: 64)))"
}

/// A Live Activity update request to `token`, with `headers` replacing or adding to the defaults (a `nil` value
/// removes a default).
func request(
    method: String = "POST",
    path: String = "/3/device/\(token)",
    _ headers: [String: String?] = [:],
    body: String = update,
    bodyLength: Int? = nil,
    authorization: String? = "bearer " + unsignedJWT()
) -> APNsRequest {
    var h: [(name: String, value: String)] = [
        ("apns-push-type", "liveactivity"), ("apns-topic", laTopic), ("apns-priority", "10"),
    ]
    if let authorization { h.append(("authorization", authorization)) }
    for (k, v) in headers.sorted(by: { $0.key < $1.key }) {
        h.removeAll { $0.name == k }
        if let v { h.append((k, v)) }
    }
    return APNsRequest(method: method, path: path, headers: h, body: Array(body.utf8), bodyLength: bodyLength)
}

/// Validates `r` at `now` with a directory where `token` is active for `bundle`.
func judge(
    _ r: APNsRequest,
    validator: inout APNsValidator,
    at now: ServerInstant = t0,
    directory: [String: APNsTokenStatus] = [token: .active(bundleID: bundle)]
) -> APNsVerdict {
    validator.validate(r, at: now, newID: { "00000000-0000-4000-8000-000000000001" }) { directory[$0] ?? .unknown }
}

/// The reason `r` is refused with (or `nil` when accepted), with the default validator.
func reason(_ r: APNsRequest, directory: [String: APNsTokenStatus] = [token: .active(bundleID: bundle)]) -> APNsReason?
{
    var v = APNsValidator()
    if case .failure(let e) = judge(r, validator: &v, directory: directory).result { return e.reason }
    return nil
}
