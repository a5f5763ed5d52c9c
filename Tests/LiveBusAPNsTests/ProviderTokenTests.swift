import COpenSSL
import Foundation
import LiveBusAPNs
import Testing

/// Provider tokens (JWT, ES256) signed in the test with OpenSSL, checked as APNs checks them.
struct ProviderTokenTests {
    /// RFC 7515 Appendix A.3: an ES256 JWS and its public key (x, y), an outside vector for the signature check.
    @Test func rfc7515ES256Vector() throws {
        let x = Base64URL.decode("f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU")!
        let y = Base64URL.decode("x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0")!
        // SubjectPublicKeyInfo for id-ecPublicKey / prime256v1 with an uncompressed point.
        let prefix: [UInt8] = [
            0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86,
            0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00, 0x04,
        ]
        let der = prefix + x + y
        let pem =
            "-----BEGIN PUBLIC KEY-----\n\(Data(der).base64EncodedString(options: .lineLength64Characters))\n-----END PUBLIC KEY-----\n"
        let key = try ProviderKey(pem: pem)
        let input = Array(
            "eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"
                .utf8
        )
        var sig = Base64URL.decode(
            "DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q"
        )!
        #expect(key.verifyES256(message: input, signature: sig))
        sig[10] ^= 1
        #expect(!key.verifyES256(message: input, signature: sig))
    }

    @Test func keysAreReadFromP8AndPublicPEM() throws {
        let k = TestKey()
        let message = Array("hello".utf8)
        let signature = k.sign(message)
        #expect(try ProviderKey(pem: k.privatePEM).verifyES256(message: message, signature: signature))
        #expect(try ProviderKey(pem: k.publicPEM).verifyES256(message: message, signature: signature))
        #expect(throws: ProviderKeyError.self) { try ProviderKey(pem: "not a key") }
    }

    @Test func aNonP256KeyIsRefused() throws {
        let rsa = COpenSSL_generate("ED25519")!
        defer { EVP_PKEY_free(rsa) }
        let bio = BIO_new(BIO_s_mem())!
        defer { BIO_free(bio) }
        #expect(PEM_write_bio_PUBKEY(bio, rsa) == 1)
        #expect(throws: ProviderKeyError.self) { try ProviderKey(pem: TestKey.text(bio)) }
    }

    func verifier(_ k: TestKey) throws -> ProviderTokenVerifier {
        ProviderTokenVerifier(key: try ProviderKey(pem: k.privatePEM), teamID: "TEAM123456", keyID: "KEY1234567")
    }

    func reasonFor(_ authorization: String?, _ v: inout ProviderTokenVerifier, at now: Int64 = 0) -> APNsReason? {
        do {
            _ = try v.verify(authorization: authorization, at: at(now))
            return nil
        } catch { return error.reason }
    }

    @Test func aSignedTokenIsAccepted() throws {
        let k = TestKey()
        var v = try verifier(k)
        #expect(reasonFor("bearer " + k.jwt(iat: at(-10).millisecondsSinceEpoch / 1000), &v) == nil)
        // the scheme is case-insensitive, as HTTP's
        #expect(reasonFor("Bearer " + k.jwt(iat: at(-10).millisecondsSinceEpoch / 1000), &v) == nil)
    }

    @Test func missingAndMalformedTokens() throws {
        let k = TestKey()
        var v = try verifier(k)
        #expect(reasonFor(nil, &v) == .missingProviderToken)
        #expect(reasonFor("", &v) == .missingProviderToken)
        #expect(reasonFor("bearer", &v) == .missingProviderToken)
        #expect(reasonFor("basic dXNlcjpwYXNz", &v) == .invalidProviderToken)
        #expect(reasonFor("bearer a.b", &v) == .invalidProviderToken)
        #expect(reasonFor("bearer !!.??.**", &v) == .invalidProviderToken)
        let noIat = Base64URL.encode(Array(#"{"iss":"TEAM123456"}"#.utf8))
        let header = Base64URL.encode(Array(#"{"alg":"ES256","kid":"KEY1234567"}"#.utf8))
        #expect(reasonFor("bearer \(header).\(noIat).AAAA", &v) == .invalidProviderToken)
        let boolIat = Base64URL.encode(Array(#"{"iss":"TEAM123456","iat":true}"#.utf8))
        #expect(reasonFor("bearer \(header).\(boolIat).AAAA", &v) == .invalidProviderToken)
    }

    @Test func forgedWrongKeyWrongTeamWrongAlg() throws {
        let k = TestKey()
        var v = try verifier(k)
        let iat = t0.millisecondsSinceEpoch / 1000
        #expect(reasonFor("bearer " + TestKey().jwt(iat: iat), &v) == .invalidProviderToken)  // another key
        #expect(reasonFor("bearer " + k.jwt(kid: "OTHERKEY00", iat: iat), &v) == .invalidProviderToken)
        #expect(reasonFor("bearer " + k.jwt(iss: "OTHERTEAM0", iat: iat), &v) == .invalidProviderToken)
        #expect(reasonFor("bearer " + k.jwt(iat: iat, alg: "HS256"), &v) == .invalidProviderToken)
        #expect(reasonFor("bearer " + unsignedJWT(iat: iat), &v) == .invalidProviderToken)
        // claims changed after signing
        let parts = k.jwt(iat: iat).split(separator: ".")
        let forged = Base64URL.encode(Array(#"{"iss":"TEAM123456","iat":\#(iat + 1)}"#.utf8))
        #expect(reasonFor("bearer \(parts[0]).\(forged).\(parts[2])", &v) == .invalidProviderToken)
    }

    /// `iat` at most one hour old: 3600 s passes, 3601 s is ExpiredProviderToken.
    @Test func expiredAfterOneHour() throws {
        let k = TestKey()
        let iat = t0.millisecondsSinceEpoch / 1000
        var v = try verifier(k)
        #expect(reasonFor("bearer " + k.jwt(iat: iat), &v, at: 3600) == nil)
        var w = try verifier(k)
        #expect(reasonFor("bearer " + k.jwt(iat: iat), &w, at: 3601) == .expiredProviderToken)
    }

    /// A new token less than 20 minutes after the last is 429 TooManyProviderTokenUpdates; after 20 it is taken.
    @Test func tooManyProviderTokenUpdates() throws {
        let k = TestKey()
        let iat = t0.millisecondsSinceEpoch / 1000
        var v = try verifier(k)
        #expect(reasonFor("bearer " + k.jwt(iat: iat), &v, at: 0) == nil)
        #expect(reasonFor("bearer " + k.jwt(iat: iat), &v, at: 60) == nil)  // same iat, new signature: same token
        #expect(reasonFor("bearer " + k.jwt(iat: iat + 600), &v, at: 600) == .tooManyProviderTokenUpdates)
        #expect(reasonFor("bearer " + k.jwt(iat: iat + 1200), &v, at: 1200) == nil)
        #expect(reasonFor("bearer " + k.jwt(iat: iat), &v, at: 1210) == nil)  // the older one is still good
    }

    /// Without a key any well-formed token passes, whatever signs it and however old.
    @Test func withoutAKeyAnyWellFormedTokenIsAccepted() {
        var v = ProviderTokenVerifier()
        #expect(reasonFor("bearer " + unsignedJWT(iat: 0), &v) == nil)
        #expect(reasonFor("bearer " + TestKey().jwt(kid: "X", iss: "Y", iat: 5), &v) == nil)
        #expect(reasonFor("bearer nope", &v) == .invalidProviderToken)
        #expect(reasonFor(nil, &v) == .missingProviderToken)
    }

    @Test func theValidatorUsesTheVerifier() throws {
        let k = TestKey()
        var validator = APNsValidator(verifier: try verifier(k))
        let iat = t0.millisecondsSinceEpoch / 1000
        let ok = judge(request(authorization: "bearer " + k.jwt(iat: iat)), validator: &validator)
        #expect((try? ok.result.get()) != nil)
        let expired = judge(request(authorization: "bearer " + k.jwt(iat: iat - 4000)), validator: &validator)
        if case .failure(let e) = expired.result {
            #expect(e.reason == .expiredProviderToken)
        } else {
            Issue.record("expected ExpiredProviderToken")
        }
    }
}

/// LiveBus's own signer makes tokens the test's OpenSSL-checked verifier accepts, and a public key cannot sign.
struct ProviderTokenSignerTests {
    @Test func signedTokensVerify() throws {
        let k = TestKey()
        let signer = try ProviderTokenSigner(pem: k.privatePEM, keyID: "KEY1234567", teamID: "TEAM123456")
        let jwt = try #require(signer.token(issuedAtSeconds: t0.millisecondsSinceEpoch / 1000))
        var v = ProviderTokenVerifier(key: try ProviderKey(pem: k.publicPEM), teamID: "TEAM123456", keyID: "KEY1234567")
        let token = try v.verify(authorization: "bearer " + jwt, at: t0)
        #expect(token.issuedAtSeconds == t0.millisecondsSinceEpoch / 1000)
        let publicOnly = try ProviderTokenSigner(pem: k.publicPEM, keyID: "K", teamID: "T")
        #expect(publicOnly.token(issuedAtSeconds: 0) == nil)
    }
}
