/*
 * lua_driver.c - runs the Lua script named by argv[1] with Debian's static Lua.
 *
 * Lua seeds its string hash with time(NULL); this time() replaces libc's in the
 * static link so that every run executes exactly the same instructions.
 */
#include <stdio.h>
#include <time.h>
#include <lauxlib.h>
#include <lualib.h>

time_t time(time_t *out)
{
    if (out != NULL)
        *out = 1700000000;
    return 1700000000;
}

int main(int argc, char **argv)
{
    lua_State *L = luaL_newstate();
    int status = 1;

    if (L == NULL || argc < 2) {
        fprintf(stderr, "usage: %s script.lua\n", argv[0]);
        return 2;
    }
    luaL_openlibs(L);
    if (luaL_dofile(L, argv[1]) != LUA_OK)
        fprintf(stderr, "lua: %s\n", lua_tostring(L, -1));
    else
        status = 0;
    lua_close(L);
    return status;
}
