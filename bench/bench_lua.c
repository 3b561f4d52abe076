// SPDX-License-Identifier: MIT
/*
 * bench_lua.c - a Lua 5.4 interpreter for the tool benchmark's `lua`
 * workload (bench_tool.py): Debian's liblua5.4.a linked in whole, so
 * that the program holds the interpreter's own functions (about 700,
 * -O2, with their symbols), as an interpreter built from source does.
 * Runs the script given, nothing else.
 */
#include <stdio.h>

#include <lua5.4/lauxlib.h>
#include <lua5.4/lua.h>
#include <lua5.4/lualib.h>

int main(int argc, char **argv)
{
	lua_State *L;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: bench_lua SCRIPT.lua\n");
		return 2;
	}
	L = luaL_newstate();
	if (!L)
		return 2;
	luaL_openlibs(L);
	rc = luaL_dofile(L, argv[1]);
	if (rc)
		fprintf(stderr, "bench_lua: %s\n", lua_tostring(L, -1));
	lua_close(L);
	return rc ? 1 : 0;
}
