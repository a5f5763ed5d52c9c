import COpenSSL
import Foundation
import LiveBusLoop

/// Why a certificate or key could not be made, read or written.
public struct CertificateError: Error, CustomStringConvertible {
    /// What went wrong, with the path when a file is involved.
    public var description: String
    /// The CA's directory or a file in it is refused as unsafe (another user's, open to others, a symbolic link):
    /// the README's exit 3, as another user's socket or data directory.
    public var unsafe: Bool
    init(_ description: String, unsafe: Bool = false) {
        self.description = description
        self.unsafe = unsafe
    }
}

/// An EC P-256 private key.
public final class PrivateKey {
    let pkey: OpaquePointer
    init(_ pkey: OpaquePointer) { self.pkey = pkey }
    deinit { EVP_PKEY_free(pkey) }

    /// A new P-256 key.
    static func generate() throws(CertificateError) -> PrivateKey {
        guard let k = COpenSSL_generateP256() else { throw CertificateError("P-256 key generation failed") }
        return PrivateKey(k)
    }

    /// PKCS#8 PEM.
    var pem: String {
        let bio = BIO_new(BIO_s_mem())!
        defer { BIO_free(bio) }
        _ = PEM_write_bio_PrivateKey(bio, pkey, nil, nil, 0, nil, nil)
        return memText(bio)
    }

    static func read(pem: String) -> PrivateKey? {
        let bytes = Array(pem.utf8)
        return bytes.withUnsafeBufferPointer { b in
            guard let bio = BIO_new_mem_buf(b.baseAddress, Int32(b.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil).map(PrivateKey.init)
        }
    }
}

/// An X.509 certificate.
public final class Certificate {
    let x509: OpaquePointer
    init(_ x509: OpaquePointer) { self.x509 = x509 }
    deinit { X509_free(x509) }

    /// PEM.
    public var pem: String {
        let bio = BIO_new(BIO_s_mem())!
        defer { BIO_free(bio) }
        _ = PEM_write_bio_X509(bio, x509)
        return memText(bio)
    }

    static func read(pem: String) -> Certificate? {
        let bytes = Array(pem.utf8)
        return bytes.withUnsafeBufferPointer { b in
            guard let bio = BIO_new_mem_buf(b.baseAddress, Int32(b.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_X509(bio, nil, nil, nil).map(Certificate.init)
        }
    }
}

/// The TLS listener's certificate and key.
public struct ServerIdentity {
    /// The server certificate (signed by LiveBus's CA).
    public var certificate: Certificate
    /// Its key.
    public var key: PrivateKey
}

/// The certificate authority LiveBus makes for its APNs endpoint, so a backend's APNs client can trust it with
/// one CA file: `DIR/apns-ca.pem` (the CA certificate: give it to the client) and `DIR/apns-ca-key.pem` (its key,
/// mode 0600). An existing pair in `DIR` is reused, so a client keeps trusting the endpoint across restarts; the
/// server certificate is made anew at each start, for `localhost`, `127.0.0.1`, `::1` and the names given,
/// valid 30 days.
///
/// Whoever holds the CA key can pose as the endpoint, so `DIR` must be the user's own directory that nobody else
/// can write, `apns-ca-key.pem` the user's own file of mode 0600 and `apns-ca.pem` the user's own file nobody else
/// can write, none of them a symbolic link (``OwnedPath``); otherwise nothing is reused or written (fresh-user
/// review F2: another user's CA in a mode-777 `--apns-ca-dir` signed the server certificate).
public enum LocalCertificateAuthority {
    /// The CA certificate's file name in the directory.
    public static let caFileName = "apns-ca.pem"
    /// The CA key's file name.
    public static let caKeyFileName = "apns-ca-key.pem"

    /// Loads or creates the CA in `directory` and issues a server certificate.
    /// - Parameters:
    ///   - directory: where the CA files live (created 0700 if missing).
    ///   - hostNames: extra DNS names or IP addresses for the server certificate.
    /// - Returns: the server identity and the CA certificate's path.
    /// - Throws: ``CertificateError`` naming the file or the OpenSSL step that failed; ``CertificateError/unsafe``
    ///   when the directory or a CA file is refused (``check(directory:)``).
    public static func prepare(directory: String, hostNames: [String] = []) throws(CertificateError) -> (
        identity: ServerIdentity, caPath: String
    ) {
        var st = stat()
        if lstat(directory, &st) != 0 {
            do {
                try FileManager.default.createDirectory(
                    atPath: directory,
                    withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o700]
                )
            } catch { throw CertificateError("cannot create \(directory): \(error.localizedDescription)") }
        }
        try check(directory: directory)
        let caPath = directory + "/" + caFileName
        let keyPath = directory + "/" + caKeyFileName
        var ca: (Certificate, PrivateKey)?
        if let certText = try? String(contentsOfFile: caPath, encoding: .utf8),
            let keyText = try? String(contentsOfFile: keyPath, encoding: .utf8)
        {
            guard let cert = Certificate.read(pem: certText), let key = PrivateKey.read(pem: keyText),
                X509_check_private_key(cert.x509, key.pkey) == 1
            else {
                throw CertificateError(
                    "\(caPath) and \(caKeyFileName) are not a matching PEM certificate and key; remove both to make a new CA"
                )
            }
            ca = (cert, key)
        }
        if ca == nil {
            let key = try PrivateKey.generate()
            let cert = try issue(
                subject: "LiveBus APNs test CA",
                key: key,
                issuer: nil,
                days: 3650,
                extensions: [
                    (NID_basic_constraints, "critical,CA:TRUE"), (NID_key_usage, "critical,keyCertSign,cRLSign"),
                    (NID_subject_key_identifier, "hash"),
                ]
            )
            // New files renamed into place: nothing planted at either name is opened.
            do {
                try OwnedPath.replace(keyPath, with: Array(key.pem.utf8), mode: 0o600)
                try OwnedPath.replace(caPath, with: Array(cert.pem.utf8), mode: 0o644)
            } catch {
                throw CertificateError(
                    error.problem == nil ? error.description : refusal(error.description),
                    unsafe: error.problem != nil
                )
            }
            ca = (cert, key)
        }
        let serverKey = try PrivateKey.generate()
        var names = ["DNS:localhost", "IP:127.0.0.1", "IP:::1"]
        for n in hostNames where !n.isEmpty {
            let entry = n.allSatisfy { $0.isNumber || $0 == "." || $0 == ":" } ? "IP:\(n)" : "DNS:\(n)"
            if !names.contains(entry) { names.append(entry) }
        }
        let serverCert = try issue(
            subject: "localhost",
            key: serverKey,
            issuer: ca!,
            days: 30,
            extensions: [
                (NID_basic_constraints, "critical,CA:FALSE"), (NID_key_usage, "critical,digitalSignature"),
                (NID_ext_key_usage, "serverAuth"), (NID_subject_alt_name, names.joined(separator: ",")),
            ]
        )
        return (ServerIdentity(certificate: serverCert, key: serverKey), caPath)
    }

    /// Refuses `directory` unless it is a directory of this user that nobody else can write, whose
    /// `apns-ca-key.pem` (when present) is a file of this user with mode 0600 and whose `apns-ca.pem` (when present)
    /// is a file of this user nobody else can write, none of them a symbolic link (``OwnedPath``).
    /// - Parameter directory: The CA's directory (`--apns-ca-dir`, else the data directory).
    /// - Throws: ``CertificateError`` (``CertificateError/unsafe``) naming the path, what is wrong and what to do.
    public static func check(directory: String) throws(CertificateError) {
        let checks: [(String, OwnedPath.Kind, UInt32)] = [
            (directory, .directory, 0o022), (directory + "/" + caKeyFileName, .file, 0o077),
            (directory + "/" + caFileName, .file, 0o022),
        ]
        for (path, kind, forbidden) in checks {
            guard let p = OwnedPath.problem(path, kind: kind, forbiddenModeBits: forbidden) else { continue }
            let what = OwnedPath.describe(p, path: path, kind: kind)
            if case .openToOthers = p {
                let fix = kind == .directory ? "chmod 700 \(path)" : "chmod \(forbidden == 0o077 ? 600 : 644) \(path)"
                throw CertificateError(
                    "\(what): another user could replace the CA the endpoint's certificate is signed with (or read its key); make it private (\(fix)) and start again, or choose another --apns-ca-dir",
                    unsafe: true
                )
            }
            throw CertificateError(refusal(what), unsafe: true)
        }
    }

    /// A refusal of a CA path, `what` being the problem in words (``OwnedPath/describe(_:path:kind:uid:)``).
    private static func refusal(_ what: String) -> String {
        "\(what): the endpoint's CA is only used from, and written to, a directory and files of your own; remove it, or choose another --apns-ca-dir (a new directory is created with mode 0700)"
    }

    private static func issue(
        subject: String,
        key: PrivateKey,
        issuer: (Certificate, PrivateKey)?,
        days: Int,
        extensions: [(Int32, String)]
    ) throws(CertificateError) -> Certificate {
        guard let x = X509_new() else { throw CertificateError("X509_new failed") }
        let cert = Certificate(x)
        X509_set_version(x, 2)
        var serial = [UInt8](repeating: 0, count: 16)
        _ = RAND_bytes(&serial, Int32(serial.count))
        serial[0] &= 0x7f
        if let bn = BN_bin2bn(serial, Int32(serial.count), nil) {
            BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x))
            BN_free(bn)
        }
        X509_gmtime_adj(X509_getm_notBefore(x), -3600)
        X509_gmtime_adj(X509_getm_notAfter(x), days * 86_400)
        X509_set_pubkey(x, key.pkey)
        let name = X509_get_subject_name(x)
        _ = X509_NAME_add_entry_by_txt(name, "CN", COpenSSL_MBSTRING_ASC, subject, -1, -1, 0)
        _ = X509_NAME_add_entry_by_txt(name, "O", COpenSSL_MBSTRING_ASC, "LiveBus", -1, -1, 0)
        let issuerCert = issuer?.0.x509 ?? x
        X509_set_issuer_name(x, X509_get_subject_name(issuerCert))
        var v3 = X509V3_CTX()
        X509V3_set_ctx(&v3, issuerCert, x, nil, nil, 0)
        for (nid, value) in extensions {
            guard let ext = X509V3_EXT_conf_nid(nil, &v3, nid, value) else {
                throw CertificateError("certificate extension \(value) refused: \(opensslError())")
            }
            X509_add_ext(x, ext, -1)
            X509_EXTENSION_free(ext)
        }
        if issuer != nil, let ext = X509V3_EXT_conf_nid(nil, &v3, NID_authority_key_identifier, "keyid:always") {
            X509_add_ext(x, ext, -1)
            X509_EXTENSION_free(ext)
        }
        guard X509_sign(x, (issuer?.1 ?? key).pkey, EVP_sha256()) > 0 else {
            throw CertificateError("signing the certificate failed: \(opensslError())")
        }
        return cert
    }
}

private func memText(_ bio: OpaquePointer) -> String {
    var p: UnsafeMutablePointer<CChar>?
    let n = COpenSSL_memData(bio, &p)
    return String(decoding: UnsafeRawBufferPointer(start: p, count: n), as: UTF8.self)
}
