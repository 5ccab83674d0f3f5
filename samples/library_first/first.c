/* libfirst.so: its constructor calls the program that loaded it (main.c). */
int program_callback(int x);

static int seen;

__attribute__((constructor)) static void first(void)
{
    seen = program_callback(20);
}

int lib_value(void)
{
    return seen;
}
