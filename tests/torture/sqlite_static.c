/* SPDX-License-Identifier: MIT */
/*
 * sqlite_static.c - a statically linked SQL shell for the torture tier
 * (the freestanding agent's real program): SQLite (Debian's
 * libsqlite3.a) and glibc linked in, no interpreter.
 *   sqlite_static DB SCRIPT
 * runs every statement of SCRIPT against DB and prints each result row
 * ('|' between columns, as sqlite3's list mode), then the number of
 * statements; exits 1 at the first error (with its message).
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

static int row(void *arg, int n, char **vals, char **names)
{
	(void)arg;
	(void)names;
	for (int i = 0; i < n; i++)
		printf("%s%s", i ? "|" : "", vals[i] ? vals[i] : "");
	printf("\n");
	return 0;
}

int main(int argc, char **argv)
{
	sqlite3 *db;
	char *err = NULL, *sql;
	long len;
	FILE *f;

	if (argc != 3) {
		fprintf(stderr, "usage: sqlite_static DB SCRIPT\n");
		return 2;
	}
	f = fopen(argv[2], "rb");
	if (!f || fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		perror(argv[2]);
		return 2;
	}
	sql = malloc((size_t)len + 1);
	if (!sql || fread(sql, 1, (size_t)len, f) != (size_t)len) {
		perror(argv[2]);
		return 2;
	}
	sql[len] = 0;
	fclose(f);
	if (sqlite3_open(argv[1], &db) != SQLITE_OK) {
		fprintf(stderr, "%s: %s\n", argv[1], sqlite3_errmsg(db));
		return 1;
	}
	if (sqlite3_exec(db, sql, row, NULL, &err) != SQLITE_OK) {
		fprintf(stderr, "error: %s\n", err);
		return 1;
	}
	sqlite3_close(db);
	free(sql);
	printf("done\n");
	return 0;
}
