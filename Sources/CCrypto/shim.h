#ifndef BLEADVD_CCRYPTO_SHIM_H
#define BLEADVD_CCRYPTO_SHIM_H
/* OpenSSL's libcrypto: AES-CCM for encrypted BTHome, SHA-256 to name a key without showing it. */
#include <openssl/evp.h>
#endif
