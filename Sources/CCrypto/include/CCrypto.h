#ifndef BLEADVD_CCRYPTO_H
#define BLEADVD_CCRYPTO_H
/* OpenSSL's libcrypto, loaded at its first use rather than at every start: AES-CCM for
   encrypted BTHome, SHA-256 to name a key without showing it, PBKDF2 for the key WPA derives
   from a Wi-Fi passphrase (Improv's join through wpa_supplicant). Only those need it, and
   linked it cost each process its loading and relocation
   (1.2 MB of bleadvd's resident memory, docs/BENCHMARKS.md). The declarations, types and
   constants are OpenSSL's own header's; the functions are called only through this table,
   so a direct call does not link. */
#include <openssl/evp.h>
#include <openssl/opensslv.h>

/* The functions bleadvd calls, each typed as the header declares it. */
struct bleadvd_libcrypto {
    __typeof__(EVP_Digest) *_Nonnull EVP_Digest;
    __typeof__(EVP_sha256) *_Nonnull EVP_sha256;
    __typeof__(EVP_aes_128_ccm) *_Nonnull EVP_aes_128_ccm;
    __typeof__(EVP_CIPHER_CTX_new) *_Nonnull EVP_CIPHER_CTX_new;
    __typeof__(EVP_CIPHER_CTX_free) *_Nonnull EVP_CIPHER_CTX_free;
    __typeof__(EVP_CIPHER_CTX_ctrl) *_Nonnull EVP_CIPHER_CTX_ctrl;
    __typeof__(EVP_EncryptInit_ex) *_Nonnull EVP_EncryptInit_ex;
    __typeof__(EVP_EncryptUpdate) *_Nonnull EVP_EncryptUpdate;
    __typeof__(EVP_EncryptFinal_ex) *_Nonnull EVP_EncryptFinal_ex;
    __typeof__(EVP_DecryptInit_ex) *_Nonnull EVP_DecryptInit_ex;
    __typeof__(EVP_DecryptUpdate) *_Nonnull EVP_DecryptUpdate;
    __typeof__(PKCS5_PBKDF2_HMAC_SHA1) *_Nonnull PKCS5_PBKDF2_HMAC_SHA1;
};

/* The library this header belongs to: "libcrypto.so.3" for OpenSSL 3. */
const char *_Nonnull bleadvd_libcrypto_soname(void);

/* Loads `soname` and looks up every function of the table: the table (allocated once per
   successful call, never freed), or NULL with why in `error` (at most `size` bytes, with its
   NUL). Call it once per process for a given name; it does not cache. */
const struct bleadvd_libcrypto *_Nullable bleadvd_libcrypto_load(const char *_Nonnull soname,
                                                                 char *_Nonnull error, size_t size);

#endif
