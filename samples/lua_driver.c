/* lua_driver.c - runs the Lua script named by argv[1] with Debian's static Lua. */
#include <stdio.h>
#include <lauxlib.h>
#include <lualib.h>

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
