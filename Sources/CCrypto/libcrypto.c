#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include "CCrypto.h"

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

const char *bleadvd_libcrypto_soname(void) {
    return "libcrypto.so." STRINGIFY(OPENSSL_SHLIB_VERSION);
}

const struct bleadvd_libcrypto *bleadvd_libcrypto_load(const char *soname, char *error, size_t size) {
    /* RTLD_LOCAL: its symbols stay out of the process's global scope. */
    void *library = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        snprintf(error, size, "%s", dlerror());
        return NULL;
    }
    struct bleadvd_libcrypto *table = malloc(sizeof *table);
    if (table == NULL) {
        snprintf(error, size, "no memory for %s's function table", soname);
        dlclose(library);
        return NULL;
    }
#define LOOK_UP(name)                                                              \
    do {                                                                           \
        void *symbol = dlsym(library, #name);                                      \
        if (symbol == NULL) {                                                      \
            snprintf(error, size, "%s has no function %s", soname, #name);        \
            free(table);                                                           \
            dlclose(library);                                                      \
            return NULL;                                                           \
        }                                                                          \
        /* POSIX: a function's address from dlsym converts to its pointer type. */ \
        *(void **)&table->name = symbol;                                           \
    } while (0)
    LOOK_UP(EVP_Digest);
    LOOK_UP(EVP_sha256);
    LOOK_UP(EVP_aes_128_ccm);
    LOOK_UP(EVP_CIPHER_CTX_new);
    LOOK_UP(EVP_CIPHER_CTX_free);
    LOOK_UP(EVP_CIPHER_CTX_ctrl);
    LOOK_UP(EVP_EncryptInit_ex);
    LOOK_UP(EVP_EncryptUpdate);
    LOOK_UP(EVP_EncryptFinal_ex);
    LOOK_UP(EVP_DecryptInit_ex);
    LOOK_UP(EVP_DecryptUpdate);
    LOOK_UP(PKCS5_PBKDF2_HMAC_SHA1);
#undef LOOK_UP
    return table;
}
