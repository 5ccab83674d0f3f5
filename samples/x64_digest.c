/* Digests and a cipher from OpenSSL's libcrypto (Debian's libcrypto.a linked in: its
 * hand-written assembly, chosen at run time by the processor's features): SHA-256,
 * SHA-512 and MD5 of each file named, then AES-256-CTR over it and SHA-256 of that. */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>

static void digest(const char *name, const EVP_MD *md, const unsigned char *data, size_t size) {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_Digest(data, size, out, &n, md, NULL);
    printf("%s ", name);
    for (unsigned int i = 0; i < n; i++) printf("%02x", out[i]);
    printf("\n");
}

int main(int argc, char **argv) {
    for (int a = 1; a < argc; a++) {
        FILE *f = fopen(argv[a], "rb");
        if (!f) { perror(argv[a]); return 1; }
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        fseek(f, 0, SEEK_SET);
        unsigned char *data = malloc(size + 16), *enc = malloc(size + 16);
        if (fread(data, 1, size, f) != (size_t)size) return 1;
        fclose(f);
        digest("sha256", EVP_sha256(), data, size);
        digest("sha512", EVP_sha512(), data, size);
        digest("md5", EVP_md5(), data, size);
        unsigned char key[32] = {1, 2, 3}, iv[16] = {4, 5, 6};
        EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
        int n = 0, m = 0;
        EVP_EncryptInit_ex(ctx, EVP_aes_256_ctr(), NULL, key, iv);
        EVP_EncryptUpdate(ctx, enc, &n, data, (int)size);
        EVP_EncryptFinal_ex(ctx, enc + n, &m);
        EVP_CIPHER_CTX_free(ctx);
        digest("aes-256-ctr|sha256", EVP_sha256(), enc, n + m);
        free(data);
        free(enc);
    }
    return 0;
}
