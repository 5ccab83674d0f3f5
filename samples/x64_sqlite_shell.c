/* A small SQL driver over SQLite's library (Debian's libsqlite3.a linked in): runs the SQL
 * read from standard input statement by statement on a database file named by argv[1] and
 * prints each row, as `sqlite3 FILE < script` does for simple scripts. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

static int row(void *unused, int n, char **values, char **names) {
    (void)unused;
    (void)names;
    for (int i = 0; i < n; i++) printf("%s%s", i ? "|" : "", values[i] ? values[i] : "NULL");
    printf("\n");
    return 0;
}

int main(int argc, char **argv) {
    size_t size = 0, cap = 1 << 16;
    char *sql = malloc(cap);
    size_t got;
    while ((got = fread(sql + size, 1, cap - size - 1, stdin)) > 0) {
        size += got;
        if (size + 1 == cap) sql = realloc(sql, cap *= 2);
    }
    sql[size] = 0;
    sqlite3 *db;
    if (sqlite3_open(argc > 1 ? argv[1] : ":memory:", &db) != SQLITE_OK) return 2;
    char *error = NULL;
    int rc = sqlite3_exec(db, sql, row, NULL, &error);
    if (rc != SQLITE_OK) fprintf(stderr, "error: %s\n", error);
    sqlite3_close(db);
    free(sql);
    return rc == SQLITE_OK ? 0 : 1;
}
