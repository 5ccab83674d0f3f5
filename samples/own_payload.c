/* A program that reads a payload appended to its own file, found from the file's end (as
 * PyInstaller's one-file programs find their archive): the last 16 bytes are a marker and
 * the 4 before them the payload's length (tests/test_own_payload.py appends them). */
#include <stdio.h>
#include <string.h>

int main(void)
{
    FILE *f = fopen("/proc/self/exe", "rb");
    if (!f)
        return 2;
    char marker[17] = {0};
    unsigned length = 0;
    if (fseek(f, -20, SEEK_END) != 0 || fread(&length, 4, 1, f) != 1 || fread(marker, 1, 16, f) != 16)
        return 3;
    char payload[256] = {0};
    if (length >= sizeof payload || fseek(f, -20 - (long)length, SEEK_END) != 0 || fread(payload, 1, length, f) != length)
        return 4;
    fclose(f);
    printf("marker %s, payload \"%s\"\n", marker, payload);
    return strcmp(marker, "APPENDED-PAYLOAD") ? 1 : 0;
}
