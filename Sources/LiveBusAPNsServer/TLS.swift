import COpenSSL
import Foundation

/// The TLS side of the APNs endpoint: an OpenSSL `SSL_CTX` with the server certificate and ALPN `h2` required
/// (APNs: "HTTP/2 and TLS 1.2 or later", Sending requests).
public final class TLSServerContext {
    let ctx: OpaquePointer

    /// A context serving `identity`'s certificate and key, TLS 1.2 or later, ALPN `h2` only.
    /// - Throws: ``CertificateError`` when OpenSSL refuses the certificate or key.
    public init(identity: ServerIdentity) throws(CertificateError) {
        guard let c = SSL_CTX_new(TLS_server_method()) else { throw CertificateError("SSL_CTX_new failed") }
        ctx = c
        _ = COpenSSL_setMinTLS12(c)
        guard SSL_CTX_use_certificate(c, identity.certificate.x509) == 1,
            SSL_CTX_use_PrivateKey(c, identity.key.pkey) == 1, SSL_CTX_check_private_key(c) == 1
        else {
            throw CertificateError("OpenSSL refused the server certificate or key: \(opensslError())")
        }
        COpenSSL_requireH2(c)
    }

    deinit { SSL_CTX_free(ctx) }
}

/// One TLS server connection over memory BIOs: the network bytes go in and out through ``receive(_:)`` /
/// ``takeNetworkOutput()``, plaintext through the results of `receive` and ``send(_:)``.
final class TLSConnection {
    private let ssl: OpaquePointer
    private let networkIn: OpaquePointer
    private let networkOut: OpaquePointer
    private(set) var handshakeDone = false

    enum Received {
        case success([UInt8])
        case failure(String)
    }

    init?(context: TLSServerContext) {
        guard let ssl = SSL_new(context.ctx), let rbio = BIO_new(BIO_s_mem()), let wbio = BIO_new(BIO_s_mem()) else {
            return nil
        }
        self.ssl = ssl
        networkIn = rbio
        networkOut = wbio
        SSL_set_bio(ssl, rbio, wbio)  // the SSL owns both BIOs now
        SSL_set_accept_state(ssl)
    }

    deinit { SSL_free(ssl) }

    /// Feeds network bytes; returns the plaintext they completed, or why TLS failed.
    func receive(_ bytes: UnsafeRawBufferPointer) -> Received {
        if bytes.count > 0 { _ = BIO_write(networkIn, bytes.baseAddress, Int32(bytes.count)) }
        if !handshakeDone {
            let rc = SSL_do_handshake(ssl)
            if rc != 1 {
                let e = SSL_get_error(ssl, rc)
                if e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE { return .success([]) }
                let message = "handshake failed: \(opensslError())"
                return .failure(message)
            }
            handshakeDone = true
            var proto: UnsafePointer<UInt8>?
            var length: UInt32 = 0
            SSL_get0_alpn_selected(ssl, &proto, &length)
            // A client that offered no ALPN at all gets through here and is judged by its first bytes (an
            // HTTP/1.x request is answered 505); one that offered only others was refused in the handshake.
        }
        var plain: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let n = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
            if n > 0 {
                plain += buffer.prefix(Int(n))
                continue
            }
            let e = SSL_get_error(ssl, n)
            if e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_ZERO_RETURN { break }
            return .failure("read failed: \(opensslError())")
        }
        return .success(plain)
    }

    /// Encrypts `plain` for the network (take it with ``takeNetworkOutput()``).
    func send(_ plain: [UInt8]) {
        guard handshakeDone, !plain.isEmpty else { return }
        _ = plain.withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32($0.count)) }
    }

    /// The bytes TLS wants sent now.
    func takeNetworkOutput() -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let n = buffer.withUnsafeMutableBytes { BIO_read(networkOut, $0.baseAddress, Int32($0.count)) }
            if n <= 0 { break }
            out += buffer.prefix(Int(n))
        }
        return out
    }
}

/// OpenSSL's error queue as one line (and cleared).
func opensslError() -> String {
    var parts: [String] = []
    while true {
        let e = ERR_get_error()
        if e == 0 { break }
        var buf = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(e, &buf, buf.count)
        parts.append(String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
    return parts.isEmpty ? "no OpenSSL error" : parts.joined(separator: "; ")
}
