/* library_exit/ends.c - libends.so: ends the process with _exit, past the executable. */
#include <stdio.h>
#include <unistd.h>

void finish(int status)
{
    printf("the library ends the program with %d\n", status);
    fflush(stdout);
    _exit(status);
}
