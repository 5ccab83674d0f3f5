/* The CPython interpreter's whole main (Programs/python.c's): linked here with a static
 * libpython3.11.a (Debian's or pyenv's build), so that the interpreter itself is in the
 * program and gets rewritten, not left in a shared library. */
#include <Python.h>

int main(int argc, char **argv) { return Py_BytesMain(argc, argv); }
