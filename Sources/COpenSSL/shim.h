#ifndef LIVEBUS_COPENSSL_SHIM_H
#define LIVEBUS_COPENSSL_SHIM_H
/* OpenSSL 3 (Debian libssl-dev): ES256 provider tokens (EVP, ECDSA_SIG), and TLS over memory BIOs. */
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

/* MBSTRING_ASC is a composite macro. */
static const int COpenSSL_MBSTRING_ASC = MBSTRING_ASC;

/* OPENSSL_free is a macro Swift cannot import. */
static inline void COpenSSL_free(void *p) { OPENSSL_free(p); }

/* EVP_EC_gen is a variadic macro: a new P-256 (prime256v1) key pair, or NULL. */
static inline EVP_PKEY *COpenSSL_generateP256(void) { return EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256"); }

/* A key of a type without parameters ("ED25519", "X25519"), or NULL. */
static inline EVP_PKEY *COpenSSL_generate(const char *type) { return EVP_PKEY_Q_keygen(NULL, NULL, type); }

/* BIO_get_mem_data is a macro: the bytes written to a memory BIO so far. */
static inline long COpenSSL_memData(BIO *bio, char **data) { return BIO_get_mem_data(bio, data); }

/* SSL_CTX_set_min_proto_version is a macro. */
static inline int COpenSSL_setMinTLS12(SSL_CTX *ctx) { return (int)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION); }

/* The ALPN selection callback's signature, with the "h2" choice made in C (SSL_select_next_proto). */
static inline int COpenSSL_selectH2(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
                                    unsigned int inlen, void *arg) {
    (void)ssl;
    (void)arg;
    static const unsigned char h2[] = {2, 'h', '2'};
    unsigned char *selected = NULL;
    if (SSL_select_next_proto(&selected, outlen, h2, sizeof h2, in, inlen) != OPENSSL_NPN_NEGOTIATED) {
        return SSL_TLSEXT_ERR_ALERT_FATAL;
    }
    *out = selected;
    return SSL_TLSEXT_ERR_OK;
}
static inline void COpenSSL_requireH2(SSL_CTX *ctx) { SSL_CTX_set_alpn_select_cb(ctx, COpenSSL_selectH2, NULL); }
#endif
