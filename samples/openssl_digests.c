/* Digests and a block cipher of OpenSSL's libcrypto, linked in statically (x86-64:
 * tests/test_x86_64_copies.py, decision 0209): its SHA-1, SHA-2 and AES assembly reads its
 * constant tables from the text section. One line each: SHA-256("x"), SHA-512("abc"),
 * SHA-1("abc"), AES-128 of one block, SHA-256("hello") through EVP. */
#include <stdio.h>
#include <openssl/aes.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  /* AES_encrypt: the low-level call */

static void hex(const unsigned char *digest, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        printf("%02x", digest[i]);
    printf("\n");
}

int main(void)
{
    unsigned char out[EVP_MAX_MD_SIZE];
    SHA256((const unsigned char *)"x", 1, out);
    hex(out, 32);
    SHA512((const unsigned char *)"abc", 3, out);
    hex(out, 64);
    SHA1((const unsigned char *)"abc", 3, out);
    hex(out, 20);
    const unsigned char key[16] = "0123456789abcdef", block[16] = "plaintext block!";
    AES_KEY schedule;
    AES_set_encrypt_key(key, 128, &schedule);
    AES_encrypt(block, out, &schedule);
    hex(out, 16);
    unsigned n = 0;
    EVP_Digest("hello", 5, out, &n, EVP_sha256(), NULL);
    hex(out, n);
    return 0;
}
